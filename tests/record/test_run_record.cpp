// The run record: its histogram encoding, numbers that must not change meaning on the way
// through SQLite (NaN, Inf, "not evaluated"), a step written whole or not at all, resets, the disk
// budget, and the run analysis read back from it.
#include <QTemporaryDir>
#include <QTest>

#include "record/histogram_blob.h"
#include "record/run_export.h"
#include "record/run_record.h"
#include "train/presets.h"
#include "train/run_log.h"
#include "train/training_session.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

using namespace plab;

class TestRunRecord : public QObject {
    Q_OBJECT
private slots:
    void histogramBlobRoundTrips();
    void damagedHistogramBlobIsRefused();
    void nanInfAndNotEvaluatedKeepTheirMeaning();
    void aStepIsRecordedWholeOrNotAtAll();
    void aKilledRunReadsOnReadOnlyTerms();
    void resetStartsANewAttempt();
    void budgetStopsHistogramsAndSaysSo();
    void aReaderDuringTheRunDoesNotFailIt();
    void blockStatisticsAndErrorsAreRecorded();
    void versionOneRecordStillReads();
    void versionSevenRecordReadsAndGoesOnRenamed();
};

namespace {

TrainConfig smallConfig(std::int64_t steps) {
    return configFromJson(
        {{"model", {{"hidden", {16}}}}, {"train", {{"steps", steps}, {"batch_size", 16}}}});
}

std::string readAll(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<StageStats> someStats(std::size_t stages) {
    std::vector<StageStats> out(stages);
    for (StageStats& s : out)
        for (TensorRole r : kAllRoles) {
            QuantStats& q = s.role(r);
            q.counts[static_cast<std::size_t>(QuantClass::Normal)] = 100;
            q.counts[static_cast<std::size_t>(QuantClass::Underflow)] = 5;
            q.histogram[300] = 100;
            q.histogram[12] = 5;
        }
    return out;
}

} // namespace

void TestRunRecord::histogramBlobRoundTrips() {
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        std::array<std::uint64_t, kHistBinCount> h{};
        const int filled = trial % 50;
        for (int i = 0; i < filled; ++i)
            h[rng() % kHistBinCount] = rng() >> (rng() % 64);
        if (trial == 1)
            h[kHistNanBin] = std::numeric_limits<std::uint64_t>::max();
        QCOMPARE(decodeHistogram(encodeHistogram(h)), h);
    }
    std::array<std::uint64_t, kHistBinCount> sparse{};
    sparse[400] = 1000;
    QVERIFY(encodeHistogram(sparse).size() <= 4); // two varints: 2 + 2 bytes
}

void TestRunRecord::damagedHistogramBlobIsRefused() {
    std::array<std::uint64_t, kHistBinCount> h{};
    h[500] = 1ull << 40;
    const std::string blob = encodeHistogram(h);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             decodeHistogram(std::string_view(blob).substr(0, blob.size() - 1)));
    const std::string outOfRange = "\xff\x7f\x01"; // bin 16383, count 1
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, decodeHistogram(outOfRange));
}

// SQLite would store a NaN as NULL ("not measured"): the record keeps NaN, Inf and "not
// evaluated" apart, in the database, in the reader and in metrics.csv.
void TestRunRecord::nanInfAndNotEvaluatedKeepTheirMeaning() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    {
        RunLog log(run, smallConfig(3), {"L0", "L1"});
        StepScalars s;
        s.step = 1;
        s.loss = std::numeric_limits<double>::quiet_NaN();
        s.scale = std::numeric_limits<double>::infinity();
        log.logStep(s); // not evaluated
        s.step = 2;
        s.loss = 0.5;
        s.scale = 1.0;
        s.evaluated = true;
        s.testLoss = std::numeric_limits<double>::quiet_NaN();
        s.testAccuracy = 0.25;
        log.logStep(s);
        log.commit();
        log.close();
    }
    const std::vector<StepScalars> steps = RunRecord(run).steps();
    QCOMPARE(steps.size(), std::size_t{2});
    QVERIFY(std::isnan(steps[0].loss));
    QVERIFY(std::isinf(steps[0].scale));
    QVERIFY(!steps[0].evaluated);
    QVERIFY(steps[1].evaluated);
    QVERIFY(std::isnan(steps[1].testLoss));
    QCOMPARE(steps[1].testAccuracy, 0.25);
    const std::string metrics = readAll(run + "/metrics.csv");
    QVERIFY2(metrics.find("\n1,0,nan,0,inf,0,0,0,,\n") != std::string::npos, metrics.c_str());
    QVERIFY2(metrics.find("\n2,0,0.5,0,1,0,0,0,nan,0.25\n") != std::string::npos, metrics.c_str());
}

