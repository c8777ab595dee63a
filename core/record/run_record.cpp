// RunRecord: queries over the record database.
#include "record/run_record.h"

#include "record/histogram_blob.h"
#include "record/record_file.h"
#include "record/run_export.h"
#include "record/run_record_schema.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace plab {

namespace {

std::unique_ptr<SqliteDb> openReadOnly(const std::string& path) {
    try {
        auto db = std::make_unique<SqliteDb>(path, SqliteDb::Mode::ReadOnly);
        db->queryInteger("SELECT count(*) FROM meta"); // opening is lazy: read once to know
        return db;
    } catch (const RecordError&) {
        // A write-ahead log without its index on read-only storage: the checkpointed part.
        return std::make_unique<SqliteDb>(path, SqliteDb::Mode::Immutable);
    }
}

} // namespace

RunRecord::RunRecord(const std::string& runDir) : m_dir(runDir) {
    const std::string path = runDir + "/" + kRunRecordFile;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw RecordError(path + (unreadable(ec)
                                      ? ": cannot be read (" + ec.message() + ")"
                                      : ": no run record here (a run folder holds run.sqlite)"));
    // Read-write (nothing is written): SQLite needs it to read a live or killed run's log. A
    // record on read-only storage (a cluster's results) is opened read-only: SQLite reads a
    // write-ahead log there when its index file (-shm) came along; without it, the database as
    // it was last checkpointed (a cleanly ended run has no log: all of it).
    if (::access(path.c_str(), W_OK) == 0 && ::access(runDir.c_str(), W_OK) == 0)
        m_db = std::make_unique<SqliteDb>(path, SqliteDb::Mode::ReadWrite);
    else
        m_db = openReadOnly(path);
    m_version = checkRunRecord(*m_db);
    SqliteStatement s = m_db->prepare("SELECT value FROM meta WHERE key = 'stage_names'");
    if (s.next()) {
        const auto j = nlohmann::json::parse(s.text(0), nullptr, false);
        if (j.is_array())
            for (const auto& name : j)
                m_stageNames.push_back(name.is_string() ? name.get<std::string>() : "?");
    }
    const nlohmann::json watch = meta("watch");
    if (watch.is_object() && watch.contains("formats") && watch["formats"].is_array())
        for (const auto& f : watch["formats"])
            if (f.is_string())
                m_judgedFormats.push_back(f.get<std::string>());
}

nlohmann::json RunRecord::meta(const std::string& key) const {
    SqliteStatement s = m_db->prepare("SELECT value FROM meta WHERE key = ?1");
    s.bind(1, std::string_view(key));
    if (!s.next())
        return nullptr;
    auto j = nlohmann::json::parse(s.text(0), nullptr, false);
    return j.is_discarded() ? nlohmann::json(s.text(0)) : j;
}

bool RunRecord::isBeingWritten() const {
    return runDirectoryLocked(m_dir);
}

std::int64_t RunRecord::dataVersion() const {
    return m_db->queryInteger("PRAGMA data_version");
}

std::optional<std::string> RunRecord::rowsOf(const std::string& format) const {
    if (m_judgedFormats.empty())
        return std::nullopt;
    return format.empty() ? m_judgedFormats.front() : format;
}

nlohmann::json RunRecord::config() const {
    SqliteStatement s = m_db->prepare("SELECT value FROM meta WHERE key = 'config'");
    if (!s.next())
        throw RecordError(m_db->path() + ": the record holds no config");
    auto j = nlohmann::json::parse(s.text(0), nullptr, false);
    if (j.is_discarded())
        throw RecordError(m_db->path() + ": the record's config is not JSON");
    return j;
}

std::int64_t RunRecord::lastAttempt() const {
    return m_db->queryInteger("SELECT max(attempt) FROM steps", 0);
}

std::vector<StepScalars> RunRecord::steps() const {
    SqliteStatement s = m_db->prepare(
        "SELECT step, epoch, loss, accuracy, scale, skipped, samples_per_s, lr, test_loss, "
        "test_accuracy FROM steps WHERE attempt = ?1 ORDER BY seq");
    s.bind(1, lastAttempt());
    std::vector<StepScalars> out;
    while (s.next()) {
        StepScalars r;
        r.step = s.integer(0);
        r.epoch = static_cast<int>(s.integer(1));
        r.loss = s.real(2);
        r.accuracy = s.real(3);
        r.scale = s.real(4);
        r.skipped = s.integer(5) != 0;
        r.samplesPerSecond = s.real(6);
        r.learningRate = s.real(7);
        r.evaluated = !s.isNull(8);
        if (r.evaluated) {
            r.testLoss = s.real(8);
            r.testAccuracy = s.real(9);
        }
        out.push_back(r);
    }
    return out;
}

