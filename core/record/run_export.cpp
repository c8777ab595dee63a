// CSV/JSONL exports of the run record database.
#include "record/run_export.h"

#include "numerics/block_stats.h"
#include "numerics/quant_stats.h"
#include "record/histogram_blob.h"
#include "record/record_file.h"
#include "record/record_number.h"
#include "record/run_record_schema.h"
#include "record/run_summary.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <stdexcept>

namespace plab {
namespace {

// Rows go to DIR/NAME.export-tmp in blocks; commit() renames it over DIR/NAME.
class ExportFile {
public:
    ExportFile(const std::string& dir, const std::string& name)
        : m_target(dir + "/" + name), m_file(m_target + ".export-tmp") {}
    ~ExportFile() {
        if (!m_committed)
            std::remove(m_file.path().c_str());
    }
    void add(const std::string& row) {
        m_block += row;
        if (m_block.size() >= (1u << 20))
            flush();
    }
    void commit() {
        flush();
        m_file = RowFile();
        refuseNonRegularTarget(m_target); // a link or device there is not replaced
        if (std::rename((m_target + ".export-tmp").c_str(), m_target.c_str()) != 0)
            throw RecordError(systemError("cannot replace", m_target));
        m_committed = true;
    }

private:
    void flush() {
        m_file.append(m_block);
        m_block.clear();
    }
    std::string m_target;
    RowFile m_file;
    std::string m_block;
    bool m_committed = false;
};

std::vector<std::string> stageNames(SqliteDb& db) {
    SqliteStatement s = db.prepare("SELECT value FROM meta WHERE key = 'stage_names'");
    if (!s.next())
        return {};
    try {
        return nlohmann::json::parse(s.text(0)).get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception&) {
        throw RecordError(db.path() + ": is not a readable run record [meta.stage_names]");
    }
}

void exportMetrics(SqliteDb& db, const std::string& dir) {
    ExportFile out(dir, "metrics.csv");
    out.add("step,epoch,loss,accuracy,scale,skipped,samples_per_s,lr,test_loss,test_accuracy\n");
    SqliteStatement s = db.prepare("SELECT step, epoch, loss, accuracy, scale, skipped, "
                                   "samples_per_s, lr, test_loss, test_accuracy FROM steps "
                                   "ORDER BY seq");
    while (s.next()) {
        std::string row = std::to_string(s.integer(0)) + ',' + std::to_string(s.integer(1));
        for (int c = 2; c <= 4; ++c)
            row += ',' + recordNumber(s.real(c));
        row += ',' + std::to_string(s.integer(5)) + ',' + recordNumber(s.real(6)) + ',' +
               recordNumber(s.real(7)) + ',';
        if (!s.isNull(8)) // an empty cell: not evaluated after this step
            row += recordNumber(s.real(8)) + ',' + recordNumber(s.real(9));
        else
            row += ',';
        out.add(row + '\n');
    }
    out.commit();
}

std::string stageName(const std::vector<std::string>& names, std::int64_t stage) {
    return stage >= 0 && static_cast<std::size_t>(stage) < names.size()
               ? names[static_cast<std::size_t>(stage)]
               : std::string("?");
}

// Empty cells for a cast whose error was not measured.
std::string errorCells(const QuantError& e) {
    if (!e.measured())
        return ",,";
    return recordNumber(e.mse()) + ',' + recordNumber(e.sqnrDb()) + ',' +
           recordNumber(e.normRelativeError());
}

void exportLayers(SqliteDb& db, const std::string& dir, int version) {
    const std::vector<std::string> names = stageNames(db);
    ExportFile out(dir, "layers.csv");
    out.add(std::string(kLayersCsvHeader) + '\n');
    SqliteStatement s = db.prepare(
        std::string("SELECT step, stage, role, format, total, ") + statsClassColumns(version) +
        ", amax, updates, lost_updates, grad_scale, tensor_scale, " + statsBlockColumns(version) +
        ", " +
        (version >= 2 ? "err_count, signal_sq, error_sq, output_sq" : "NULL, NULL, NULL, NULL") +
        (version >= 6 ? ", scaling" : ", NULL") + " FROM stats ORDER BY seq");
    while (s.next()) {
        const std::int64_t stage = s.integer(1);
        QuantStats q;
        for (std::size_t c = 0; c < kQuantClassCount; ++c)
            q.counts[c] = static_cast<std::uint64_t>(s.integer(5 + static_cast<int>(c)));
        std::string row = std::to_string(s.integer(0)) + ',' + std::to_string(stage) + ',' +
                          (stage >= 0 && static_cast<std::size_t>(stage) < names.size()
                               ? names[static_cast<std::size_t>(stage)]
                               : std::string("?")) +
                          ',' + s.text(2) + ',' + s.text(3) + ',' + std::to_string(s.integer(4));
        for (std::size_t c = 0; c < kQuantClassCount; ++c)
            row += ',' + std::to_string(q.counts[c]);
        row += ',' + recordNumber(s.real(11)) + ',' + recordNumber(q.flushedShare()) + ',' +
               std::to_string(s.integer(12)) + ',' + std::to_string(s.integer(13)) + ',' +
               recordNumber(s.real(14)) + ',' + recordNumber(s.real(15)) + ',' +
               std::to_string(s.integer(16)) + ',' + std::to_string(s.integer(17)) + ',';
        QuantError e;
        if (!s.isNull(18))
            e = {static_cast<std::uint64_t>(s.integer(18)), s.real(19), s.real(20), s.real(21)};
        out.add(row + errorCells(e) + ',' + (s.isNull(22) ? std::string() : s.text(22)) + '\n');
    }
    out.commit();
}

// log2 of a histogram's quantile (q in [0, 1]) over log bins; NaN when empty. binLog2(b) is the
// lower edge of bin b.
template <class Bins, class Edge>
double quantileLog2(const Bins& bins, double q, std::size_t first, Edge binLog2) {
    std::uint64_t total = 0;
    for (std::size_t b = first; b < bins.size(); ++b)
        total += bins[b];
    if (total == 0)
        return std::numeric_limits<double>::quiet_NaN();
    const auto target = static_cast<std::uint64_t>(q * static_cast<double>(total - 1));
    std::uint64_t seen = 0;
    for (std::size_t b = first; b < bins.size(); ++b) {
        seen += bins[b];
        if (seen > target)
            return binLog2(b);
    }
    return binLog2(bins.size() - 1);
}

void exportBlocks(SqliteDb& db, const std::string& dir, int version) {
    const std::vector<std::string> names = stageNames(db);
    ExportFile out(dir, "blocks.csv");
    out.add("step,stage,stage_name,role,format,blocks,zero_blocks,flushed_blocks,"
            "saturated_blocks,flushed_in_live_blocks,live_elements,scale_log2_min,"
            "scale_log2_median,scale_log2_max,range_log2_median,range_log2_max\n");
    SqliteStatement s = db.prepare(
        std::string("SELECT step, stage, role, blocks, zero_blocks, flushed_blocks, "
                    "saturated_blocks, flushed_in_live, live_elements, scale_bins, range_bins, ") +
        (version >= 4 ? "format" : "NULL") + " FROM blocks ORDER BY seq");
    while (s.next()) {
        const std::int64_t stage = s.integer(1);
        std::string row = std::to_string(s.integer(0)) + ',' + std::to_string(stage) + ',' +
                          stageName(names, stage) + ',' + s.text(2) + ',' +
                          (s.isNull(11) ? std::string() : s.text(11));
        for (int c = 3; c <= 8; ++c)
            row += ',' + std::to_string(s.integer(c));
        if (s.isNull(9)) { // histograms on histogram steps only
            out.add(row + ",,,,,\n");
            continue;
        }
        BlockStats b;
        try {
            decodeBins(s.blob(9), b.scaleHistogram);
            decodeBins(s.blob(10), b.rangeHistogram);
        } catch (const std::invalid_argument& e) {
            throw RecordError(db.path() + ": is not a readable run record [blocks: " + e.what() +
                              "]");
        }
        // Scales: the lower edge of their bin (exact for powers of two); ranges likewise.
        auto scaleEdge = [](std::size_t bin) {
            return histogramBinLowerLog2(static_cast<int>(bin));
        };
        auto rangeEdge = [](std::size_t bin) {
            return static_cast<double>(bin) / kRangeBinsPerBinade;
        };
        row += ',' + recordNumber(quantileLog2(b.scaleHistogram, 0.0, 1, scaleEdge)) + ',' +
               recordNumber(quantileLog2(b.scaleHistogram, 0.5, 1, scaleEdge)) + ',' +
               recordNumber(quantileLog2(b.scaleHistogram, 1.0, 1, scaleEdge)) + ',' +
               recordNumber(quantileLog2(b.rangeHistogram, 0.5, 0, rangeEdge)) + ',' +
               recordNumber(quantileLog2(b.rangeHistogram, 1.0, 0, rangeEdge));
        out.add(row + '\n');
    }
    out.commit();
}

void exportHistograms(SqliteDb& db, const std::string& dir) {
    ExportFile out(dir, "histograms.csv");
    out.add("step,stage,role,bin,count\n");
    SqliteStatement s = db.prepare("SELECT step, stage, role, bins FROM histograms ORDER BY seq");
    while (s.next()) {
        const std::string prefix = std::to_string(s.integer(0)) + ',' +
                                   std::to_string(s.integer(1)) + ',' + s.text(2) + ',';
        std::array<std::uint64_t, kHistBinCount> bins;
        try {
            bins = decodeHistogram(s.blob(3));
        } catch (const std::invalid_argument& e) {
            throw RecordError(db.path() +
                              ": is not a readable run record [histograms: " + e.what() + "]");
        }
        std::string rows;
        for (int b = 0; b < kHistBinCount; ++b)
            if (const std::uint64_t n = bins[static_cast<std::size_t>(b)])
                rows += prefix + std::to_string(b) + ',' + std::to_string(n) + '\n';
        out.add(rows);
    }
    out.commit();
}

void exportChannels(SqliteDb& db, const std::string& dir) {
    const std::vector<std::string> names = stageNames(db);
    ExportFile out(dir, "channels.csv");
    out.add("step,stage,stage_name,channels,amax_max,amax_median,outlier_share\n");
    SqliteStatement s = db.prepare("SELECT step, stage, channels, amax_max, amax_median, "
                                   "outlier_share FROM channels ORDER BY seq");
    while (s.next()) {
        const std::int64_t stage = s.integer(1);
        out.add(std::to_string(s.integer(0)) + ',' + std::to_string(stage) + ',' +
                stageName(names, stage) + ',' + std::to_string(s.integer(2)) + ',' +
                recordNumber(s.real(3)) + ',' + recordNumber(s.real(4)) + ',' +
                recordNumber(s.real(5)) + '\n');
    }
    out.commit();
}

// The diagnostics table (schema 5): kurtosis per captured tensor, block-scale spread per block
// format; amax and the gradient-to-noise ratio (10^(sqnr/20)) come from layers.csv's columns.
void exportDiagnostics(SqliteDb& db, const std::string& dir) {
    const std::vector<std::string> names = stageNames(db);
    ExportFile out(dir, "diagnostics.csv");
    out.add("step,stage,stage_name,role,format,kurtosis,block_scale_log2_std,live_blocks,"
            "zero_scale_blocks\n");
    SqliteStatement s = db.prepare("SELECT step, stage, role, format, kurtosis, scale_log2_std, "
                                   "live_blocks, zero_scale_blocks FROM diagnostics ORDER BY seq");
    while (s.next()) {
        const std::int64_t stage = s.integer(1);
        const bool blocks = !s.isNull(6);
        out.add(std::to_string(s.integer(0)) + ',' + std::to_string(stage) + ',' +
                stageName(names, stage) + ',' + s.text(2) + ',' + s.text(3) + ',' +
                (s.isNull(4) ? std::string() : recordNumber(s.real(4))) + ',' +
                (s.isNull(5) ? std::string() : recordNumber(s.real(5))) + ',' +
                (blocks ? std::to_string(s.integer(6)) : std::string()) + ',' +
                (blocks ? std::to_string(s.integer(7)) : std::string()) + '\n');
    }
    out.commit();
}

void exportEvents(SqliteDb& db, const std::string& dir) {
    ExportFile out(dir, "events.jsonl");
    SqliteStatement s = db.prepare("SELECT step, type, message, change FROM events ORDER BY seq");
    while (s.next()) {
        nlohmann::json e = {{"step", s.integer(0)}, {"type", s.text(1)}, {"message", s.text(2)}};
        if (!s.isNull(3))
            e["change"] = nlohmann::json::parse(s.text(3), nullptr, false);
        out.add(e.dump() + '\n');
    }
    out.commit();
}

} // namespace

int checkRunRecord(SqliteDb& db) {
    for (const char* table : {"meta", "steps", "stats", "histograms", "events", "summary"})
        if (!db.hasTable(table))
            throw RecordError(db.path() + ": is not a run record (no table " + table + ")");
    SqliteStatement v = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
    const std::string version = v.next() ? v.text(0) : std::string("none");
    for (int known = kOldestReadableSchemaVersion; known <= kRunRecordSchemaVersion; ++known)
        if (version == std::to_string(known)) {
            if (known >= 2 && !db.hasTable("blocks"))
                throw RecordError(db.path() + ": is not a run record (no table blocks)");
            if (known >= 3 && !db.hasTable("channels"))
                throw RecordError(db.path() + ": is not a run record (no table channels)");
            if (known >= 7 && !db.hasTable("reported"))
                throw RecordError(db.path() + ": is not a run record (no table reported)");
            return known;
        }
    throw RecordError(db.path() + ": run record schema version " + version +
                      " (this build reads versions " +
                      std::to_string(kOldestReadableSchemaVersion) + " to " +
                      std::to_string(kRunRecordSchemaVersion) + ")");
}

void exportRunRecord(SqliteDb& db, const std::string& outDir) {
    const int version = checkRunRecord(db);
    std::error_code ec;
    std::filesystem::create_directories(outDir, ec);
    if (ec)
        throw RecordError(outDir + ": cannot create (" + ec.message() + ")");
    // An export killed midway left its partial files: they are this one's to replace.
    for (const char* name : kRunExportFiles)
        std::filesystem::remove(outDir + "/" + name + ".export-tmp", ec);
    // One read transaction: the four files describe the same moment of a live run.
    db.exec("BEGIN;");
    try {
        exportMetrics(db, outDir);
        exportLayers(db, outDir, version);
        if (version >= 2)
            exportBlocks(db, outDir, version);
        if (version >= 3)
            exportChannels(db, outDir);
        if (version >= 5 && db.queryInteger("SELECT count(*) FROM diagnostics") > 0)
            exportDiagnostics(db, outDir); // runs whose tensors were captured whole
        exportHistograms(db, outDir);
        exportEvents(db, outDir);
    } catch (...) {
        db.exec("ROLLBACK;");
        throw;
    }
    db.exec("COMMIT;");
}

std::optional<RunSummary> recoveredSummary(SqliteDb& db, const std::string& runDir) {
    RunSummary summary;
    summary.stopReason = "running"; // no row: killed in its first milliseconds, before writing one
    {
        SqliteStatement s = db.prepare("SELECT json FROM summary WHERE id = 1");
        if (s.next()) {
            const auto j = nlohmann::json::parse(s.text(0), nullptr, false);
            if (j.is_discarded() || !j.is_object())
                return std::nullopt;
            summary = runSummaryFromJson(j);
        }
    }
    if (summary.finished || summary.stopReason != "running" || runDirectoryLocked(runDir))
        return std::nullopt;
    {
        // A full disk can refuse the database's summary row yet take the small summary.json
        // (written first for that reason): when the file already says how the run ended, it is
        // the better record.
        std::ifstream file(runDir + "/summary.json");
        const auto j = nlohmann::json::parse(file, nullptr, false);
        if (file && !j.is_discarded() && j.is_object() &&
            j.value("stop_reason", std::string("running")) != "running")
            return std::nullopt;
    }
    // The record keeps no step times: the run's wall time is unknown (not the "running" row's,
    // written as it began), and its rate is its last step's where it recorded one, else unknown.
    summary.wallSeconds = std::nan("");
    summary.samplesPerSecond = std::nan("");
    SqliteStatement last =
        db.prepare("SELECT step, loss, samples_per_s FROM steps ORDER BY seq DESC LIMIT 1");
    if (last.next()) {
        summary.steps = last.integer(0);
        summary.finalTrainLoss = last.isNull(1) ? std::nan("") : last.real(1);
        if (!last.isNull(2) && last.real(2) > 0.0)
            summary.samplesPerSecond = last.real(2);
    }
    SqliteStatement eval = db.prepare("SELECT test_loss, test_accuracy FROM steps WHERE test_loss "
                                      "IS NOT NULL ORDER BY seq DESC LIMIT 1");
    if (eval.next()) {
        summary.testLoss = eval.real(0);
        summary.testAccuracy = eval.real(1);
    }
    summary.skippedSteps = db.queryInteger("SELECT count(*) FROM steps WHERE skipped != 0");
    summary.stopReason =
        "ended without writing its summary (killed or crashed, or its disk filled up) " +
        (summary.steps > 0 ? "after step " + std::to_string(summary.steps)
                           : "before its first step") +
        "; summary recovered from run.sqlite";
    return summary;
}

void exportRunRecord(const std::string& runDir, const std::string& outDir) {
    const std::string path = runDir + "/" + kRunRecordFile;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        throw RecordError(path + (unreadable(ec)
                                      ? ": cannot be read (" + ec.message() + ")"
                                      : ": no run record here (expected the run.sqlite a run "
                                        "writes)"));
    // Read-write so that SQLite can read a killed run's write-ahead log; nothing is changed.
    SqliteDb db(path, SqliteDb::Mode::ReadWrite);
    exportRunRecord(db, outDir);
}

} // namespace plab
