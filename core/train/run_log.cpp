// RunLog: the record database's writer.
#include "train/run_log.h"

#include "record/folder_kind.h"

#include "gpt/gpt_model.h" // outlierChannelShare

#include "record/histogram_blob.h"
#include "record/run_export.h"
#include "record/run_record.h"
#include "record/run_record_schema.h"
#include "record/sqlite_db.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace plab {

namespace {

namespace fs = std::filesystem;

// The files of a run's record; one of them in a folder means an earlier run wrote there.
constexpr const char* kRecordFiles[] = {
    kRunRecordFile, "config.json",  "summary.json",   "metrics.csv",  "layers.csv",
    "blocks.csv",   "channels.csv", "histograms.csv", "events.jsonl", "run.sqlite-wal"};

// An earlier run killed in its first milliseconds (config.json, a run.sqlite holding no step
// and no event, perhaps a half-written summary.json.tmp, no exports) left nothing anyone can
// cite: its folder is taken as an empty one. Anything unreadable counts as a record.
bool recordedNothing(const std::string& dir) {
    for (const char* name : {"metrics.csv", "layers.csv", "histograms.csv", "events.jsonl"})
        if (fs::exists(fs::path(dir) / name))
            return false;
    const fs::path db = fs::path(dir) / kRunRecordFile;
    std::error_code ec;
    if (!fs::exists(db, ec) || fs::file_size(db, ec) == 0)
        return !ec;
    try {
        SqliteDb record(db.string(), SqliteDb::Mode::ReadWrite); // reads a killed run's WAL
        return record.queryInteger("SELECT count(*) FROM steps", 1) == 0 &&
               record.queryInteger("SELECT count(*) FROM events", 1) == 0;
    } catch (const std::exception&) {
        return false;
    }
}

void removeEarlierRun(const std::string& dir) {
    std::error_code ec;
    for (const char* name : kRecordFiles)
        fs::remove(fs::path(dir) / name, ec);
    for (const char* name :
         {"run.sqlite-shm", "run.sqlite-journal", "summary.json.tmp", "config.json.tmp",
          "commands.jsonl",  // an earlier emulated run's steering commands
          "checkpoint.bin"}) // a stopped run's (train/run_checkpoint.h)
        fs::remove(fs::path(dir) / name, ec);
}

} // namespace

bool removeRunWithoutSteps(const std::string& dir) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec) || runDirectoryLocked(dir))
        return false;
    const fs::path db = fs::path(dir) / kRunRecordFile;
    if (fs::exists(db, ec) && fs::file_size(db, ec) > 0) {
        try {
            SqliteDb record(db.string(), SqliteDb::Mode::ReadWrite);
            if (record.queryInteger("SELECT count(*) FROM steps", 1) != 0)
                return false;
        } catch (const std::exception&) {
            return false; // unreadable: leave it to someone who can tell
        }
    }
    removeEarlierRun(dir);
    fs::remove(fs::path(dir) / ".lock", ec); // no run holds it (checked above)
    return fs::remove(dir, ec);              // only when nothing else is in it
}

namespace {

// hint: what to do about it, in the words of the caller (the CLI's options, Python's arguments).
void refuseEarlierRun(const std::string& dir, const char* hint) {
    if (recordedNothing(dir)) {
        removeEarlierRun(dir);
        return;
    }
    for (const char* name : kRecordFiles)
        if (fs::exists(fs::path(dir) / name))
            throw RecordError(dir + ": holds an earlier run (" + name + "); " + hint);
}

// What a run leaves in its folder besides kRecordFiles: the database's side files, temporaries
// of files written atomically, the lock, an emulated run's commands, a stopped run's checkpoint.
constexpr const char* kRunSideFiles[] = {
    "run.sqlite-shm", "run.sqlite-journal", "summary.json.tmp", "config.json.tmp",
    ".lock",          "commands.jsonl",     "checkpoint.bin",   "checkpoint.bin.tmp"};

bool isRunOwnFile(const std::string& name) {
    const auto named = [&](const auto& names) {
        return std::any_of(std::begin(names), std::end(names),
                           [&](const char* n) { return name == n; });
    };
    constexpr std::string_view kExportTemporary = ".export-tmp";
    const std::string_view exported =
        name.size() > kExportTemporary.size() && name.ends_with(kExportTemporary)
            ? std::string_view(name).substr(0, name.size() - kExportTemporary.size())
            : std::string_view(name);
    return named(kRecordFiles) || named(kRunSideFiles) ||
           std::any_of(std::begin(kRunExportFiles), std::end(kRunExportFiles),
                       [&](const char* n) { return exported == n; });
}

// A new run goes into a new or empty folder, or one that holds only what a run leaves (an
// earlier run, which the caller's rules then refuse or replace): `train --out /` wrote ten files
// into / and reported its whole size as the record's.
void refuseFolderOfOtherFiles(const std::string& dir, const char* hint) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / kRunRecordFile, ec))
        return; // a run's folder, with whatever its user put beside the record (a report)
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!isRunOwnFile(name))
            throw RecordError(dir + ": is not empty and holds no run (it holds \"" + name +
                              "\", not a file a run writes); a run is recorded into a new or "
                              "empty folder: " +
                              hint);
    }
}