namespace {

// Rows of the stats table, grouped into statistics steps (rows of one step are consecutive).
// With the block counters (and, when withHistograms, their histograms) from version 2 on.
// format: only the rows of that format (a watched run's), else all.
std::vector<RecordedStatistics> readStatistics(SqliteDb& db, int version, std::int64_t attempt,
                                               std::size_t stageCount,
                                               std::optional<std::int64_t> onlyStep,
                                               bool withHistograms,
                                               const std::optional<std::string>& format) {
    SqliteStatement s = db.prepare(
        std::string("SELECT step, stage, role, ") + statsClassColumns(version) +
        ", amax, updates, lost_updates, grad_scale, tensor_scale, " + statsBlockColumns(version) +
        ", " +
        (version >= 2 ? "err_count, signal_sq, error_sq, output_sq" : "NULL, NULL, NULL, NULL") +
        ", format FROM stats WHERE attempt = ?1 AND (?2 IS NULL OR step = ?2) AND (?3 IS NULL OR "
        "format = ?3) ORDER BY seq");
    s.bind(1, attempt);
    if (onlyStep)
        s.bind(2, *onlyStep);
    if (format)
        s.bind(3, std::string_view(*format));
    std::vector<RecordedStatistics> out;
    while (s.next()) {
        const std::int64_t step = s.integer(0);
        const std::int64_t stage = s.integer(1);
        const std::optional<TensorRole> role = parseRole(s.text(2));
        if (!role || stage < 0 || static_cast<std::size_t>(stage) >= stageCount)
            continue; // a row this version cannot place
        if (out.empty() || out.back().step != step)
            out.push_back({step, std::vector<StageStats>(stageCount), false,
                           std::vector<std::array<std::string, kRoleCount>>(stageCount)});
        out.back().formats[static_cast<std::size_t>(stage)][static_cast<std::size_t>(*role)] =
            s.text(20);
        StageStats& st = out.back().stages[static_cast<std::size_t>(stage)];
        QuantStats& q = st.role(*role);
        for (std::size_t c = 0; c < kQuantClassCount; ++c)
            q.counts[c] = static_cast<std::uint64_t>(s.integer(3 + static_cast<int>(c)));
        q.amax = static_cast<float>(s.real(9));
        if (*role == TensorRole::MasterWeights) {
            st.updates = static_cast<std::uint64_t>(s.integer(10));
            st.lostUpdates = static_cast<std::uint64_t>(s.integer(11));
        }
        st.gradientScale = s.real(12);
        const auto r = static_cast<std::size_t>(*role);
        st.tensorScale[r] = s.real(13);
        st.blocks[r].blocks = static_cast<std::uint64_t>(s.integer(14));
        st.blocks[r].saturatedBlocks = static_cast<std::uint64_t>(s.integer(15));
        if (!s.isNull(16))
            q.error = {static_cast<std::uint64_t>(s.integer(16)), s.real(17), s.real(18),
                       s.real(19)};
    }
    if (version < 2 || out.empty())
        return out;
    SqliteStatement b = db.prepare(
        std::string("SELECT step, stage, role, blocks, zero_blocks, flushed_blocks, "
                    "saturated_blocks, flushed_in_live, live_elements, scale_bins, range_bins "
                    "FROM blocks WHERE attempt = ?1 AND (?2 IS NULL OR step = ?2)") +
        (version >= 4 ? " AND (?3 IS NULL OR format = ?3)" : "") + " ORDER BY seq");
    b.bind(1, attempt);
    if (onlyStep)
        b.bind(2, *onlyStep);
    if (format && version >= 4)
        b.bind(3, std::string_view(*format));
    std::size_t at = 0; // both tables are in step order
    while (b.next()) {
        const std::int64_t step = b.integer(0), stage = b.integer(1);
        const std::optional<TensorRole> role = parseRole(b.text(2));
        while (at < out.size() && out[at].step < step)
            ++at;
        if (at == out.size())
            break;
        if (!role || out[at].step != step || stage < 0 ||
            static_cast<std::size_t>(stage) >= stageCount)
            continue;
        BlockStats& bs =
            out[at].stages[static_cast<std::size_t>(stage)].blocks[static_cast<std::size_t>(*role)];
        bs.blocks = static_cast<std::uint64_t>(b.integer(3));
        bs.zeroBlocks = static_cast<std::uint64_t>(b.integer(4));
        bs.flushedBlocks = static_cast<std::uint64_t>(b.integer(5));
        bs.saturatedBlocks = static_cast<std::uint64_t>(b.integer(6));
        bs.flushedInLiveBlocks = static_cast<std::uint64_t>(b.integer(7));
        bs.liveElements = static_cast<std::uint64_t>(b.integer(8));
        if (!withHistograms || b.isNull(9))
            continue;
        try {
            decodeBins(b.blob(9), bs.scaleHistogram);
            decodeBins(b.blob(10), bs.rangeHistogram);
        } catch (const std::invalid_argument& e) {
            throw RecordError(db.path() + ": is not a readable run record [blocks: " + e.what() +
                              "]");
        }
    }
    return out;
}

} // namespace

