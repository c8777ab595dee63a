// TrainingSession: commands at step boundaries, snapshots and scalars published without the
// reader blocking the worker, the run directory's files, and divergence stopping the run.
#include <QTemporaryDir>
#include <QTest>

#include "session_test_support.h"
#include "train/training_session.h"

#include <chrono>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

using namespace plab;
using namespace plab::testing;

class TestSession : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void recordNumbersSayNanAndInf();
    void stepPauseAndScale();
    void completeRunWritesLogs();
    void stopKeepsCompletedSteps();
    void divergenceStopsCleanly();
    void policySwitchesMidRun();
    void editsAreTheRunsConfigAndSurviveReset();
    void timelineReplaysTheRunBitForBit();

private:
    std::shared_ptr<const DataSplit> m_data;
};

namespace {

TrainConfig smallConfig(std::int64_t steps) {
    return configFromJson(
        {{"model", {{"hidden", {32}}}}, {"train", {{"steps", steps}, {"batch_size", 32}}}});
}

int lineCount(const std::string& path) {
    std::ifstream f(path);
    int n = 0;
    for (std::string line; std::getline(f, line);)
        ++n;
    return n;
}

} // namespace

void TestSession::initTestCase() {
    m_data = std::make_shared<const DataSplit>(makeSyntheticData(2, 1000, 200));
}

void TestSession::stepPauseAndScale() {
    TrainingSession session(smallConfig(1000), m_data);
    QVERIFY(session.latestSnapshot() == nullptr);
    session.stepOnce();
    QVERIFY(waitFor([&] { return session.state() == SessionState::Paused; }));
    const TrainingSnapshot* snap = session.latestSnapshot();
    QVERIFY(snap != nullptr);
    QCOMPARE(snap->scalars.step, std::int64_t{1});
    QCOMPARE(static_cast<int>(snap->stages.size()), 2);
    QVERIFY(snap->stages[0].role(TensorRole::ActivationGradients).total() > 0);
    QCOMPARE(snap->stageNames.size(), std::size_t{2});
    session.setLossScale(8.0); // takes effect at the next step
    session.stepOnce();
    QVERIFY(waitFor([&] { return session.latestSnapshot()->scalars.step == 2; }));
    QCOMPARE(session.latestSnapshot()->scalars.scale, 8.0);
    auto first = session.popScalars(), second = session.popScalars();
    QVERIFY(first && second);
    QCOMPARE(first->scale, 1.0);
    QCOMPARE(second->scale, 8.0);
    QVERIFY(!session.popScalars());
    session.start();
    QVERIFY(waitFor([&] { return session.latestSnapshot()->scalars.step > 5; }));
    session.pause();
    QVERIFY(waitFor([&] { return session.state() == SessionState::Paused; }));
    const std::int64_t at = session.latestSnapshot()->scalars.step;
    // Paused means no more steps: the worker goes round its loop (it takes two commands, one
    // after the other) and steps no further. A state to wait on, not a sleep a loaded machine
    // may not honour.
    for (int i = 0; i < 2; ++i) {
        session.setLossScale(1.0);
        session.waitForCommands();
    }
    QCOMPARE(session.state(), SessionState::Paused);
    QCOMPARE(session.latestSnapshot()->scalars.step, at);
    session.reset();
    session.stepOnce();
    QVERIFY(waitFor([&] { return session.latestSnapshot()->scalars.step == 1; }));
}

// A NaN loss is written "nan", never an empty cell (which means "not evaluated"); numbers read
// back as the same double.
void TestSession::recordNumbersSayNanAndInf() {
    QCOMPARE(recordNumber(std::numeric_limits<double>::quiet_NaN()), std::string("nan"));
    QCOMPARE(recordNumber(std::numeric_limits<double>::infinity()), std::string("inf"));
    QCOMPARE(recordNumber(-std::numeric_limits<double>::infinity()), std::string("-inf"));
    for (double v : {0.1, 1.0 / 3.0, 65504.0, 5e-324, -2.5e300})
        QCOMPARE(std::strtod(recordNumber(v).c_str(), nullptr), v);
}