// Rows logged but not committed (a crash between them) never reach the record: the step's
// scalars without its statistics would be half a step.
void TestRunRecord::aStepIsRecordedWholeOrNotAtAll() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    {
        RunLog log(run, smallConfig(3), {"L0", "L1"});
        StepScalars s;
        s.step = 1;
        log.logStep(s);
        log.logStats(1, someStats(2));
        log.commit();
        QCOMPARE(RunRecord(run).summary().stopReason, std::string("running")); // it is
        s.step = 2;
        log.logStep(s); // its statistics never come: the process "dies" here
    }
    // Nobody holds the folder and the summary never got its end: the reader says so.
    QVERIFY(RunRecord(run).summary().stopReason.find("killed or crashed") != std::string::npos);
    // Its steps are the record's (the summary row said 0, written before the first step); its
    // wall time is unknown (the "running" row's 0 is not it), and so is a rate never recorded
    // (issue 65 item 26: 0.0 and a stale wall time were reported).
    QCOMPARE(RunRecord(run).summary().steps, std::int64_t{1});
    QVERIFY(std::isnan(RunRecord(run).summary().wallSeconds));
    QVERIFY(std::isnan(RunRecord(run).summary().samplesPerSecond));
    exportRunRecord(run, run);
    const RunRecord record(run);
    QCOMPARE(record.steps().size(), std::size_t{1});
    QCOMPARE(record.statistics().size(), std::size_t{1});
    QCOMPARE(readAll(run + "/layers.csv").find("\n2,"), std::string::npos);
    const RunAnalysis a = analyseRun(record);
    QCOMPARE(a.meanFlushed.at("activation_gradients"), 5.0 / 105.0);
}

// A killed run's record as a reader on read-only storage opens it: read-only with the write-ahead
// log's index (the committed steps), or immutable (the checkpointed part); the writer's lock is
// probed without creating anything.
void TestRunRecord::aKilledRunReadsOnReadOnlyTerms() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    // A connection held open keeps the write-ahead log beside the database when the writer goes,
    // as a kill does (the last connection to close folds it in).
    std::unique_ptr<SqliteDb> keeper;
    {
        RunLog log(run, smallConfig(3), {"L0", "L1"});
        keeper = std::make_unique<SqliteDb>(run + "/run.sqlite", SqliteDb::Mode::ReadWrite);
        keeper->queryInteger("SELECT count(*) FROM meta"); // opened for real (lazily otherwise)
        StepScalars s;
        s.step = 1;
        log.logStep(s);
        log.logStats(1, someStats(2));
        log.commit();
        QVERIFY(runDirectoryLocked(run));
        QVERIFY(RunRecord(run).isBeingWritten());
    }
    QVERIFY(!runDirectoryLocked(run));
    QVERIFY(std::filesystem::exists(run + "/run.sqlite-wal"));
    {
        SqliteDb readOnly(run + "/run.sqlite", SqliteDb::Mode::ReadOnly);
        QCOMPARE(readOnly.queryInteger("SELECT count(*) FROM steps"), std::int64_t{1});
        // Immutable reads the database file alone: nothing of the log until it is checkpointed.
        QVERIFY(!SqliteDb(run + "/run.sqlite", SqliteDb::Mode::Immutable).hasTable("steps"));
        keeper->exec("PRAGMA wal_checkpoint(PASSIVE);");
        SqliteDb immutable(run + "/run.sqlite", SqliteDb::Mode::Immutable);
        QCOMPARE(immutable.queryInteger("SELECT count(*) FROM steps"), std::int64_t{1});
    }
    const std::string bare = dir.path().toStdString() + "/no-lock";
    std::filesystem::create_directories(bare);
    QVERIFY(!runDirectoryLocked(bare));
    QVERIFY(!std::filesystem::exists(bare + "/.lock")); // a reader's probe writes nothing
}