constexpr const char* kCliHint = "pass --overwrite to replace it, or choose another --out";
// A run the core did not train is recorded from Python (precision_lab.torch.watch, emulate).
constexpr const char* kPythonHint = "pass overwrite=True to replace it, or choose another run_dir";
constexpr const char* kCliFolderHint = "choose another --out";
constexpr const char* kPythonFolderHint = "choose another run_dir";

} // namespace

std::uint64_t runFilesBytes(const std::string& dir) {
    std::uint64_t bytes = 0;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code sizeError;
        if (isRunOwnFile(it->path().filename().string()) && it->is_regular_file(sizeError))
            if (const std::uintmax_t size = it->file_size(sizeError); !sizeError)
                bytes += size;
    }
    return bytes;
}

RunLog::RunLog(const std::string& dir, const TrainConfig& config,
               const std::vector<std::string>& stageNames, const RunLogOptions& options)
    // Before the lock, which would leave its file in a folder that is not a run's (not even
    // with overwrite).
    : m_dir((refuseOtherKind(dir, FolderKind::Run), dir)),
      m_lock(
          (refuseFolderOfOtherFiles(dir, kCliFolderHint), std::make_unique<RunDirectoryLock>(dir))),
      m_stageNames(stageNames) {
    if (!options.overwrite)
        refuseEarlierRun(dir, kCliHint);
    else // nothing of the earlier run may describe this one
        removeEarlierRun(dir);
    m_stageCount = static_cast<int>(stageNames.size());
    setRecipe(config);
    open(config.toJson(), nlohmann::json::object(), config.histogramsEvery,
         static_cast<std::uint64_t>(config.recordBudgetMb));
}

RunLog::RunLog(const std::string& dir, const ExternalRun& run,
               const std::vector<std::string>& stageNames, const RunLogOptions& options)
    : m_dir((refuseOtherKind(dir, FolderKind::Run), dir)),
      m_lock((refuseFolderOfOtherFiles(dir, kPythonFolderHint),
              std::make_unique<RunDirectoryLock>(dir))),
      m_stageNames(stageNames) {
    if (!options.overwrite)
        refuseEarlierRun(dir, kPythonHint);
    else
        removeEarlierRun(dir);
    m_stageCount = static_cast<int>(stageNames.size());
    open(run.config, run.meta, run.histogramsEvery, run.recordBudgetMb);
}

void RunLog::open(const nlohmann::json& config, const nlohmann::json& extraMeta,
                  int histogramsEvery, std::uint64_t recordBudgetMb) {
    writeFileAtomically(m_dir + "/config.json", config.dump(2) + "\n");
    m_db =
        std::make_unique<SqliteDb>(m_dir + "/" + kRunRecordFile, SqliteDb::Mode::ReadWriteCreate);
    // WAL: a commit appends to the log, readers (export, the GUI) see whole transactions while
    // the run goes. synchronous=NORMAL: a crash or kill loses nothing committed; a power cut may
    // lose the last steps, never the database's consistency.
    m_db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    m_db->exec(std::string("BEGIN;") + kRunRecordSchema);
    SqliteStatement meta = m_db->prepare("INSERT INTO meta(key, value) VALUES (?1, ?2)");
    meta.bind(1, std::string_view("schema_version"))
        .bind(2, std::to_string(kRunRecordSchemaVersion))
        .run();
    meta.bind(1, std::string_view("config")).bind(2, config.dump()).run();
    meta.bind(1, std::string_view("stage_names"))
        .bind(2, nlohmann::json(m_stageNames).dump())
        .run();
    for (const auto& [key, value] : extraMeta.items())
        meta.bind(1, std::string_view(key)).bind(2, value.dump()).run();
    m_db->exec("COMMIT;");
    prepareStatements(histogramsEvery, recordBudgetMb);
    RunSummary running; // no step yet: losses and test metrics unmeasured (null)
    running.stopReason = "running";
    running.wallSeconds = running.samplesPerSecond = 0.0;
    writeSummary(running);
    commit();
}

