// CSV/JSONL exports of the run record database.
#include "record/run_export.h"

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

void exportLayers(SqliteDb& db, const std::string& dir) {
    const std::vector<std::string> names = stageNames(db);
    ExportFile out(dir, "layers.csv");
    out.add("step,stage,stage_name,role,format,total,zero,underflow,subnormal,normal,overflow,"
            "nan,amax,flushed_fraction,updates,lost_updates,grad_scale,tensor_scale,mx_blocks,"
            "mx_saturated_blocks\n");
    SqliteStatement s = db.prepare(
        "SELECT step, stage, role, format, total, zero, underflow, subnormal, normal, overflow, "
        "nan, amax, updates, lost_updates, grad_scale, tensor_scale, mx_blocks, "
        "mx_saturated_blocks FROM stats ORDER BY seq");
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
               std::to_string(s.integer(16)) + ',' + std::to_string(s.integer(17)) + '\n';
        out.add(row);
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

void checkRunRecord(SqliteDb& db) {
    for (const char* table : {"meta", "steps", "stats", "histograms", "events", "summary"})
        if (!db.hasTable(table))
            throw RecordError(db.path() + ": is not a run record (no table " + table + ")");
    SqliteStatement v = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
    const std::string version = v.next() ? v.text(0) : std::string("none");
    if (version != std::to_string(kRunRecordSchemaVersion))
        throw RecordError(db.path() + ": run record schema version " + version +
                          " (this build reads version " + std::to_string(kRunRecordSchemaVersion) +
                          ")");
}

void exportRunRecord(SqliteDb& db, const std::string& outDir) {
    checkRunRecord(db);
    std::error_code ec;
    std::filesystem::create_directories(outDir, ec);
    if (ec)
        throw RecordError(outDir + ": cannot create (" + ec.message() + ")");
    // One read transaction: the four files describe the same moment of a live run.
    db.exec("BEGIN;");
    try {
        exportMetrics(db, outDir);
        exportLayers(db, outDir);
        exportHistograms(db, outDir);
        exportEvents(db, outDir);
    } catch (...) {
        db.exec("ROLLBACK;");
        throw;
    }
    db.exec("COMMIT;");
}

bool completeKilledRunSummary(SqliteDb& db, const std::string& runDir) {
    RunSummary summary;
    {
        SqliteStatement s = db.prepare("SELECT json FROM summary WHERE id = 1");
        if (!s.next())
            return false;
        const auto j = nlohmann::json::parse(s.text(0), nullptr, false);
        if (j.is_discarded() || !j.is_object())
            return false;
        summary = runSummaryFromJson(j);
    }
    if (summary.finished || summary.stopReason != "running")
        return false;
    std::unique_ptr<RunDirectoryLock> lock;
    try {
        lock = std::make_unique<RunDirectoryLock>(runDir);
    } catch (const RecordError&) {
        return false; // a live run holds it
    }
    SqliteStatement last =
        db.prepare("SELECT step, loss, samples_per_s FROM steps ORDER BY seq DESC LIMIT 1");
    if (last.next()) {
        summary.steps = last.integer(0);
        summary.finalTrainLoss = last.real(1);
        summary.samplesPerSecond = last.real(2);
    }
    SqliteStatement eval = db.prepare("SELECT test_loss, test_accuracy FROM steps WHERE test_loss "
                                      "IS NOT NULL ORDER BY seq DESC LIMIT 1");
    if (eval.next()) {
        summary.testLoss = eval.real(0);
        summary.testAccuracy = eval.real(1);
    }
    summary.skippedSteps = db.queryInteger("SELECT count(*) FROM steps WHERE skipped != 0");
    summary.stopReason = "ended without writing its summary (killed or crashed) after step " +
                         std::to_string(summary.steps) + "; summary recovered from run.sqlite";
    const std::string text = toJson(summary).dump(2) + "\n";
    SqliteStatement write = db.prepare("INSERT OR REPLACE INTO summary(id, json) VALUES (1, ?1)");
    write.bind(1, std::string_view(text)).run();
    writeFileAtomically(runDir + "/summary.json", text);
    return true;
}

void exportRunRecord(const std::string& runDir, const std::string& outDir) {
    const std::string path = runDir + "/" + kRunRecordFile;
    if (!std::filesystem::is_regular_file(path))
        throw RecordError(path + ": no run record here (expected the run.sqlite a run writes)");
    // Read-write so that SQLite can read a killed run's write-ahead log; nothing is changed.
    SqliteDb db(path, SqliteDb::Mode::ReadWrite);
    exportRunRecord(db, outDir);
}

} // namespace plab
