// The GPT as a TrainingRun: a session trains it from a config like the MLP (statistics for every
// stage and role, channel amax, evaluations with text samples, a run record), replays it bit for
// bit from its config.json with edits on the timeline, and refuses what it cannot run with a
// message naming the key.
#include <QTemporaryDir>
#include <QTest>

#include "data/text_corpus.h"
#include "gpt/gpt_model.h"
#include "recipe/gpt_casts.h"
#include "train/gpt_trainer.h"
#include "train/presets.h"
#include "train/run_data.h"
#include "train/training_session.h"

#include "session_test_support.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

using namespace plab;
using namespace plab::testing;

class TestGptTrainer : public QObject {
    Q_OBJECT
private slots:
    void configReadsTheGptAndItsDefaults();
    void stepsCountEveryStageAndRole();
    void statisticsFollowStatsEvery();
    void evaluationWritesASample();
    void sessionRecordsAndReplaysBitForBit();
    void refusesWhatItCannotRun();
    void overridesByKindAndSite();
    void blockRecipesTileWeightsAndTransformGradients();
};

namespace {

nlohmann::json smallGpt(std::int64_t steps) {
    return {
        {"model", {{"type", "gpt"}, {"context", 16}, {"width", 32}, {"heads", 2}, {"blocks", 1}}},
        {"train", {{"steps", steps}, {"batch_size", 8}, {"eval_every", 5}}}};
}

TrainConfig config(nlohmann::json j, const char* preset = nullptr) {
    nlohmann::json merged = preset ? findPreset(preset).json : nlohmann::json::object();
    mergeConfig(merged, j);
    return configFromJson(merged);
}

} // namespace

void TestGptTrainer::configReadsTheGptAndItsDefaults() {
    const TrainConfig c = configFromJson({{"model", {{"type", "gpt"}}}});
    // The peer's recipe unless given.
    QCOMPARE(c.optimizer, OptimizerKind::AdamW);
    QCOMPARE(c.learningRate, 1e-3);
    QCOMPARE(c.beta2, 0.95);
    QCOMPARE(c.weightDecay, 0.1);
    QCOMPARE(c.batchSize, 32);
    QCOMPARE(c.model.context, 64);
    // The shape is written and read back; the MLP's config.json does not grow GPT keys.
    const TrainConfig shaped = config(smallGpt(3));
    QCOMPARE(configFromJson(shaped.toJson()), shaped);
    QCOMPARE(shaped.toJson()["model"]["width"].get<int>(), 32);
    const TrainConfig mlp;
    QVERIFY(!mlp.toJson()["model"].contains("width"));
    QVERIFY_THROWS_EXCEPTION(
        ConfigError, configFromJson({{"model", {{"type", "gpt"}, {"width", 30}, {"heads", 4}}}}));
}

void TestGptTrainer::stepsCountEveryStageAndRole() {
    const TrainConfig c = config(smallGpt(3), "fp8-hybrid-delayed");
    GptTrainer run(c, loadRunData(c));
    QCOMPARE(run.stageNames(),
             (std::vector<std::string>{"block0.attention", "block0.mlp", "head"}));
    const StepResult r = run.step();
    QVERIFY(r.statsCollected);
    QCOMPARE(r.statsStep, std::int64_t{1});
    QVERIFY(std::isfinite(r.scalars.loss) && r.scalars.loss > 4.0); // about ln 256 at the start
    QVERIFY(r.scalars.accuracy >= 0.0 && r.scalars.accuracy <= 1.0);
    const std::vector<StageStats>& stats = run.stageStats();
    QCOMPARE(stats.size(), std::size_t{3});
    for (const StageStats& s : stats) {
        for (TensorRole role : kAllRoles)
            QVERIFY2(s.role(role).total() > 0, toString(role).data());
        QCOMPARE(s.channelAmax.size(), std::size_t{32}); // the stage input's channels
        QVERIFY(*std::max_element(s.channelAmax.begin(), s.channelAmax.end()) > 0.0f);
        QVERIFY(s.updates > 0);
    }
    // The hybrid recipe: delayed amax scaling of each tensor (a scale other than 1 recorded).
    QVERIFY(stats[0].tensorScale[static_cast<std::size_t>(TensorRole::Activations)] != 1.0);
}

void TestGptTrainer::statisticsFollowStatsEvery() {
    nlohmann::json j = smallGpt(6);
    j["train"]["stats_every"] = 3;
    const TrainConfig c = config(j);
    GptTrainer run(c, loadRunData(c));
    std::vector<std::int64_t> collected;
    std::uint64_t weights = 0;
    for (int i = 0; i < 6; ++i) {
        const StepResult r = run.step();
        if (r.statsCollected) {
            collected.push_back(r.statsStep);
            // One step's casts, not the sum since the last statistics step.
            const std::uint64_t w = run.stageStats()[0].role(TensorRole::Weights).total();
            QVERIFY(weights == 0 || w == weights);
            weights = w;
        }
    }
    QCOMPARE(collected, (std::vector<std::int64_t>{3, 6}));
    QVERIFY(weights > 0);
}