void TestSession::completeRunWritesLogs() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    {
        TrainingSession session(smallConfig(12), m_data, run);
        session.start();
        session.waitUntilDone();
        QCOMPARE(session.state(), SessionState::Finished);
    }
    QCOMPARE(lineCount(run + "/metrics.csv"), 1 + 12);
    QCOMPARE(lineCount(run + "/layers.csv"), 1 + 12 * 2 * 6); // steps x stages x roles
    QVERIFY(lineCount(run + "/histograms.csv") > 12);
    // Histograms go to disk every histograms_every (20) statistics steps: here step 1's only.
    {
        std::ifstream h(run + "/histograms.csv");
        std::string line;
        std::getline(h, line);
        while (std::getline(h, line))
            QVERIFY2(line.rfind("1,", 0) == 0, line.c_str());
    }
    const auto summary = nlohmann::json::parse(readAll(run + "/summary.json"));
    QCOMPARE(summary["finished"].get<bool>(), true);
    QCOMPARE(summary["steps"].get<int>(), 12);
    QVERIFY(summary["test_accuracy"].get<double>() > 0.0);
    // config.json replays the run.
    const TrainConfig replay = configFromJson(nlohmann::json::parse(readAll(run + "/config.json")));
    QCOMPARE(replay.toJson().dump(), smallConfig(12).toJson().dump());
}

void TestSession::stopKeepsCompletedSteps() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    std::int64_t steps = 0;
    {
        TrainingSession session(smallConfig(100000), m_data, run);
        session.start();
        QVERIFY(waitFor([&] {
            auto* s = session.latestSnapshot();
            return s && s->scalars.step >= 5;
        }));
        session.stop();
        session.waitUntilDone();
        QCOMPARE(session.state(), SessionState::Stopped);
        steps = session.latestSnapshot()->scalars.step;
    }
    QCOMPARE(lineCount(run + "/metrics.csv"), 1 + static_cast<int>(steps));
    const auto summary = nlohmann::json::parse(readAll(run + "/summary.json"));
    QCOMPARE(summary["finished"].get<bool>(), false);
    QVERIFY(summary["stop_reason"].get<std::string>().find("stopped") != std::string::npos);
}

void TestSession::divergenceStopsCleanly() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    TrainConfig c = smallConfig(100);
    c.recipe.roles[static_cast<std::size_t>(TensorRole::WeightGradients)] =
        QuantConfig{parseFormat("fp8-e4m3"), Rounding::NearestEven, Overflow::Inf};
    c.lossScale = 1e12;
    TrainingSession session(c, m_data, run);
    session.start();
    session.waitUntilDone();
    QCOMPARE(session.state(), SessionState::Diverged);
    QVERIFY2(session.stopReason().find("diverged at step 1") != std::string::npos,
             session.stopReason().c_str());
    QVERIFY(readAll(run + "/events.jsonl").find("\"divergence\"") != std::string::npos);
}

void TestSession::policySwitchesMidRun() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    TrainingSession session(smallConfig(1000), m_data, run);
    session.stepOnce();
    QVERIFY(waitFor([&] {
        auto* s = session.latestSnapshot();
        return s && s->scalars.step == 1;
    }));
    QCOMPARE(session.latestSnapshot()->scalars.scale, 1.0);
    TrainConfig dynamic = smallConfig(1000);
    dynamic.scalingPolicy = ScalingPolicy::Dynamic;
    dynamic.lossScale = 1024.0;
    dynamic.dynamic.growthInterval = 2;
    session.setScaling(dynamic);
    for (int i = 0; i < 3; ++i)
        session.stepOnce();
    QVERIFY(waitFor([&] { return session.latestSnapshot()->scalars.step == 4; }));
    // Steps 2 and 3 at 2^10, then two clean steps grew it: step 4 ran at 2^11.
    QCOMPARE(session.latestSnapshot()->scalars.scale, 2048.0);
    session.stop();
    session.waitUntilDone();
    const std::string events = readAll(run + "/events.jsonl");
    QVERIFY(events.find("scaling policy set to dynamic") != std::string::npos);
    QVERIFY(events.find("2 clean steps: scale 2^10 -> 2^11") != std::string::npos);
}

