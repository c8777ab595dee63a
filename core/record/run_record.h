// RunRecord: a run's record read back (DIR/run.sqlite), for everything that looks at a run after
// or while it is written: the GUI's Open run, `compare`, reports. With it, the run analysis every
// one of them shows: the loss curve, the flushed share per role (QuantStats::flushedShare, the
// one definition), the flushed share of activation gradients per step, lost updates.
#pragma once

#include "record/run_summary.h"
#include "record/sqlite_db.h"
#include "stats/training_snapshot.h"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace plab {

struct RecordedEvent {
    std::int64_t step = 0;
    std::string type, message;
    nlohmann::json change; // the config patch of an edit, else null
};

// One statistics step of the record: per stage, the counters (histograms when that step's were
// recorded: every histograms_every-th statistics step).
struct RecordedStatistics {
    std::int64_t step = 0;
    std::vector<StageStats> stages;
    bool hasHistograms = false;
    // Per stage and role, the format the row names (empty where no row was recorded).
    std::vector<std::array<std::string, kRoleCount>> formats;
};

// One row of the stats table: a stage's role in one format at one statistics step, counters only
// (a StageStats holds every role's histograms: reading a long run's statistics() that way takes
// gigabytes).
struct StatsRow {
    std::int64_t seq = 0; // the row's place in the record: read later rows with afterSeq
    std::int64_t step = 0;
    std::size_t stage = 0;
    TensorRole role = TensorRole::Weights;
    std::string format;
    ClassCounts counts{};
    float amax = 0.0f;
    double gradientScale = 1.0, tensorScale = 1.0;
    std::uint64_t blocks = 0, saturatedBlocks = 0, updates = 0, lostUpdates = 0;
    QuantError error;    // not measured: count 0
    std::string scaling; // the per-tensor scaling that cast it; empty: not recorded
    double flushedShare() const { return plab::flushedShare(counts); }
};

// One row of the blocks table, counts only (no scale or range histograms).
struct BlockRow {
    std::int64_t step = 0;
    std::size_t stage = 0;
    TensorRole role = TensorRole::Weights;
    std::string format; // empty in records before schema 4 (one block format per role)
    std::uint64_t blocks = 0, zeroBlocks = 0, flushedBlocks = 0, saturatedBlocks = 0;
    double flushedBlockShare() const; // of the blocks with a nonzero input, as BlockStats's
};

// One row of the diagnostics table (stats/tensor_diagnostics.h); NaN where not measured.
struct DiagnosticsRow {
    std::int64_t step = 0;
    std::size_t stage = 0;
    TensorRole role = TensorRole::Weights;
    std::string format; // empty: the tensor's own (kurtosis); a block format: its scales
    double kurtosis = 0.0, scaleLog2StdDev = 0.0;
    std::uint64_t liveBlocks = 0, zeroScaleBlocks = 0;
};

// One value a PyTorch script reported of its own (step(metrics={...})); NaN: not a number.
struct ReportedValue {
    std::int64_t step = 0;
    std::string name;
    double value = 0.0;
};

class RunRecord {
public:
    // Throws RecordError naming the file when DIR holds no readable run record.
    explicit RunRecord(const std::string& runDir);

    const std::string& dir() const { return m_dir; }
    nlohmann::json config() const; // what replays the run (its config.json)
    const std::vector<std::string>& stageNames() const { return m_stageNames; }
    // A meta row's JSON value (rows other writers add, e.g. a watched run's "source" and
    // "watch"), or null when the record has none.
    nlohmann::json meta(const std::string& key) const;
    // Whether another process writes the record now (it holds the folder's lock).
    bool isBeingWritten() const;
    // Changes whenever another connection commits (SQLite's data_version): what a reader that
    // follows a live run polls, for the price of one PRAGMA.
    std::int64_t dataVersion() const;
    // Which formats the statistics name. A trained run casts each role in one format (all its
    // rows are read together); a watched PyTorch run judges every tensor in each of `formats`,
    // and its statistics are read one format at a time: pass the format to statistics() and
    // histogramsAt() (empty: the first of formats()).
    bool judgesSeveralFormats() const { return !m_judgedFormats.empty(); }
    const std::vector<std::string>& judgedFormats() const { return m_judgedFormats; }
    // The steps since the run's last reset (a reset starts the step count again), in order.
    std::vector<StepScalars> steps() const;
    // The newest statistics step whose histograms were recorded, or none.
    std::optional<RecordedStatistics> latestHistograms() const;
    // The steps whose histograms were recorded (since the last reset), in order.
    std::vector<std::int64_t> histogramSteps() const;
    // That step's statistics with its histograms, or none when they were not recorded.
    std::optional<RecordedStatistics> histogramsAt(std::int64_t step,
                                                   const std::string& format = {}) const;
    // Every statistics step since the last reset, counters only (no histograms).
    std::vector<RecordedStatistics> statistics(const std::string& format = {}) const;
    // The same rows flat, since the last reset: of `format` as statistics() reads them, of one
    // role when given, after the row afterSeq (0: all), in the order written.
    std::vector<StatsRow> statsRows(const std::string& format = {},
                                    std::optional<TensorRole> role = std::nullopt,
                                    std::int64_t afterSeq = 0) const;
    // The block rows since the last reset (every block format; one when given), in the order
    // written.
    std::vector<BlockRow> blockRows(const std::string& format = {}) const;
    // The diagnostics rows since the last reset, in the order written (none before schema 5 and
    // for runs whose tensors the core does not capture whole: trained and emulated runs).
    std::vector<DiagnosticsRow> diagnosticsRows() const;
    // The script's own metrics, by step (empty before schema 7 and for the core's runs).
    std::vector<ReportedValue> reportedValues() const;
    // One tensor's rows at one statistics step, in the order written: a watched run's row for
    // every format it judges the tensor in (the format what-if of a watched run), a trained
    // run's one row. Empty when that step recorded no such tensor.
    std::vector<StatsRow> tensorRows(std::int64_t step, std::size_t stage, TensorRole role) const;
    // The roles the record holds statistics of, in TensorRole order (a watched run: the four a
    // product reads and writes, no master weights or optimiser state); empty before its first
    // statistics step. Read at that step (by the step index, no scan).
    std::vector<TensorRole> recordedRoles() const;
    std::vector<RecordedEvent> events() const;
    // The summary (refreshed every 2 s while the run goes; final once it has ended). A run that
    // says "running" while no process holds its folder says instead that it ended without its
    // summary (killed or crashed).
    RunSummary summary() const;

private:
    std::int64_t lastAttempt() const; // the resets the run went through (schema: attempt)
    // The format whose rows to read: none for a trained run, else `format` or the first.
    std::optional<std::string> rowsOf(const std::string& format) const;
    std::vector<std::string> m_judgedFormats;
    std::string m_dir;
    std::unique_ptr<SqliteDb> m_db;
    int m_version = 0; // the record's schema version
    std::vector<std::string> m_stageNames;
};

// Bytes a run's record takes on disk now: the database and its write-ahead log.
std::uint64_t runRecordBytes(const std::string& runDir);

struct RunAnalysis {
    std::vector<std::pair<double, double>> loss;            // (step, training loss), finite
    std::map<std::string, double> meanFlushed;              // role -> mean over steps, stages
    std::vector<std::pair<double, double>> flushedActGrads; // (step, mean over stages)
    double lostUpdates = 0.0; // of all weight updates, the share that left the weight unchanged
};
RunAnalysis analyseRun(const RunRecord& record);

} // namespace plab