namespace {

// A stopped run's record that an earlier build wrote goes on under this build's schema: version
// 7 by renaming the three stats columns version 8 renamed (in one transaction with the version),
// earlier ones, which lack tables this build writes, are refused.
void upgradeToWrite(SqliteDb& db, const std::string& dir) {
    static_assert(kRunRecordSchemaVersion == 8, "upgradeToWrite knows the steps up to 8");
    const int version = checkRunRecord(db);
    if (version == kRunRecordSchemaVersion)
        return;
    if (version < 7)
        throw RecordError(dir + ": its record is of schema version " + std::to_string(version) +
                          ", written by an earlier build; this build goes on only from version 7 "
                          "(start the run again)");
    db.exec("BEGIN; ALTER TABLE stats RENAME COLUMN underflow TO flushed; ALTER TABLE stats "
            "RENAME COLUMN mx_blocks TO blocks; ALTER TABLE stats RENAME COLUMN "
            "mx_saturated_blocks TO saturated_blocks; UPDATE meta SET value = '8' WHERE key = "
            "'schema_version'; COMMIT;");
}

} // namespace

RunLog::RunLog(const std::string& dir, const TrainConfig& config,
               const std::vector<std::string>& stageNames, const RecordContinuation& at)
    : m_dir((refuseOtherKind(dir, FolderKind::Run), dir)),
      m_lock(std::make_unique<RunDirectoryLock>(dir)), m_stageNames(stageNames) {
    m_stageCount = static_cast<int>(stageNames.size());
    setRecipe(config);
    const fs::path db = fs::path(dir) / kRunRecordFile;
    if (!fs::exists(db))
        throw RecordError(dir + ": holds no run record (" + kRunRecordFile + ") to go on with");
    m_db = std::make_unique<SqliteDb>(db.string(), SqliteDb::Mode::ReadWrite);
    m_db->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    upgradeToWrite(*m_db, dir);
    const std::int64_t lastAttempt = m_db->queryInteger("SELECT max(attempt) FROM steps", 0);
    const std::int64_t lastStep = [&] {
        SqliteStatement last = m_db->prepare("SELECT max(step) FROM steps WHERE attempt = ?1");
        last.bind(1, at.attempt);
        return last.next() && !last.isNull(0) ? last.integer(0) : std::int64_t{0};
    }();
    if (lastAttempt != at.attempt || lastStep < at.step)
        throw RecordError(dir + ": its record holds steps up to " + std::to_string(lastStep) +
                          " of attempt " + std::to_string(lastAttempt) +
                          "; the checkpoint is of step " + std::to_string(at.step) +
                          " of attempt " + std::to_string(at.attempt));
    m_db->exec("BEGIN;");
    for (const char* table : {"steps", "stats", "histograms", "blocks", "channels", "diagnostics"})
        m_db->prepare(std::string("DELETE FROM ") + table + " WHERE attempt = ?1 AND step > ?2")
            .bind(1, at.attempt)
            .bind(2, at.step)
            .run();
    // Events carry no attempt: those past the step since the attempt's reset.
    m_db->prepare("DELETE FROM events WHERE step > ?1 AND seq > coalesce((SELECT max(seq) FROM "
                  "events WHERE type = 'reset'), 0)")
        .bind(1, at.step)
        .run();
    m_db->exec("COMMIT;");
    m_attempt = at.attempt;
    {
        SqliteStatement statsSteps =
            m_db->prepare("SELECT count(DISTINCT step) FROM stats WHERE attempt = ?1");
        statsSteps.bind(1, at.attempt);
        m_statsSteps = statsSteps.next() ? static_cast<int>(statsSteps.integer(0)) : 0;
    }
    // The exports of the stopped run describe fewer steps than the record will: the run's end
    // writes them again.
    std::error_code ec;
    for (const char* name : kRunExportFiles)
        fs::remove(fs::path(dir) / name, ec);
    prepareStatements(config.histogramsEvery, static_cast<std::uint64_t>(config.recordBudgetMb));
}

