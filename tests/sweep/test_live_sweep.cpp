// SweepProgress (the executor's hooks the CLI's compare and the app's Compare share) and
// LiveSweep (a sweep trained or read on its own thread, polled by a view): events reach the
// progress before the caller's observers; a trained sweep's curves, results and tally; a stopped
// one leaves its runs to do and says so; a folder read back gives the same curves.
#include <QTemporaryDir>
#include <QTest>

#include "sweep/live_sweep.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_progress.h"
#include "sweep/sweep_run.h"
#include "train/train_config.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

using namespace plab;

namespace {

// Two presets, one seed, on the small synthetic data: the sweep the app's Compare makes.
Sweep smallSweep(int steps) {
    TrainConfig base;
    base.syntheticTrain = 600;
    base.syntheticTest = 100;
    base.batchSize = 32;
    Sweep sweep;
    sweep.presets = {"fp32", "fp16-noscale"};
    sweep.seeds = 1;
    sweep.steps = steps;
    sweep.baseline = "fp32";
    nlohmann::json json = base.toJson();
    json["train"].erase("steps");
    json["train"].erase("epochs");
    for (const char* key : {"model", "data", "train"})
        sweep.sets.push_back(std::string(key) + "=" + json[key].dump());
    return sweep;
}

// Waits (at most 60 s) for the sweep's thread to end.
bool ends(const LiveSweep& live) {
    for (int i = 0; i < 6000 && live.running(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return !live.running();
}

} // namespace

class TestLiveSweep : public QObject {
    Q_OBJECT
private slots:
    void progressKeepsEveryEventBeforeTheObservers();
    void trainsDrawsAndReadsBack();
    void stopLeavesTheRunsToDo();
};

void TestLiveSweep::progressKeepsEveryEventBeforeTheObservers() {
    SweepProgress progress(3);
    std::vector<std::string> seen;
    SweepProgress::Observers observers;
    observers.started = [&](std::size_t run) {
        // The observer sees the progress with its own event in it.
        const bool going = progress.runs()[run].phase == SweepProgress::Run::Phase::Going;
        seen.push_back("started " + std::to_string(run) + (going ? " going" : " not going"));
    };
    observers.ended = [&](const RunEnd& end) {
        const bool ended = progress.runs()[end.run].phase == SweepProgress::Run::Phase::Ended;
        seen.push_back("ended " + std::to_string(end.run) + (ended ? " ended" : " not ended"));
    };
    bool asked = false;
    const SweepExecutor::Hooks hooks = progress.hooks(
        [&]() -> std::optional<StopRequest> {
            asked = true;
            return StopRequest{15, "stopped: test"};
        },
        observers);
    hooks.started(0);
    hooks.started(2);
    progress.noteStep(2, 40.0);
    hooks.ended({0, RunEnd::Outcome::Result, {}, false});
    hooks.ended({2, RunEnd::Outcome::Failed, "disk full", true});
    QVERIFY(hooks.stop()->reason == "stopped: test" && asked);
    QVERIFY(!hooks.tick); // none given: the executor skips it
    QCOMPARE(seen, (std::vector<std::string>{"started 0 going", "started 2 going", "ended 0 ended",
                                             "ended 2 ended"}));
    const std::vector<SweepProgress::Run> runs = progress.runs();
    QVERIFY(runs[1].phase == SweepProgress::Run::Phase::ToDo && !runs[1].end);
    QCOMPARE(runs[2].step, 40.0);
    QVERIFY(runs[2].end && runs[2].end->reason == "disk full" && runs[2].end->recordFailed);
    QCOMPARE(progress.ended(RunEnd::Outcome::Result), 1);
    QCOMPARE(progress.ended(RunEnd::Outcome::Failed), 1);
    QCOMPARE(progress.ended(RunEnd::Outcome::Stopped), 0);
}

void TestLiveSweep::trainsDrawsAndReadsBack() {
    QTemporaryDir dir;
    const std::string folder = dir.filePath(QStringLiteral("compare")).toStdString();
    const Sweep sweep = smallSweep(12);
    LiveSweep live;
    live.train(sweep, folder, 2, "stopped: test");
    QVERIFY(ends(live));
    const LiveSweep::Status status = live.status();
    QVERIFY2(status.error.empty(), status.error.c_str());
    QVERIFY(status.training && status.tally && !status.tally->stopRequested);
    QCOMPARE(status.planned, std::size_t{2});
    QCOMPARE(status.done, 2);
    QVERIFY(status.going.empty());
    // Each run's curves are its record's: every step's loss, from step 1 to 12.
    const std::vector<LiveSweep::RunCurves> curves = live.curves();
    QCOMPARE(curves.size(), std::size_t{2});
    for (const LiveSweep::RunCurves& c : curves) {
        QCOMPARE(c.loss.size(), std::size_t{12});
        QCOMPARE(c.loss.back().first, 12.0);
        QVERIFY(!c.flushed.empty());
    }
    const std::optional<SweepResults> results = live.takeResults();
    QVERIFY(results && results->points.size() == 2);
    QVERIFY(!live.takeResults()); // taken once
    // Read back from the folder: the same runs, done, with the same curves.
    LiveSweep reader;
    reader.read(readSweepFile(folder + "/sweep.json"), folder);
    QVERIFY(ends(reader));
    const LiveSweep::Status read = reader.status();
    QVERIFY2(read.error.empty(), read.error.c_str());
    QVERIFY(!read.training && read.stoppedEarly.empty());
    QCOMPARE(read.done, 2);
    const std::vector<LiveSweep::RunCurves> again = reader.curves();
    QCOMPARE(again.size(), std::size_t{2});
    for (std::size_t i = 0; i < again.size(); ++i) {
        QCOMPARE(again[i].point, curves[i].point);
        QVERIFY(again[i].loss == curves[i].loss);
    }
    QVERIFY(reader.takeResults());
}

void TestLiveSweep::stopLeavesTheRunsToDo() {
    QTemporaryDir dir;
    const std::string folder = dir.filePath(QStringLiteral("compare")).toStdString();
    LiveSweep live;
    live.train(smallSweep(1000000), folder, 2, "stopped: the test stopped it");
    // Live: a going run's latest step and its curve grow before any run ends.
    bool stepped = false;
    for (int i = 0; i < 6000 && !stepped; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const LiveSweep::Status s = live.status();
        stepped = !s.going.empty() && s.going.front().step >= 3.0;
    }
    QVERIFY(stepped);
    QVERIFY(live.running());
    QVERIFY(!live.curves().front().loss.empty() || !live.curves().back().loss.empty());
    live.stop();
    QVERIFY(ends(live));
    const LiveSweep::Status status = live.status();
    QVERIFY(status.tally && status.tally->stopRequested);
    QCOMPARE(status.done, 0);
    for (const SweepRun& r : planSweepRuns(smallSweep(1000000), folder))
        QVERIFY2(sweepRunState(r.dir, r.config) == SweepRunState::ToRun, r.dir.c_str());
    // Read back: both runs stopped before their end, each with its steps so far.
    LiveSweep reader;
    reader.read(readSweepFile(folder + "/sweep.json"), folder);
    QVERIFY(ends(reader));
    QCOMPARE(reader.status().stoppedEarly.size(), std::size_t{2});
    QCOMPARE(reader.status().done, 0);
}

QTEST_GUILESS_MAIN(TestLiveSweep)
#include "test_live_sweep.moc"
