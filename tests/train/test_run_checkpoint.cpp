// Checkpoints: a run stopped and resumed takes the steps the uninterrupted run takes, bit for bit
// (the MLP's trainer and the GPT; stochastic rounding, enhanced and dynamic loss scaling, delayed
// scaling's amax histories, Adam's moments, the data order across an epoch boundary); a session
// writes one when stopped, removes it when the run ends otherwise or is reset, continues the
// record with each step once, and refuses a checkpoint of another config or a damaged file with
// a reason naming it.
#include <QTemporaryDir>
#include <QTest>

#include "session_test_support.h"
#include "train/presets.h"

#include "engine/cpu_ops.h"
#include "record/record_error.h"
#include "record/run_record.h"
#include "train/gpt_trainer.h"
#include "train/run_checkpoint.h"
#include "train/run_data.h"
#include "train/trainer.h"
#include "train/training_session.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

using namespace plab;
using namespace plab::testing;

class TestRunCheckpoint : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void fileRoundTripsAndRefusesDamage();
    void refusesWhatIsNotACheckpointFile();
    void trainerResumesBitForBit_data();
    void trainerResumesBitForBit();
    void gptResumesBitForBit();
    void sessionStopsResumesAndRecordsEachStepOnce();
    void sessionRefusesWhatItCannotResume();

private:
    std::shared_ptr<const DataSplit> m_data;
};