std::vector<RecordedStatistics> RunRecord::statistics(const std::string& format) const {
    return readStatistics(*m_db, m_version, lastAttempt(), m_stageNames.size(), std::nullopt, false,
                          rowsOf(format));
}

namespace {

// The columns a StatsRow is read from (readStatsRows), for a record of schema `version`.
std::string statsRowColumns(int version) {
    return std::string("seq, step, stage, role, format, ") + statsClassColumns(version) +
           ", amax, updates, lost_updates, grad_scale, tensor_scale, " +
           statsBlockColumns(version) + ", " +
           (version >= 2 ? "err_count, signal_sq, error_sq, output_sq" : "NULL, NULL, NULL, NULL") +
           (version >= 6 ? ", scaling" : ", NULL");
}

std::vector<StatsRow> readStatsRows(SqliteStatement& s, std::size_t stageCount) {
    std::vector<StatsRow> out;
    while (s.next()) {
        const std::optional<TensorRole> r = parseRole(s.text(3));
        const std::int64_t stage = s.integer(2);
        if (!r || stage < 0 || static_cast<std::size_t>(stage) >= stageCount)
            continue; // a row this version cannot place
        StatsRow row;
        row.seq = s.integer(0);
        row.step = s.integer(1);
        row.stage = static_cast<std::size_t>(stage);
        row.role = *r;
        row.format = s.text(4);
        for (std::size_t c = 0; c < kQuantClassCount; ++c)
            row.counts[c] = static_cast<std::uint64_t>(s.integer(5 + static_cast<int>(c)));
        row.amax = static_cast<float>(s.real(11));
        row.updates = static_cast<std::uint64_t>(s.integer(12));
        row.lostUpdates = static_cast<std::uint64_t>(s.integer(13));
        row.gradientScale = s.real(14);
        row.tensorScale = s.real(15);
        row.blocks = static_cast<std::uint64_t>(s.integer(16));
        row.saturatedBlocks = static_cast<std::uint64_t>(s.integer(17));
        if (!s.isNull(18))
            row.error = {static_cast<std::uint64_t>(s.integer(18)), s.real(19), s.real(20),
                         s.real(21)};
        if (!s.isNull(22))
            row.scaling = s.text(22);
        out.push_back(std::move(row));
    }
    return out;
}

} // namespace

std::vector<StatsRow> RunRecord::statsRows(const std::string& format,
                                           std::optional<TensorRole> role,
                                           std::int64_t afterSeq) const {
    SqliteStatement s = m_db->prepare(
        "SELECT " + statsRowColumns(m_version) +
        " FROM stats WHERE attempt = ?1 AND seq > ?2 AND (?3 IS NULL OR format = ?3) AND (?4 IS "
        "NULL OR role = ?4) ORDER BY seq");
    s.bind(1, lastAttempt()).bind(2, afterSeq);
    const std::optional<std::string> rows = rowsOf(format);
    if (rows)
        s.bind(3, std::string_view(*rows));
    if (role)
        s.bind(4, toString(*role));
    return readStatsRows(s, m_stageNames.size());
}

double BlockRow::flushedBlockShare() const {
    const std::uint64_t live = blocks - zeroBlocks;
    return live == 0 ? 0.0 : static_cast<double>(flushedBlocks) / static_cast<double>(live);
}