// After a Reset the steps start at 1 again: the reader shows the run since the reset, the exports
// keep both attempts, and the reset event says where.
void TestRunRecord::resetStartsANewAttempt() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(3, 200, 50));
    {
        TrainingSession session(smallConfig(100), data, run);
        for (int i = 0; i < 3; ++i)
            session.stepOnce();
        QTRY_VERIFY(session.latestSnapshot() && session.latestSnapshot()->scalars.step == 3);
        session.reset();
        session.stepOnce();
        session.stepOnce();
        QTRY_VERIFY(session.latestSnapshot()->scalars.step == 2 &&
                    session.state() == SessionState::Paused);
        session.stop();
        session.waitUntilDone();
    }
    const RunRecord record(run);
    const std::vector<StepScalars> steps = record.steps();
    QCOMPARE(steps.size(), std::size_t{2});
    QCOMPARE(steps.back().step, std::int64_t{2});
    QCOMPARE(record.statistics().size(), std::size_t{2});
    bool sawReset = false;
    for (const RecordedEvent& e : record.events())
        sawReset = sawReset || (e.type == "reset" && e.step == 3);
    QVERIFY(sawReset);
    std::ifstream metrics(run + "/metrics.csv");
    int rows = 0;
    for (std::string line; std::getline(metrics, line);)
        ++rows;
    QCOMPARE(rows, 1 + 3 + 2);
}

// Past train.record_budget_mb the histograms stop (an event says so); steps and counters go on.
void TestRunRecord::budgetStopsHistogramsAndSaysSo() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    TrainConfig config = smallConfig(1000);
    config.recordBudgetMb = 1;
    config.histogramsEvery = 1;
    std::int64_t steps = 0;
    {
        RunLog log(run, config, {"L0", "L1", "L2"});
        std::vector<StageStats> stats = someStats(3);
        for (auto& st : stats) // wide histograms: ~2 KB per tensor
            for (TensorRole r : kAllRoles)
                for (int b = 1; b < 1000; ++b)
                    st.role(r).histogram[static_cast<std::size_t>(b)] = 1000 + b;
        while (log.recordBytes() < (3u << 20) / 2 && steps < 2000) {
            StepScalars s;
            s.step = ++steps;
            log.logStep(s);
            log.logStats(s.step, stats);
            log.commit();
        }
        log.close();
    }
    const RunRecord record(run);
    QCOMPARE(static_cast<std::int64_t>(record.steps().size()), steps);
    QCOMPARE(static_cast<std::int64_t>(record.statistics().size()), steps);
    bool said = false;
    for (const RecordedEvent& e : record.events())
        said = said || (e.type == "record_budget" &&
                        e.message.find("histograms are no longer recorded") != std::string::npos);
    QVERIFY(said);
    const std::optional<RecordedStatistics> last = record.latestHistograms();
    QVERIFY(last.has_value());
    QVERIFY(last->step < steps); // the histograms stopped before the run did
}

// A reader with the record open while the run writes and ends (the GUI's report, `export` of a
// live run) sees whole steps and does not make the run fail.
void TestRunRecord::aReaderDuringTheRunDoesNotFailIt() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(4, 400, 50));
    TrainingSession session(smallConfig(60), data, run);
    session.start();
    QTRY_VERIFY(session.latestSnapshot() && session.latestSnapshot()->scalars.step >= 5);
    const RunRecord reader(run);
    std::size_t seen = 0;
    while (!hasEnded(session.state())) {
        const std::size_t now = reader.steps().size();
        QVERIFY(now >= seen); // whole steps only, never fewer
        QCOMPARE(reader.statistics().size() >= now - 1, true);
        seen = now;
    }
    session.waitUntilDone();
    QCOMPARE(session.state(), SessionState::Finished);
    QCOMPARE(reader.steps().size(), std::size_t{60});
    QVERIFY(reader.summary().finished);
}