void RunLog::prepareStatements(int histogramsEvery, std::uint64_t recordBudgetMb) {
    m_insertStep = m_db->prepare(
        "INSERT INTO steps(step, epoch, loss, accuracy, scale, skipped, samples_per_s, lr, "
        "test_loss, test_accuracy, attempt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11)");
    m_insertStats = m_db->prepare(
        "INSERT INTO stats(step, stage, role, format, total, zero, flushed, subnormal, normal, "
        "overflow, nan, amax, updates, lost_updates, grad_scale, tensor_scale, blocks, "
        "saturated_blocks, attempt, err_count, signal_sq, error_sq, output_sq, scaling) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
        "?18, ?19, ?20, ?21, ?22, ?23, ?24)");
    m_insertChannels = m_db->prepare(
        "INSERT INTO channels(step, stage, channels, amax_max, amax_median, outlier_share, "
        "attempt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    m_insertBlocks = m_db->prepare(
        "INSERT INTO blocks(step, stage, role, blocks, zero_blocks, flushed_blocks, "
        "saturated_blocks, flushed_in_live, live_elements, scale_bins, range_bins, attempt, "
        "format) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    m_insertDiagnostics = m_db->prepare(
        "INSERT INTO diagnostics(step, stage, role, format, kurtosis, scale_log2_std, "
        "live_blocks, zero_scale_blocks, attempt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    m_insertHistogram =
        m_db->prepare("INSERT INTO histograms(step, stage, role, bins, attempt) VALUES (?1, ?2, "
                      "?3, ?4, ?5)");
    m_insertEvent =
        m_db->prepare("INSERT INTO events(step, type, message, change) VALUES (?1, ?2, ?3, ?4)");
    m_writeSummary = m_db->prepare("INSERT OR REPLACE INTO summary(id, json) VALUES (1, ?1)");
    m_histogramsEvery = std::max(1, histogramsEvery);
    m_budgetBytes = recordBudgetMb << 20;
}

RunLog::~RunLog() {
    if (m_inTransaction) {
        try { // whatever was logged since the last commit is not a whole step
            m_db->exec("ROLLBACK;");
        } catch (const RecordError&) {
        }
    }
}

void RunLog::begin() {
    if (m_closed) { // a Reset after the end: the run goes on, in write-ahead mode again
        m_db->exec("PRAGMA journal_mode=WAL;");
        m_closed = false;
    }
    if (!m_inTransaction) {
        m_db->exec("BEGIN;");
        m_inTransaction = true;
    }
}

void RunLog::commit() {
    if (!m_inTransaction)
        return;
    try {
        m_db->exec("COMMIT;");
        m_inTransaction = false;
    } catch (const RecordError&) {
        try {
            m_db->exec("ROLLBACK;");
        } catch (const RecordError&) {
        }
        m_inTransaction = false;
        throw;
    }
}

void RunLog::close() {
    if (m_closed)
        return;
    commit();
    // Folds the write-ahead log into the database and removes it: the finished record is one
    // file, readable on a read-only copy of the folder. A reader holding the record open past
    // the busy timeout only keeps the log beside it (the record is whole either way).
    try {
        m_db->exec("PRAGMA journal_mode=DELETE;");
    } catch (const RecordError&) {
    }
    m_closed = true;
    exportRunRecord(*m_db, m_dir);
}

std::uint64_t RunLog::recordBytes() const {
    return runRecordBytes(m_dir);
}

bool RunLog::withinBudget(std::int64_t step) {
    if (m_overBudget || m_budgetBytes == 0)
        return !m_overBudget;
    if (recordBytes() < m_budgetBytes)
        return true;
    m_overBudget = true;
    logEvent(step, "record_budget",
             "the run record reached its budget of " + std::to_string(m_budgetBytes >> 20) +
                 " MB (train.record_budget_mb): histograms are no longer recorded; steps, "
                 "counters and events still are");
    return false;
}

void RunLog::writeReplayConfig(const TrainConfig& config) {
    begin();
    m_db->prepare("INSERT OR REPLACE INTO meta(key, value) VALUES ('config', ?1)")
        .bind(1, config.toJson().dump())
        .run();
    writeFileAtomically(m_dir + "/config.json", config.toJson().dump(2) + "\n");
}

void RunLog::writeExternalConfig(const nlohmann::json& config, const std::string& metaKey,
                                 const nlohmann::json& meta) {
    begin();
    SqliteStatement write =
        m_db->prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)");
    write.bind(1, std::string_view("config")).bind(2, config.dump()).run();
    write.bind(1, std::string_view(metaKey)).bind(2, meta.dump()).run();
    writeFileAtomically(m_dir + "/config.json", config.dump(2) + "\n");
}