namespace {

TrainConfig withPreset(const char* preset, const nlohmann::json& settings) {
    nlohmann::json merged = findPreset(preset).json;
    mergeConfig(merged, settings);
    return configFromJson(merged);
}

// 160 training samples in batches of 32: an epoch is 5 steps, so 12 steps cross two epoch
// boundaries (the data order is shuffled again at each).
nlohmann::json smallMlp(std::int64_t steps) {
    return {{"model", {{"hidden", {24}}}},
            {"train", {{"steps", steps}, {"batch_size", 32}, {"stats_every", 3}}}};
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string readAllBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void writeAllBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

template <class F>
QString errorOf(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

} // namespace

void TestRunCheckpoint::initTestCase() {
    m_data = std::make_shared<const DataSplit>(makeSyntheticData(3, 160, 64));
}

// A checkpoint is read only once it is known to be a regular file with the magic and of a size
// memory can hold (issue 65 item 7): a FIFO hung `train --resume` past its signals, a link to
// /dev/zero grew to a gigabyte in seconds, and a huge file was read whole before it was refused.
void TestRunCheckpoint::refusesWhatIsNotACheckpointFile() {
    QTemporaryDir dir;
    const std::string base = dir.path().toStdString();
    const std::string fifo = base + "/fifo.bin";
    QVERIFY(::mkfifo(fifo.c_str(), 0644) == 0);
    QVERIFY2(errorOf([&] { RunCheckpoint::read(fifo); }).contains("is a FIFO, not a regular file"),
             qPrintable(errorOf([&] { RunCheckpoint::read(fifo); })));
    const std::string zero = base + "/zero.bin";
    QVERIFY(::symlink("/dev/zero", zero.c_str()) == 0);
    QVERIFY(errorOf([&] { RunCheckpoint::read(zero); }).contains("is a symbolic link"));
    QVERIFY(errorOf([&] { RunCheckpoint::read(base); }).contains("is a folder"));
    // 256 GiB with the magic, sparse on disk: refused by its size, not read.
    const std::string huge = base + "/huge.bin";
    writeAllBytes(huge, "PLABCKPT");
    std::filesystem::resize_file(huge, std::uintmax_t{256} << 30);
    const QString tooLarge = errorOf([&] { RunCheckpoint::read(huge); });
    QVERIFY2(tooLarge.contains("more than half the memory"), qPrintable(tooLarge));
    // Without the magic: refused after reading eight bytes.
    std::filesystem::resize_file(huge, 0);
    writeAllBytes(huge, "NOTACKPT");
    std::filesystem::resize_file(huge, std::uintmax_t{256} << 30);
    QVERIFY(
        errorOf([&] { RunCheckpoint::read(huge); }).contains("is not a Precision Lab checkpoint"));
    std::filesystem::remove(huge);
}

void TestRunCheckpoint::fileRoundTripsAndRefusesDamage() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/checkpoint.bin";
    RunCheckpoint c;
    c.header["step"] = 7;
    const std::vector<float> values{1.0f, -0.0f, std::numeric_limits<float>::denorm_min(),
                                    std::numeric_limits<float>::quiet_NaN()};
    c.putFloats("values", values);
    c.putWords("order", {3, 1, 2});
    c.write(path);
    const RunCheckpoint back = RunCheckpoint::read(path);
    QCOMPARE(back.header.at("step").get<int>(), 7);
    QVERIFY(sameBits(back.floats("values", 4), values)); // -0 and the NaN's bits too
    QCOMPARE(back.words("order"), (std::vector<std::uint64_t>{3, 1, 2}));
    QVERIFY(errorOf([&] { back.floats("values", 5); }).contains("holds 4 values"));
    QVERIFY(errorOf([&] { back.bytes("absent"); }).contains("\"absent\" is missing"));

    const std::string bytes = readAllBytes(path);
    std::string flipped = bytes;
    flipped[bytes.size() / 2] ^= 0x10;
    writeAllBytes(path, flipped);
    QVERIFY(errorOf([&] { RunCheckpoint::read(path); }).contains("checksum does not match"));
    writeAllBytes(path, bytes.substr(0, bytes.size() - 3));
    QVERIFY(!errorOf([&] { RunCheckpoint::read(path); }).isEmpty());
    writeAllBytes(path, "{\"not\": \"a checkpoint\"}");
    QCOMPARE(errorOf([&] { RunCheckpoint::read(path); }),
             QString::fromStdString(path + ": is not a Precision Lab checkpoint"));
}

void TestRunCheckpoint::trainerResumesBitForBit_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("settings");
    // Stochastic rounding on gradients and on the FP16 master update, enhanced scaling.
    QTest::newRow("mellempudi") << "fp8-e5m2-mellempudi"
                                << "{}";
    // Delayed scaling: each tensor's scale from the history of its amaxes.
    QTest::newRow("delayed amax") << "fp8-hybrid-delayed"
                                  << R"({"scaling": {"amax_history": 4}})";
    // Per-layer scaling (issue 63 item 1): a dynamic loss scale for the run, the first layer's
    // tensors from its own delayed amax history (of 3), the last in NVFP4 blocks.
    QTest::newRow("per-layer scaling") << "fp16-amp"
                                       << R"({"recipe": {"weights": "fp8-e4m3",
              "activations": "fp8-e4m3", "activation_gradients": "fp8-e5m2",
              "overrides": [{"stage": 0, "scaling": {"policy": "amax-delayed",
                                                     "amax_history": 3}},
                            {"stage": -1, "weights": "fp4-e2m1", "activations": "fp4-e2m1",
                             "activation_gradients": "fp4-e2m1",
                             "scaling": {"policy": "nvfp4"}}]}})";
    // Adam's two moments; a dynamic scale that grows every 2 clean steps and backs off.
    QTest::newRow("adam, dynamic") << "fp16-amp"
                                   << R"({"train": {"optimizer": "adam", "lr": 0.01},
              "scaling": {"growth_interval": 2, "scale": 1048576}})";
}