// An NVFP4 run: its block counters and histograms land in the record and blocks.csv, the error
// metrics in layers.csv (empty where not measured: master weights), and Open run reads them back.
void TestRunRecord::blockStatisticsAndErrorsAreRecorded() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    nlohmann::json j = findPreset("nvfp4").json;
    j["model"] = {{"hidden", {32}}};
    j["train"] = {{"steps", 4}, {"batch_size", 16}, {"histograms_every", 2}};
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(3, 200, 50));
    {
        TrainingSession session(configFromJson(j), data, run);
        session.start();
        session.waitUntilDone();
    }
    const RunRecord record(run);
    const std::optional<RecordedStatistics> last = record.latestHistograms();
    QVERIFY(last.has_value());
    QCOMPARE(last->step, std::int64_t{3}); // statistics steps 1..4, histograms at 1 and 3
    const StageStats& first = last->stages[0];
    const BlockStats& acts = first.blocks[static_cast<std::size_t>(TensorRole::Activations)];
    // 16 rows of 32 activations in blocks of 16.
    QCOMPARE(acts.blocks, 32ull);
    std::uint64_t scaled = 0;
    for (std::uint64_t n : acts.scaleHistogram)
        scaled += n;
    QCOMPARE(scaled, acts.blocks - acts.zeroBlocks);
    // Weights: the first layer's matrix in 16x16 tiles, and its biases in a row of blocks.
    QVERIFY(first.blocks[static_cast<std::size_t>(TensorRole::Weights)].blocks > 0);
    // The BF16 last stage is cast plainly: no blocks.
    QCOMPARE(last->stages[1].blocks[static_cast<std::size_t>(TensorRole::Activations)].blocks,
             0ull);
    const QuantError& e = first.role(TensorRole::Activations).error;
    QVERIFY(e.measured());
    QVERIFY2(e.sqnrDb() > 5.0 && e.sqnrDb() < 40.0, qPrintable(QString::number(e.sqnrDb())));
    QVERIFY(!first.role(TensorRole::MasterWeights).error.measured());

    const std::string blocks = readAll(run + "/blocks.csv");
    QVERIFY(blocks.rfind("step,stage,stage_name,role,format,blocks,zero_blocks,flushed_blocks,"
                         "saturated_blocks,flushed_in_live_blocks,live_elements,scale_log2_min,",
                         0) == 0);
    QVERIFY(blocks.find("\n1,0,") != std::string::npos);
    QVERIFY(blocks.find("\n4,0,") != std::string::npos);
    const std::string layers = readAll(run + "/layers.csv");
    QVERIFY(layers.find(",mse,sqnr_db,norm_rel_error,scaling\n") != std::string::npos);
    std::istringstream rows(layers);
    std::string line;
    int measured = 0, unmeasured = 0;
    while (std::getline(rows, line)) {
        if (line.find(",master_weights,") != std::string::npos)
            unmeasured += line.substr(line.size() - 2) == ",," ? 1 : 0;
        if (line.find(",activations,") != std::string::npos)
            measured += line.back() != ',' ? 1 : 0;
    }
    QCOMPARE(unmeasured, 4 * 2); // 4 statistics steps, 2 stages
    QCOMPARE(measured, 4 * 2);
}

namespace {

// One step of a two-stage run into `run`: a new record, or (`from`) one going on from a
// checkpoint.
void writeStep(const std::string& run, std::int64_t step,
               const std::optional<RecordContinuation>& from) {
    std::unique_ptr<RunLog> log =
        from ? std::make_unique<RunLog>(run, smallConfig(3), std::vector<std::string>{"L0", "L1"},
                                        *from)
             : std::make_unique<RunLog>(run, smallConfig(3), std::vector<std::string>{"L0", "L1"});
    StepScalars s;
    s.step = step;
    log->logStep(s);
    log->logStats(step, someStats(2));
    log->commit();
    log->close();
}

// Version 8 renamed three stats columns; a record's columns as version 7 named them.
constexpr const char* kRenameToVersionSeven =
    "ALTER TABLE stats RENAME COLUMN flushed TO underflow; ALTER TABLE stats RENAME COLUMN blocks "
    "TO mx_blocks; ALTER TABLE stats RENAME COLUMN saturated_blocks TO mx_saturated_blocks; "
    "UPDATE meta SET value = '7' WHERE key = 'schema_version';";

} // namespace

