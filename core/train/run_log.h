// RunLog: writes a run's record. The record is one SQLite database, DIR/run.sqlite
// (record/run_record_schema.h), written one transaction per step; config.json (replays the run)
// and summary.json (refreshed while the run goes, replaced only by a complete new one) sit next
// to it, and at the end of the run the CSV/JSONL files (metrics.csv, layers.csv, histograms.csv,
// events.jsonl) are exported from it (`precision-lab-cli export DIR` does the same for a run that
// was killed). The directory is locked while a run writes it (a second run is refused, naming the
// holder), and an earlier run's folder is only reused when asked (overwrite). Every failure (a
// full disk, the folder removed) throws RecordError; the database keeps the last whole step.
#pragma once

#include "record/record_file.h"
#include "record/record_number.h"
#include "record/run_summary.h"
#include "record/sqlite_db.h"
#include "stats/tensor_diagnostics.h"
#include "stats/training_snapshot.h"
#include "train/train_config.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace plab {

// A run folder whose run took no step (an Apply right after another, a run that could not
// start): its record files and then the folder itself are removed, so that quick restarts leave
// no folders holding nothing to cite. Not while a run writes it (its lock is held), and nothing
// but the record's own files is touched. True when the folder is gone.
bool removeRunWithoutSteps(const std::string& dir);

// The bytes of the run's own files in dir (its record, exports, checkpoint, side files), not of
// anything else the folder holds: what "run record: 1.2 MB" reports.
std::uint64_t runFilesBytes(const std::string& dir);

struct RunLogOptions {
    bool overwrite = false; // replace an earlier run's record in the same folder
    // Go on from the folder's checkpoint (train/run_checkpoint.h) when it holds one of this
    // run; without one (or one of another run), start afresh when overwrite is on, else refuse
    // (TrainingSession).
    bool resume = false;
};

// Where a resumed run's record goes on: the attempt (a Reset's count) and the step its
// checkpoint was taken at.
struct RecordContinuation {
    std::int64_t attempt = 0;
    std::int64_t step = 0;
};

// A run the core did not train (a watched PyTorch run, precision_lab.torch.watch): what describes
// it in config.json and the record's meta (it does not replay: the user's script is the run), and
// how its record is kept.
struct ExternalRun {
    nlohmann::json config;              // config.json and meta 'config'
    nlohmann::json meta;                // further meta rows, key -> JSON value (e.g. "source")
    int histogramsEvery = 1;            // statistics steps between recorded histograms
    std::uint64_t recordBudgetMb = 200; // histograms stop past it (0: no budget)
};

class RunLog {
public:
    // Creates and locks the directory and its record. Throws RecordError naming the path when it
    // cannot be created, is locked by another run, or holds an earlier run and overwrite is off.
    RunLog(const std::string& dir, const TrainConfig& config,
           const std::vector<std::string>& stageNames, const RunLogOptions& options = {});
    // Reopens the record of a stopped run to go on at `at`: rows of that attempt past at.step
    // (written after the checkpoint by a run killed later) are removed, so that the record holds
    // each step once. Throws RecordError naming the folder when its record does not reach the
    // checkpoint's step or holds a later attempt.
    RunLog(const std::string& dir, const TrainConfig& config,
           const std::vector<std::string>& stageNames, const RecordContinuation& at);
    // The same for a run the core did not train: its rows name their formats (logRoleStats).
    RunLog(const std::string& dir, const ExternalRun& run,
           const std::vector<std::string>& stageNames, const RunLogOptions& options = {});
    ~RunLog();