std::vector<BlockRow> RunRecord::blockRows(const std::string& format) const {
    std::vector<BlockRow> out;
    if (m_version < 2)
        return out;
    SqliteStatement s =
        m_db->prepare(std::string("SELECT step, stage, role, blocks, zero_blocks, flushed_blocks, "
                                  "saturated_blocks, ") +
                      (m_version >= 4 ? "format" : "''") + " FROM blocks WHERE attempt = ?1" +
                      (m_version >= 4 ? " AND (?2 IS NULL OR format = ?2)" : "") + " ORDER BY seq");
    s.bind(1, lastAttempt());
    if (!format.empty() && m_version >= 4)
        s.bind(2, std::string_view(format));
    while (s.next()) {
        const std::optional<TensorRole> role = parseRole(s.text(2));
        const std::int64_t stage = s.integer(1);
        if (!role || stage < 0 || static_cast<std::size_t>(stage) >= m_stageNames.size())
            continue;
        out.push_back(
            {s.integer(0), static_cast<std::size_t>(stage), *role, s.text(7),
             static_cast<std::uint64_t>(s.integer(3)), static_cast<std::uint64_t>(s.integer(4)),
             static_cast<std::uint64_t>(s.integer(5)), static_cast<std::uint64_t>(s.integer(6))});
    }
    return out;
}

std::vector<DiagnosticsRow> RunRecord::diagnosticsRows() const {
    std::vector<DiagnosticsRow> out;
    if (m_version < 5)
        return out;
    SqliteStatement s =
        m_db->prepare("SELECT step, stage, role, format, kurtosis, scale_log2_std, live_blocks, "
                      "zero_scale_blocks FROM diagnostics WHERE attempt = ?1 ORDER BY seq");
    s.bind(1, lastAttempt());
    while (s.next()) {
        const std::optional<TensorRole> role = parseRole(s.text(2));
        const std::int64_t stage = s.integer(1);
        if (!role || stage < 0 || static_cast<std::size_t>(stage) >= m_stageNames.size())
            continue;
        out.push_back({s.integer(0), static_cast<std::size_t>(stage), *role, s.text(3), s.real(4),
                       s.real(5), static_cast<std::uint64_t>(s.integer(6)),
                       static_cast<std::uint64_t>(s.integer(7))});
    }
    return out;
}

std::vector<ReportedValue> RunRecord::reportedValues() const {
    std::vector<ReportedValue> out;
    if (m_version < 7)
        return out;
    SqliteStatement s =
        m_db->prepare("SELECT step, name, value FROM reported WHERE attempt = ?1 ORDER BY seq");
    s.bind(1, lastAttempt());
    while (s.next())
        out.push_back({s.integer(0), s.text(1), s.real(2)});
    return out;
}

std::vector<TensorRole> RunRecord::recordedRoles() const {
    SqliteStatement s = m_db->prepare(
        "SELECT DISTINCT role FROM stats WHERE attempt = ?1 AND step = (SELECT step FROM stats "
        "WHERE attempt = ?1 ORDER BY seq LIMIT 1)");
    s.bind(1, lastAttempt());
    std::vector<TensorRole> roles;
    while (s.next())
        if (const std::optional<TensorRole> r = parseRole(s.text(0)))
            roles.push_back(*r);
    std::sort(roles.begin(), roles.end());
    return roles;
}

std::vector<StatsRow> RunRecord::tensorRows(std::int64_t step, std::size_t stage,
                                            TensorRole role) const {
    // By step first: the index stats_by_step finds the step's rows without a scan.
    SqliteStatement s = m_db->prepare("SELECT " + statsRowColumns(m_version) +
                                      " FROM stats WHERE step = ?1 AND attempt = ?2 AND stage = "
                                      "?3 AND role = ?4 ORDER BY seq");
    s.bind(1, step).bind(2, lastAttempt()).bind(3, static_cast<std::int64_t>(stage));
    s.bind(4, toString(role));
    return readStatsRows(s, m_stageNames.size());
}

std::optional<RecordedStatistics> RunRecord::latestHistograms() const {
    const std::vector<std::int64_t> steps = histogramSteps();
    if (steps.empty())
        return std::nullopt;
    return histogramsAt(steps.back());
}