// Mid-run edits are the run's effective config: a reset trains with them, later layers.csv rows
// name the new formats, the event says what changed, and a recipe for a stage the model lacks is
// refused on the caller's thread without touching the run.
void TestSession::editsAreTheRunsConfigAndSurviveReset() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    TrainingSession session(smallConfig(1000), m_data, run);
    session.stepOnce();
    QVERIFY(waitFor([&] { return session.state() == SessionState::Paused; }));
    PrecisionRecipe recipe;
    recipe.roles[static_cast<std::size_t>(TensorRole::Weights)] =
        QuantConfig::forFormat(parseFormat("fp8-e4m3"));
    session.setLearningRate(0.02);
    session.setRecipe(recipe);
    PrecisionRecipe bad = recipe;
    bad.stageOverrides[7] = {};
    QVERIFY_THROWS_EXCEPTION(ConfigError, session.setRecipe(bad));
    session.reset();
    session.stepOnce();
    // The reset run's first step (the snapshot before it is the old run's step 1 at 0.05).
    QVERIFY(waitFor([&] {
        const TrainingSnapshot* s = session.latestSnapshot();
        return s && s->scalars.step == 1 && s->scalars.learningRate == 0.02;
    }));
    const TrainConfig effective = session.effectiveConfig();
    QCOMPARE(effective.learningRate, 0.02);
    QCOMPARE(effective.recipe, recipe);
    QCOMPARE(session.latestSnapshot()->scalars.learningRate, 0.02); // the reset run uses it
    session.stop();
    session.waitUntilDone();
    const std::string layers = readAll(run + "/layers.csv");
    QVERIFY2(layers.find(",weights,fp8-e4m3,") != std::string::npos, layers.substr(0, 400).c_str());
    const std::string events = readAll(run + "/events.jsonl");
    QVERIFY2(events.find("precision recipe changed: recipe.weights.format: fp32 -> fp8-e4m3") !=
                 std::string::npos,
             events.c_str());
    QVERIFY(events.find("learning rate set to 0.02") != std::string::npos);
}

// Edits made while a run goes are its config.json's timeline; a run started from that file
// makes them at the same steps and repeats the run bit for bit (losses, formats), and its own
// config.json is the same file.
void TestSession::timelineReplaysTheRunBitForBit() {
    QTemporaryDir dir;
    const std::string first = dir.path().toStdString() + "/first";
    const std::string second = dir.path().toStdString() + "/second";
    PrecisionRecipe fp8;
    fp8.roles[static_cast<std::size_t>(TensorRole::ActivationGradients)] =
        QuantConfig::forFormat(parseFormat("fp8-e5m2"));
    {
        TrainingSession session(smallConfig(1000), m_data, first);
        stepTo(session, 3);
        session.setLearningRate(0.02);
        session.setRecipe(fp8);
        stepTo(session, 6);
        session.setLossScale(16.0);
        stepTo(session, 8);
        session.stop();
        session.waitUntilDone();
    }
    const std::string savedText = readAll(first + "/config.json");
    const TrainConfig saved = configFromJson(nlohmann::json::parse(savedText));
    // The two edits at step 3 are one entry (edits at one step coalesce).
    QCOMPARE(saved.timeline.size(), std::size_t{2});
    QCOMPARE(saved.timeline[0].step, std::int64_t{3});
    QVERIFY(saved.timeline[0].set.contains("train") && saved.timeline[0].set.contains("recipe"));
    QCOMPARE(saved.timeline[1].step, std::int64_t{6});
    QCOMPARE(saved.learningRate, 0.05); // the start, not the end
    {
        TrainingSession replay(saved, m_data, second);
        stepTo(replay, 8);
        QCOMPARE(replay.effectiveConfig().learningRate, 0.02);
        replay.stop();
        replay.waitUntilDone();
    }
    const std::string a = readAll(first + "/metrics.csv"), b = readAll(second + "/metrics.csv");
    QCOMPARE(column(b, 2), column(a, 2)); // losses, as shortest round-trip text
    QCOMPARE(column(b, 4), column(a, 4)); // scales
    QCOMPARE(column(b, 7), column(a, 7)); // learning rates
    QCOMPARE(column(readAll(second + "/layers.csv"), 4), column(readAll(first + "/layers.csv"), 4));
    QCOMPARE(readAll(second + "/config.json"), savedText);
}

QTEST_APPLESS_MAIN(TestSession)
#include "test_session.moc"