void TestGptTrainer::evaluationWritesASample() {
    const TrainConfig c = config(smallGpt(2));
    GptTrainer run(c, loadRunData(c));
    run.step();
    const Evaluation e = run.evaluate();
    QVERIFY(std::isfinite(e.loss) && e.loss > 0.0);
    QVERIFY(e.accuracy >= 0.0 && e.accuracy <= 1.0);
    // The validation text's first line as the prompt, then 160 bytes, all printable.
    QVERIFY(e.sample.size() > 160);
    for (char ch : e.sample)
        QVERIFY(ch == '\n' || (ch >= 32 && ch <= 126));
    // Sampling does not disturb training: the next step is the one a run without it takes.
    GptTrainer plain(c, loadRunData(c));
    plain.step();
    QCOMPARE(run.step().scalars.loss, plain.step().scalars.loss);
}

void TestGptTrainer::sessionRecordsAndReplaysBitForBit() {
    QTemporaryDir dir;
    dir.setAutoRemove(qEnvironmentVariableIsEmpty("PLAB_KEEP_TEST_RUNS"));
    const std::string first = dir.path().toStdString() + "/first";
    const std::string second = dir.path().toStdString() + "/second";
    const TrainConfig start = config(smallGpt(1000), "bf16");
    const auto data = loadRunData(start);
    {
        TrainingSession session(start, data, first);
        QCOMPARE(session.stageNames().size(), std::size_t{3});
        stepTo(session, 3);
        session.setLearningRate(2e-3);
        session.setScaling(config(smallGpt(1000), "fp8-hybrid-delayed"));
        stepTo(session, 6);
        session.setLossScale(64.0);
        stepTo(session, 8);
        QVERIFY(waitFor([&] { return !session.latestSnapshot()->sample.empty(); }));
        QCOMPARE(session.latestSnapshot()->sampleStep, std::int64_t{5});
        session.stop();
        session.waitUntilDone();
    }
    const std::string savedText = readAll(first + "/config.json");
    const TrainConfig saved = configFromJson(nlohmann::json::parse(savedText));
    QCOMPARE(saved.timeline.size(), std::size_t{2}); // the two edits at step 3 are one
    QCOMPARE(saved.model.type, std::string("gpt"));
    {
        TrainingSession replay(saved, loadRunData(saved), second);
        stepTo(replay, 8);
        replay.stop();
        replay.waitUntilDone();
    }
    const std::string metrics = readAll(first + "/metrics.csv");
    QVERIFY(std::count(metrics.begin(), metrics.end(), '\n') == 9); // a header and 8 steps
    // Every step trains (BF16 tensors under amax scaling take no scale; they once took an Inf
    // one), and the replay repeats the losses, scales and skips (the speed column differs).
    for (const std::string& skipped : column(metrics, 5))
        QCOMPARE(skipped, std::string("0"));
    QCOMPARE(column(readAll(second + "/metrics.csv"), 2), column(metrics, 2));
    QCOMPARE(column(readAll(second + "/metrics.csv"), 4), column(metrics, 4));
    QCOMPARE(column(readAll(second + "/metrics.csv"), 5), column(metrics, 5));
    QCOMPARE(readAll(second + "/layers.csv"), readAll(first + "/layers.csv"));
    // Channel amax per statistics step (every step) and stage: 8 x 3 rows under the header.
    const std::string channels = readAll(first + "/channels.csv");
    QCOMPARE(std::count(channels.begin(), channels.end(), '\n'), 1 + 8 * 3);
    QVERIFY2(channels.find("\n1,0,block0.attention,32,") != std::string::npos, channels.c_str());
    const std::string events = readAll(first + "/events.jsonl");
    QVERIFY2(events.find("\"type\":\"sample\"") != std::string::npos, events.c_str());
    QCOMPARE(readAll(second + "/config.json"), savedText);
}

void TestGptTrainer::refusesWhatItCannotRun() {
    const auto refused = [](nlohmann::json j, const std::string& key) {
        try {
            const TrainConfig c = config(j);
            GptTrainer run(c, loadRunData(c));
        } catch (const ConfigError& e) {
            return std::string(e.what()).find(key) != std::string::npos;
        }
        return false;
    };
    nlohmann::json sgd = smallGpt(1);
    sgd["train"]["optimizer"] = "sgd";
    QVERIFY(refused(sgd, "config.train.optimizer"));
    nlohmann::json images = smallGpt(1);
    images["data"]["source"] = "fashion-mnist";
    QVERIFY(refused(images, "config.data.source"));
    QVERIFY_THROWS_EXCEPTION(
        ConfigError, loadRunData(configFromJson({{"data", {{"source", "text:/etc/hostname"}}}})));
    QVERIFY_THROWS_EXCEPTION(DataError,
                             loadRunData(config({{"data", {{"source", "text:/nonexistent"}}},
                                                 {"model", {{"type", "gpt"}}}})));
}