void RunLog::setRecipe(const TrainConfig& config) {
    m_roleFormats.clear();
    for (int s = 0; s < m_stageCount; ++s)
        for (TensorRole r : kAllRoles)
            m_roleFormats.push_back(config.recipe.stageConfig(s, m_stageNames, r).format.name);
}

void RunLog::logStep(const StepScalars& s) {
    begin();
    m_insertStep.bind(1, s.step)
        .bind(2, std::int64_t{s.epoch})
        .bind(3, s.loss)
        .bind(4, s.accuracy)
        .bind(5, s.scale)
        .bind(6, std::int64_t{s.skipped ? 1 : 0})
        .bind(7, s.samplesPerSecond)
        .bind(8, s.learningRate);
    if (s.evaluated) // else NULL: not evaluated after this step
        m_insertStep.bind(9, s.testLoss).bind(10, s.testAccuracy);
    m_insertStep.bind(11, m_attempt).run();
}

bool RunLog::startStatistics(std::int64_t step) {
    begin();
    // The first statistics step's histograms, then every histograms_every-th.
    const bool histogramStep = m_statsSteps++ % m_histogramsEvery == 0;
    return histogramStep && withinBudget(step);
}

void RunLog::logReportedStep(std::int64_t step, std::optional<double> loss,
                             std::optional<double> learningRate, double scale, bool skipped) {
    begin();
    m_insertStep.bind(1, step)
        .bind(5, scale)
        .bind(6, std::int64_t{skipped ? 1 : 0})
        .bind(11, m_attempt);
    if (loss)
        m_insertStep.bind(3, *loss);
    if (learningRate)
        m_insertStep.bind(8, *learningRate);
    m_insertStep.run();
}

void RunLog::logReportedMetrics(std::int64_t step, const std::map<std::string, double>& metrics) {
    if (metrics.empty())
        return;
    begin();
    // Prepared at the first use: only a PyTorch script's runs (new records) report metrics, and a
    // core run continued from an older build's record has no such table.
    if (!m_insertReported.prepared())
        m_insertReported = m_db->prepare(
            "INSERT INTO reported(step, name, value, attempt) VALUES (?1, ?2, ?3, ?4)");
    for (const auto& [name, value] : metrics)
        m_insertReported.bind(1, step).bind(2, name).bind(3, value).bind(4, m_attempt).run();
}

void RunLog::logStats(std::int64_t step, const std::vector<StageStats>& stages) {
    const bool withHistograms = startStatistics(step);
    for (std::size_t s = 0; s < stages.size(); ++s) {
        if (const std::vector<float>& amax = stages[s].channelAmax; !amax.empty()) {
            std::vector<float> sorted = amax;
            std::sort(sorted.begin(), sorted.end());
            m_insertChannels.bind(1, step)
                .bind(2, static_cast<std::int64_t>(s))
                .bind(3, static_cast<std::int64_t>(sorted.size()))
                .bind(4, static_cast<double>(sorted.back()))
                .bind(5, static_cast<double>(sorted[sorted.size() / 2]))
                .bind(6, transformer::outlierChannelShare(amax))
                .bind(7, m_attempt)
                .run();
        }
        for (TensorRole role : kAllRoles) {
            const auto r = static_cast<std::size_t>(role);
            const bool master = role == TensorRole::MasterWeights;
            logRoleStats(step, s, role,
                         {m_roleFormats[s * kRoleCount + r], stages[s].roles[r],
                          stages[s].blocks[r], stages[s].gradientScale, stages[s].tensorScale[r],
                          master ? stages[s].updates : 0, master ? stages[s].lostUpdates : 0,
                          stages[s].scaling[r]},
                         withHistograms);
            if (withHistograms)
                logHistogram(step, s, role, stages[s].roles[r].histogram);
        }
    }
}