// A record written before the error sums and the blocks and channels tables (schema version 1)
// still exports and opens, with empty error cells and no blocks.csv or channels.csv.
void TestRunRecord::versionOneRecordStillReads() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    writeStep(run, 1, std::nullopt);
    {
        SqliteDb db(run + "/run.sqlite", SqliteDb::Mode::ReadWrite);
        db.exec(std::string(kRenameToVersionSeven) +
                "DROP TABLE blocks; DROP TABLE channels; DROP TABLE diagnostics; "
                "ALTER TABLE stats DROP COLUMN err_count; "
                "ALTER TABLE stats "
                "DROP COLUMN signal_sq; ALTER TABLE stats DROP COLUMN error_sq; ALTER TABLE stats "
                "DROP COLUMN output_sq; UPDATE meta SET value = '1' WHERE key = "
                "'schema_version';");
    }
    std::filesystem::remove(run + "/layers.csv");
    std::filesystem::remove(run + "/blocks.csv");
    std::filesystem::remove(run + "/channels.csv");
    exportRunRecord(run, run);
    QVERIFY(!std::filesystem::exists(run + "/blocks.csv"));
    QVERIFY(!std::filesystem::exists(run + "/channels.csv"));
    QVERIFY(readAll(run + "/layers.csv").find("0.047619047619047616,0,0,1,1,0,0,,,,\n") !=
            std::string::npos);
    QCOMPARE(RunRecord(run).statistics().size(), std::size_t{1});
    {
        SqliteDb db(run + "/run.sqlite", SqliteDb::Mode::ReadWrite);
        db.exec("UPDATE meta SET value = '9' WHERE key = 'schema_version';");
    }
    try {
        RunRecord future(run);
        QFAIL("a record of a later schema version was read");
    } catch (const RecordError& e) {
        QVERIFY2(std::string(e.what()).find(
                     "schema version 9 (this build reads versions 1 to 8)") != std::string::npos,
                 e.what());
    }
}

// Issue 65 item 25: a record of schema version 7 (the stats' underflow, mx_blocks and
// mx_saturated_blocks columns) reads and exports under the names of version 8 (flushed, blocks,
// saturated_blocks, flushed_share), and a stopped run of it goes on: its columns are renamed in
// place, with its version, and the new steps' rows join the old ones.
void TestRunRecord::versionSevenRecordReadsAndGoesOnRenamed() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    writeStep(run, 1, std::nullopt);
    {
        SqliteDb db(run + "/run.sqlite", SqliteDb::Mode::ReadWrite);
        db.exec(kRenameToVersionSeven);
    }
    std::filesystem::remove(run + "/layers.csv");
    exportRunRecord(run, run);
    const std::string layers = readAll(run + "/layers.csv");
    QVERIFY2(layers.rfind(std::string(kLayersCsvHeader) + "\n", 0) == 0, layers.c_str());
    const std::vector<StatsRow> before = RunRecord(run).statsRows();
    QVERIFY(!before.empty());
    QVERIFY(before.front().counts[static_cast<std::size_t>(QuantClass::Underflow)] > 0);
    writeStep(run, 2, RecordContinuation{0, 1});
    SqliteDb db(run + "/run.sqlite", SqliteDb::Mode::ReadOnly);
    QCOMPARE(db.queryInteger("SELECT value FROM meta WHERE key = 'schema_version'", 0),
             std::int64_t{8});
    QCOMPARE(db.queryInteger("SELECT count(DISTINCT step) FROM stats WHERE flushed > 0", 0),
             std::int64_t{2});
    const std::vector<StatsRow> after = RunRecord(run).statsRows();
    QCOMPARE(after.size(), 2 * before.size());
    QCOMPARE(after.front().counts, before.front().counts);
}

QTEST_MAIN(TestRunRecord)
#include "test_run_record.moc"