std::vector<std::int64_t> RunRecord::histogramSteps() const {
    SqliteStatement s =
        m_db->prepare("SELECT DISTINCT step FROM histograms WHERE attempt = ?1 ORDER BY step");
    s.bind(1, lastAttempt());
    std::vector<std::int64_t> out;
    while (s.next())
        out.push_back(s.integer(0));
    return out;
}

std::optional<RecordedStatistics> RunRecord::histogramsAt(std::int64_t step,
                                                          const std::string& format) const {
    const std::int64_t attempt = lastAttempt();
    auto stats =
        readStatistics(*m_db, m_version, attempt, m_stageNames.size(), step, true, rowsOf(format));
    if (stats.empty())
        return std::nullopt;
    RecordedStatistics out = std::move(stats.back());
    SqliteStatement h = m_db->prepare(
        "SELECT stage, role, bins FROM histograms WHERE step = ?1 AND attempt = ?2 ORDER BY seq");
    h.bind(1, step).bind(2, attempt);
    while (h.next()) {
        const std::int64_t stage = h.integer(0);
        const std::optional<TensorRole> role = parseRole(h.text(1));
        if (!role || stage < 0 || static_cast<std::size_t>(stage) >= out.stages.size())
            continue;
        try {
            out.stages[static_cast<std::size_t>(stage)].role(*role).histogram =
                decodeHistogram(h.blob(2));
        } catch (const std::invalid_argument& e) {
            throw RecordError(m_db->path() +
                              ": is not a readable run record [histograms: " + e.what() + "]");
        }
        out.hasHistograms = true;
    }
    if (!out.hasHistograms)
        return std::nullopt;
    return out;
}

std::vector<RecordedEvent> RunRecord::events() const {
    SqliteStatement s =
        m_db->prepare("SELECT step, type, message, change FROM events ORDER BY seq");
    std::vector<RecordedEvent> out;
    while (s.next())
        out.push_back(
            {s.integer(0), s.text(1), s.text(2),
             s.isNull(3) ? nlohmann::json() : nlohmann::json::parse(s.text(3), nullptr, false)});
    return out;
}

RunSummary RunRecord::summary() const {
    // "running" with no run holding the folder: it was killed or crashed (or its disk filled up:
    // the summary could not be written then either, and the record cannot tell which). Its
    // steps are what the record holds, not what the last refresh of the summary said.
    if (std::optional<RunSummary> recovered = recoveredSummary(*m_db, m_dir))
        return *recovered;
    SqliteStatement s = m_db->prepare("SELECT json FROM summary WHERE id = 1");
    RunSummary unknown; // numbers unknown: NaN
    if (!s.next()) {
        unknown.stopReason = "no summary recorded";
        return unknown;
    }
    const auto j = nlohmann::json::parse(s.text(0), nullptr, false);
    if (!j.is_object()) {
        unknown.stopReason = "summary unreadable";
        return unknown;
    }
    return runSummaryFromJson(j);
}

std::uint64_t runRecordBytes(const std::string& runDir) {
    std::uint64_t bytes = 0;
    for (const char* file : {"/run.sqlite", "/run.sqlite-wal"}) {
        std::error_code ec;
        if (const auto n = std::filesystem::file_size(runDir + file, ec); !ec)
            bytes += n;
    }
    return bytes;
}

RunAnalysis analyseRun(const RunRecord& record) {
    RunAnalysis a;
    for (const StepScalars& s : record.steps())
        if (std::isfinite(s.loss))
            a.loss.emplace_back(static_cast<double>(s.step), s.loss);
    std::map<std::string, std::pair<double, int>> sums;
    double lost = 0.0, updates = 0.0;
    for (const RecordedStatistics& step : record.statistics()) {
        for (const StageStats& st : step.stages) {
            for (TensorRole role : kAllRoles) {
                const QuantStats& q = st.role(role);
                if (q.total() == q.count(QuantClass::Zero))
                    continue; // nothing nonzero: no share to average
                auto& [sum, n] = sums[std::string(toString(role))];
                sum += q.flushedShare();
                ++n;
            }
            updates += static_cast<double>(st.updates);
            lost += static_cast<double>(st.lostUpdates);
        }
        if (const double act = meanFlushedActivationGradients(step.stages); !std::isnan(act))
            a.flushedActGrads.emplace_back(static_cast<double>(step.step), act);
    }
    for (const auto& [role, sn] : sums)
        a.meanFlushed[role] = sn.first / sn.second;
    a.lostUpdates = updates > 0 ? lost / updates : 0.0;
    return a;
}

} // namespace plab