void TestRunCheckpoint::trainerResumesBitForBit() {
    QFETCH(QString, preset);
    QFETCH(QString, settings);
    nlohmann::json j = smallMlp(12);
    mergeConfig(j, nlohmann::json::parse(settings.toStdString()));
    const TrainConfig config = withPreset(preset.toUtf8().constData(), j);

    Trainer straight(config, m_data, std::make_unique<CpuOps>());
    std::vector<double> losses;
    int updates = 0;
    for (int i = 0; i < 12; ++i) {
        const StepResult r = straight.step();
        losses.push_back(r.scalars.loss);
        updates += r.scalars.skipped ? 0 : 1;
    }
    QVERIFY2(updates >= 6, "most steps update the weights (else the test shows nothing)");

    RunCheckpoint checkpoint;
    {
        Trainer first(config, m_data, std::make_unique<CpuOps>());
        for (int i = 0; i < 7; ++i)
            QVERIFY(first.step().scalars.loss == losses[static_cast<std::size_t>(i)]);
        first.saveState(checkpoint);
    }
    Trainer resumed(config, m_data, std::make_unique<CpuOps>());
    resumed.restoreState(checkpoint);
    QCOMPARE(resumed.stepsTaken(), std::int64_t{7});
    for (int i = 7; i < 12; ++i) {
        const StepResult r = resumed.step();
        QCOMPARE(r.scalars.step, std::int64_t{i + 1});
        QVERIFY2(r.scalars.loss == losses[static_cast<std::size_t>(i)], // exactly, not fuzzily
                 qPrintable(QString("step %1").arg(i + 1)));
    }
    QCOMPARE(resumed.epoch(), straight.epoch());
    QVERIFY(resumed.scaler().scale() == straight.scaler().scale());
    QVERIFY(sameBits(resumed.masterWeights(), straight.masterWeights()));
}

void TestRunCheckpoint::gptResumesBitForBit() {
    nlohmann::json j = {
        {"model", {{"type", "gpt"}, {"context", 16}, {"width", 32}, {"heads", 2}, {"blocks", 1}}},
        {"train", {{"steps", 9}, {"batch_size", 8}, {"stats_every", 2}}},
        {"scaling", {{"amax_history", 3}}}};
    const TrainConfig config = withPreset("fp8-hybrid-delayed", j);
    const auto data = loadRunData(config);
    GptTrainer straight(config, data);
    std::vector<double> losses;
    for (int i = 0; i < 9; ++i)
        losses.push_back(straight.step().scalars.loss);
    RunCheckpoint checkpoint;
    {
        GptTrainer first(config, data);
        for (int i = 0; i < 4; ++i)
            first.step();
        first.saveState(checkpoint);
    }
    GptTrainer resumed(config, data);
    resumed.restoreState(checkpoint);
    for (int i = 4; i < 9; ++i)
        QVERIFY(resumed.step().scalars.loss == losses[static_cast<std::size_t>(i)]);
    QVERIFY(sameBits(resumed.run().parameters(), straight.run().parameters()));
}