// A recipe keeps the softmax in BF16, the head in FP32 and stage 0 in FP16 over FP8 elsewhere:
// each cast takes the most specific setting (a site's, a stage index's, a stage kind's, the
// role's), and the embedding tables stay FP32 unless a kind sets them.
void TestGptTrainer::overridesByKindAndSite() {
    nlohmann::json j = smallGpt(1);
    j["recipe"] = {{"activations", "fp8-e4m3"},
                   {"weights", "fp8-e4m3"},
                   {"overrides",
                    {{{"kind", "softmax"}, {"activations", "bf16"}},
                     {{"kind", "head"}, {"activations", "fp32"}},
                     {{"kind", "mlp"}, {"activations", "fp16"}},
                     {{"stage", 1}, {"activations", "fp8-e5m2"}},
                     {{"stage", 0}, {"activations", "fp16"}}}}};
    const TrainConfig c = config(j);
    QCOMPARE(configFromJson(c.toJson()), c); // kind overrides are written and read back
    const transformer::GptModel model({256, 16, 32, 2, 1});
    GptRecipeCasts casts(c, model);
    using transformer::GptSite;
    // 1 + 2^-8: exact in FP16 and FP32; 1 in BF16, E4M3 and E5M2 (a tie, to even).
    const auto cast = [&](int stage, TensorRole operand, GptSite site) {
        float v = 1.00390625f;
        casts.cast(stage, operand, site, {&v, 1}, {}); // the CPU engine's memory: the host's
        return v;
    };
    QCOMPARE(cast(0, TensorRole::Activations, GptSite::Product), 1.00390625f);    // stage 0: fp16
    QCOMPARE(cast(0, TensorRole::Activations, GptSite::Probabilities), 1.0f);     // softmax: bf16
    QCOMPARE(cast(0, TensorRole::Activations, GptSite::NormOutput), 1.00390625f); // no norm kind
    QCOMPARE(cast(1, TensorRole::Activations, GptSite::Product), 1.0f); // stage 1 beats mlp kind
    QCOMPARE(cast(2, TensorRole::Activations, GptSite::Product), 1.00390625f); // head: fp32
    QCOMPARE(cast(2, TensorRole::Weights, GptSite::Product), 1.0f);            // fp8 weights
    QCOMPARE(cast(0, TensorRole::Weights, GptSite::Embedding), 1.00390625f);   // FP32 tables
    // A softmax cast keeps its own format: 1 + 2^-6 is BF16-exact, not E4M3's.
    float v = 1.015625f;
    casts.cast(0, TensorRole::Activations, GptSite::Probabilities, {&v, 1}, {});
    QCOMPARE(v, 1.015625f);

    // Kinds set only their roles, only known kinds, and only on the GPT.
    nlohmann::json wrongRole = smallGpt(1);
    wrongRole["recipe"] = {{"overrides", {{{"kind", "norm"}, {"weights", "bf16"}}}}};
    QVERIFY_THROWS_EXCEPTION(ConfigError, config(wrongRole));
    nlohmann::json unknown = smallGpt(1);
    unknown["recipe"] = {{"overrides", {{{"kind", "layernorm"}, {"activations", "bf16"}}}}};
    QVERIFY_THROWS_EXCEPTION(ConfigError, config(unknown));
    nlohmann::json mlp = {{"recipe", {{"overrides", {{{"kind", "head"}, {"weights", "bf16"}}}}}}};
    QVERIFY_THROWS_EXCEPTION(
        ConfigError, makeTrainingRun(configFromJson(mlp), loadRunData(configFromJson(mlp))));
}

QTEST_APPLESS_MAIN(TestGptTrainer)
#include "test_gpt_trainer.moc"

// The GPT casts through the trainer's RecipeCaster: NVFP4's weights in 16x16 tiles (one block a
// tile, not one per 16 values of a row), and its weight gradients from the Hadamard-transformed
// operands where the gradients are cast to FP4 (the attention and MLP stages, not the BF16 head).
void TestGptTrainer::blockRecipesTileWeightsAndTransformGradients() {
    const transformer::GptModel model({256, 16, 32, 2, 1});
    using transformer::GptSite;
    std::vector<float> w(32 * 32);
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = std::sin(static_cast<float>(i)) * 0.1f;
    for (bool tiles : {true, false}) {
        nlohmann::json j = smallGpt(1);
        j["scaling"]["weight_tiles"] = tiles;
        GptRecipeCasts casts(config(j, "nvfp4"), model);
        std::vector<float> v = w;
        casts.cast(0, TensorRole::Weights, GptSite::Product, {v.data(), v.size()}, {32, 32, true});
        QCOMPARE(casts.blockStats(0, TensorRole::Weights).blocks, std::uint64_t{tiles ? 4u : 64u});
        QVERIFY(casts.hadamard(0) && casts.hadamard(1) && !casts.hadamard(2));
    }
    std::vector<std::vector<float>> after;
    for (bool hadamard : {true, false}) {
        nlohmann::json j = smallGpt(1);
        j["scaling"]["hadamard"] = hadamard;
        const TrainConfig c = config(j, "nvfp4");
        GptTrainer run(c, loadRunData(c));
        QVERIFY(std::isfinite(run.step().scalars.loss));
        after.push_back(run.run().parameters());
    }
    QVERIFY(after[0] != after[1]); // the transform changed the FP4 stages' weight updates
}