    const std::string& dir() const { return m_dir; }
    // These add to the current transaction (one is opened as needed); commit() ends it.
    void logStep(const StepScalars& s);
    // A step of a run the core did not train: what its script reported (the loss and learning
    // rate when given, NULL when not: "not reported", never a NaN loss), the loss scale, and
    // whether its update was skipped (an emulated run's loss scaler found an overflow).
    void logReportedStep(std::int64_t step, std::optional<double> loss,
                         std::optional<double> learningRate, double scale, bool skipped = false);
    // The script's own metrics of that step (step(metrics={...})), a row each.
    void logReportedMetrics(std::int64_t step, const std::map<std::string, double>& metrics);
    void logStats(std::int64_t step, const std::vector<StageStats>& stages);
    // logStats in parts, for rows that name their own format (a watched run judges one tensor in
    // several): startStatistics once per statistics step says whether its histograms are to be
    // recorded (the first statistics step's, then every histogramsEvery-th, within the budget);
    // then a row per stage, role and format, its blocks row when blocks is not empty (with their
    // histograms when withHistograms), and the histogram of each stage and role's inputs.
    bool startStatistics(std::int64_t step);
    struct RoleRow {
        std::string_view format;
        const QuantStats& stats;
        const BlockStats& blocks;
        double gradientScale = 1.0;
        double tensorScale = 1.0;
        std::uint64_t updates = 0, lostUpdates = 0; // master weights' rows only
        std::string_view scaling = {}; // the policy that cast it; empty: NULL (a judged format)
    };
    void logRoleStats(std::int64_t step, std::size_t stage, TensorRole role, const RoleRow& row,
                      bool withHistograms);
    // A captured tensor's kurtosis (format empty), or a block format's scale spread
    // (stats/tensor_diagnostics.h); either may be absent.
    void logDiagnostics(std::int64_t step, std::size_t stage, TensorRole role,
                        std::string_view format, const TensorDiagnostics* tensor,
                        const BlockScaleSpread* blocks);
    void logHistogram(std::int64_t step, std::size_t stage, TensorRole role,
                      const std::array<std::uint64_t, kHistBinCount>& histogram);
    // change: the config patch an edit applied (JSON object), or null for other events.
    void logEvent(std::int64_t step, const std::string& type, const std::string& message,
                  const nlohmann::json& change = nullptr);
    // Also replaces summary.json at once (temp file, sync, rename).
    void writeSummary(const RunSummary& summary);
    // config.json (and the record's copy) replaced by what replays the run now: its start plus
    // the timeline of edits (TrainingSession::replayConfig).
    void writeReplayConfig(const TrainConfig& config);
    // The same for a run the core did not train (ExternalRun): config.json, the record's copy
    // and its description under meta metaKey (an emulated run steered from the app).
    void writeExternalConfig(const nlohmann::json& config, const std::string& metaKey,
                             const nlohmann::json& meta);
    // The recipe changed mid-run: later statistics rows name the new formats.
    void setRecipe(const TrainConfig& config);
    // A reset: the steps logged from now on start again at 1 (their rows' `attempt` goes up).
    void startNewAttempt() { ++m_attempt; }
    std::int64_t attempt() const { return m_attempt; }
    // Makes everything logged so far durable as one whole; on failure nothing of it is kept.
    void commit();
    // The run is over: commit, fold the write-ahead log into run.sqlite (one self-contained
    // file) and export the CSV/JSONL files.
    void close();
    // Bytes the record takes on disk now (database and its write-ahead log).
    std::uint64_t recordBytes() const;

private:
    void open(const nlohmann::json& config, const nlohmann::json& meta, int histogramsEvery,
              std::uint64_t recordBudgetMb);
    void prepareStatements(int histogramsEvery, std::uint64_t recordBudgetMb);
    void begin();
    bool withinBudget(std::int64_t step);
    std::string m_dir;
    std::unique_ptr<RunDirectoryLock> m_lock;
    std::unique_ptr<SqliteDb> m_db;
    SqliteStatement m_insertStep, m_insertStats, m_insertBlocks, m_insertChannels,
        m_insertDiagnostics, m_insertHistogram, m_insertEvent, m_writeSummary, m_insertReported;
    bool m_inTransaction = false, m_closed = false;
    int m_stageCount = 0;
    std::vector<std::string> m_stageNames;
    std::vector<std::string> m_roleFormats; // per stage * role
    int m_histogramsEvery = 1, m_statsSteps = 0;
    std::int64_t m_attempt = 0;
    std::uint64_t m_budgetBytes = 0;
    bool m_overBudget = false;
};

} // namespace plab