void TestRunCheckpoint::sessionStopsResumesAndRecordsEachStepOnce() {
    QTemporaryDir dir;
    dir.setAutoRemove(qEnvironmentVariableIsEmpty("PLAB_KEEP_TEST_RUNS"));
    const std::string whole = dir.path().toStdString() + "/whole";
    const std::string stopped = dir.path().toStdString() + "/stopped";
    const TrainConfig config = withPreset("fp8-e5m2-mellempudi", smallMlp(12));
    {
        TrainingSession session(config, m_data, whole);
        session.start();
        session.waitUntilDone();
        QCOMPARE(session.state(), SessionState::Finished);
    }
    QVERIFY(!std::filesystem::exists(whole + "/" + kCheckpointFile));
    {
        TrainingSession session(config, m_data, stopped);
        stepTo(session, 5);
        session.setLearningRate(0.05); // an edit on the timeline: carried through the resume
        stepTo(session, 6);
        session.stop();
        session.waitUntilDone();
    }
    QVERIFY(std::filesystem::exists(stopped + "/" + kCheckpointFile));
    {
        // A checkpoint is used only when asked for: a plain start is still refused.
        QVERIFY(errorOf([&] {
                    TrainingSession s(config, m_data, stopped);
                }).contains("holds an earlier run"));
        TrainingSession session(config, m_data, stopped, RunLogOptions{.resume = true});
        QCOMPARE(session.resumedFrom(), std::int64_t{6});
        session.start();
        session.waitUntilDone();
        QCOMPARE(session.state(), SessionState::Finished);
        QCOMPARE(session.finalSummary().steps, std::int64_t{12});
    }
    QVERIFY(!std::filesystem::exists(stopped + "/" + kCheckpointFile)); // finished: none left
    const RunRecord a(whole), b(stopped);
    const std::vector<StepScalars> wholeSteps = a.steps(), resumedSteps = b.steps();
    QCOMPARE(resumedSteps.size(), std::size_t{12}); // each step once
    for (std::size_t i = 0; i < 12; ++i) {
        QCOMPARE(resumedSteps[i].step, static_cast<std::int64_t>(i + 1));
        QVERIFY(resumedSteps[i].loss == wholeSteps[i].loss);
        QVERIFY(resumedSteps[i].scale == wholeSteps[i].scale);
    }
    QVERIFY(readAll(stopped + "/events.jsonl").find("resumed from the checkpoint of step 6") !=
            std::string::npos);
    // The edit made before the stop is in the config that replays the run.
    const TrainConfig replay =
        configFromJson(nlohmann::json::parse(readAll(stopped + "/config.json")));
    QCOMPARE(replay.timeline.size(), std::size_t{1});
    QCOMPARE(replay.timeline[0].step, std::int64_t{5});
}

void TestRunCheckpoint::sessionRefusesWhatItCannotResume() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    const TrainConfig config = withPreset("fp16-amp", smallMlp(12));
    // Nothing to resume from: refused with the reason, unless overwrite lets it start afresh.
    QVERIFY(errorOf([&] {
                TrainingSession s(config, m_data, run, RunLogOptions{.resume = true});
            }).contains("cannot resume: it holds no checkpoint"));
    {
        TrainingSession session(config, m_data, run, {.overwrite = true, .resume = true});
        QCOMPARE(session.resumedFrom(), std::int64_t{0});
        stepTo(session, 4);
        session.stop();
        session.waitUntilDone();
    }
    // Another config: refused naming what differs.
    TrainConfig other = config;
    other.learningRate = 0.5;
    const QString otherConfig =
        errorOf([&] { TrainingSession s(other, m_data, run, RunLogOptions{.resume = true}); });
    QVERIFY2(otherConfig.contains("cannot resume: its checkpoint is of another config") &&
                 otherConfig.contains("lr"),
             qPrintable(otherConfig));
    // A reset leaves nothing to go on from (the checkpoint was of the attempt before).
    const std::string bytes = readAllBytes(run + "/" + kCheckpointFile);
    {
        TrainingSession session(config, m_data, run, RunLogOptions{.resume = true});
        session.reset();
        session.waitForCommands();
        QVERIFY(!std::filesystem::exists(run + "/" + kCheckpointFile));
        stepTo(session, 2);
        session.stop();
        session.waitUntilDone();
    }
    // A damaged checkpoint: refused naming the file.
    std::string damaged = readAllBytes(run + "/" + kCheckpointFile);
    damaged[damaged.size() / 3] ^= 0x01;
    writeAllBytes(run + "/" + kCheckpointFile, damaged);
    const QString damage =
        errorOf([&] { TrainingSession s(config, m_data, run, RunLogOptions{.resume = true}); });
    QVERIFY2(damage.contains(QString::fromStdString(run + "/" + kCheckpointFile)) &&
                 damage.contains("checksum"),
             qPrintable(damage));
    // One of an earlier attempt put back: the record is past it.
    writeAllBytes(run + "/" + kCheckpointFile, bytes);
    QVERIFY(errorOf([&] {
                TrainingSession s(config, m_data, run, RunLogOptions{.resume = true});
            }).contains("attempt"));
}

QTEST_GUILESS_MAIN(TestRunCheckpoint)
#include "test_run_checkpoint.moc"
