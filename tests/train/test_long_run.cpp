// A long headless run (label `longrun`, not in the default CI run): 100,000 steps through a
// TrainingSession with a reader polling like the GUI's timer, checking that resident memory stays
// flat once warmed up and that the run log is complete: one metrics row per step, in order, the
// per-layer statistics at every statistics step, and a finished summary.
#include <QTemporaryDir>
#include <QTest>

#include "train/training_session.h"

#include <chrono>
#include <fstream>
#include <thread>

using namespace plab;

class TestLongRun : public QObject {
    Q_OBJECT
private slots:
    void hundredThousandStepsStayFlat();
};

namespace {

// Resident set size in KiB, from /proc (Linux).
long residentKiB() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    return -1;
}

} // namespace

void TestLongRun::hundredThousandStepsStayFlat() {
    constexpr std::int64_t kSteps = 100000;
    constexpr int kStatsEvery = 100;
    const TrainConfig config = configFromJson(
        {{"model", {{"hidden", {32}}}},
         {"train", {{"steps", kSteps}, {"batch_size", 32}, {"stats_every", kStatsEvery}}},
         {"recipe", {{"activation_gradients", {{"format", "fp8-e5m2"}}}}},
         {"scaling", {{"policy", "dynamic"}, {"scale", 1024}}}});
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(3, 2000, 200));
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string runDir = dir.filePath(QStringLiteral("run")).toStdString();

    TrainingSession session(config, data, runDir);
    session.start();
    // The GUI's side: ~30 Hz, newest snapshot plus every queued scalar.
    long warmRss = -1, peakRss = 0;
    std::int64_t scalarsSeen = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (session.state() == SessionState::Running || session.state() == SessionState::Idle) {
        std::this_thread::sleep_for(std::chrono::milliseconds(33));
        const TrainingSnapshot* snap = session.latestSnapshot();
        while (session.popScalars())
            ++scalarsSeen;
        if (snap != nullptr && warmRss < 0 && snap->scalars.step >= kSteps / 10)
            warmRss = residentKiB(); // after warm-up: buffers, pools and file buffers exist
        if (warmRss >= 0)
            peakRss = std::max(peakRss, residentKiB());
        QVERIFY2(std::chrono::steady_clock::now() - t0 < std::chrono::minutes(20), "run hangs");
    }
    session.waitUntilDone();
    while (session.popScalars())
        ++scalarsSeen;
    QCOMPARE(session.state(), SessionState::Finished);
    qInfo("RSS after 10%% of the run %ld KiB, peak after %ld KiB; %lld scalars read, %llu dropped",
          warmRss, peakRss, static_cast<long long>(scalarsSeen),
          static_cast<unsigned long long>(session.droppedScalars()));
    QVERIFY(warmRss > 0);
    // Flat: whatever grows per step (a leak of even 100 bytes a step is 9 MB here) shows.
    QVERIFY2(peakRss - warmRss < 4 * 1024, "resident memory grew by more than 4 MiB");
    QCOMPARE(scalarsSeen + static_cast<std::int64_t>(session.droppedScalars()), kSteps);

    // metrics.csv: a header and steps 1..kSteps in order, every row complete.
    std::ifstream metrics(runDir + "/metrics.csv");
    std::string line;
    QVERIFY(std::getline(metrics, line));
    const auto columns = std::count(line.begin(), line.end(), ',');
    std::int64_t expected = 1;
    for (; std::getline(metrics, line); ++expected) {
        QCOMPARE(std::stoll(line.substr(0, line.find(','))), expected);
        QCOMPARE(std::count(line.begin(), line.end(), ','), columns);
    }
    QCOMPARE(expected - 1, kSteps);

    // layers.csv: statistics for step 1 and every kStatsEvery-th step after it, for both stages.
    std::ifstream layers(runDir + "/layers.csv");
    QVERIFY(std::getline(layers, line));
    std::int64_t lastStep = 0, statsSteps = 0;
    while (std::getline(layers, line)) {
        const std::int64_t step = std::stoll(line.substr(0, line.find(',')));
        if (step != lastStep) {
            ++statsSteps;
            lastStep = step;
        }
    }
    QCOMPARE(lastStep, kSteps);
    QVERIFY2(statsSteps >= kSteps / kStatsEvery, "statistics steps missing from layers.csv");

    std::ifstream summaryFile(runDir + "/summary.json");
    const std::string summary(std::istreambuf_iterator<char>(summaryFile), {});
    QVERIFY2(summary.find("\"finished\": true") != std::string::npos, summary.c_str());
    QVERIFY2(summary.find("\"steps\": 100000") != std::string::npos, summary.c_str());
}

QTEST_APPLESS_MAIN(TestLongRun)
#include "test_long_run.moc"