void RunLog::logRoleStats(std::int64_t step, std::size_t stage, TensorRole role, const RoleRow& row,
                          bool withHistograms) {
    begin();
    const QuantStats& q = row.stats;
    const std::string_view roleName = toString(role);
    m_insertStats.bind(1, step)
        .bind(2, static_cast<std::int64_t>(stage))
        .bind(3, roleName)
        .bind(4, row.format)
        .bind(5, static_cast<std::int64_t>(q.total()));
    for (std::size_t c = 0; c < kQuantClassCount; ++c)
        m_insertStats.bind(6 + static_cast<int>(c), static_cast<std::int64_t>(q.counts[c]));
    m_insertStats.bind(12, static_cast<double>(q.amax))
        .bind(13, static_cast<std::int64_t>(row.updates))
        .bind(14, static_cast<std::int64_t>(row.lostUpdates))
        .bind(15, row.gradientScale)
        .bind(16, row.tensorScale)
        .bind(17, static_cast<std::int64_t>(row.blocks.blocks))
        .bind(18, static_cast<std::int64_t>(row.blocks.saturatedBlocks))
        .bind(19, m_attempt);
    if (q.error.measured()) // else NULL: not measured
        m_insertStats.bind(20, static_cast<std::int64_t>(q.error.count))
            .bind(21, q.error.signalSq)
            .bind(22, q.error.errorSq)
            .bind(23, q.error.outputSq);
    if (!row.scaling.empty())
        m_insertStats.bind(24, row.scaling);
    m_insertStats.run();
    const BlockStats& b = row.blocks;
    if (b.empty())
        return;
    m_insertBlocks.bind(1, step)
        .bind(2, static_cast<std::int64_t>(stage))
        .bind(3, roleName)
        .bind(4, static_cast<std::int64_t>(b.blocks))
        .bind(5, static_cast<std::int64_t>(b.zeroBlocks))
        .bind(6, static_cast<std::int64_t>(b.flushedBlocks))
        .bind(7, static_cast<std::int64_t>(b.saturatedBlocks))
        .bind(8, static_cast<std::int64_t>(b.flushedInLiveBlocks))
        .bind(9, static_cast<std::int64_t>(b.liveElements))
        .bind(12, m_attempt)
        .bind(13, row.format);
    if (withHistograms)
        m_insertBlocks.bindBlob(10, encodeBins(b.scaleHistogram))
            .bindBlob(11, encodeBins(b.rangeHistogram));
    m_insertBlocks.run();
}

void RunLog::logDiagnostics(std::int64_t step, std::size_t stage, TensorRole role,
                            std::string_view format, const TensorDiagnostics* tensor,
                            const BlockScaleSpread* blocks) {
    begin();
    m_insertDiagnostics.bind(1, step)
        .bind(2, static_cast<std::int64_t>(stage))
        .bind(3, toString(role))
        .bind(4, format.empty() ? std::string_view("") : format) // '' (not NULL): no format
        .bind(9, m_attempt);
    if (tensor != nullptr && !std::isnan(tensor->kurtosis)) // else NULL: not measured
        m_insertDiagnostics.bind(5, tensor->kurtosis);
    if (blocks != nullptr) {
        if (!std::isnan(blocks->log2StdDev))
            m_insertDiagnostics.bind(6, blocks->log2StdDev);
        m_insertDiagnostics.bind(7, static_cast<std::int64_t>(blocks->liveBlocks))
            .bind(8, static_cast<std::int64_t>(blocks->zeroScaleBlocks));
    }
    m_insertDiagnostics.run();
}

void RunLog::logHistogram(std::int64_t step, std::size_t stage, TensorRole role,
                          const std::array<std::uint64_t, kHistBinCount>& histogram) {
    begin();
    m_insertHistogram.bind(1, step)
        .bind(2, static_cast<std::int64_t>(stage))
        .bind(3, toString(role))
        .bindBlob(4, encodeHistogram(histogram))
        .bind(5, m_attempt)
        .run();
}

void RunLog::logEvent(std::int64_t step, const std::string& type, const std::string& message,
                      const nlohmann::json& change) {
    begin();
    m_insertEvent.bind(1, step).bind(2, std::string_view(type)).bind(3, std::string_view(message));
    if (!change.is_null())
        m_insertEvent.bind(4, change.dump());
    m_insertEvent.run();
}

void RunLog::writeSummary(const RunSummary& s) {
    const std::string text = toJson(s).dump(2) + "\n";
    // The file first: when the disk is full, the small file still has the better chance, and a
    // failed run's summary must say why.
    writeFileAtomically(m_dir + "/summary.json", text);
    begin();
    m_writeSummary.bind(1, std::string_view(text)).run();
}

} // namespace plab
