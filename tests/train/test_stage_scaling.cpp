// Per-layer scaling (issue 63 item 1): a recipe override gives a stage its own per-tensor scaling,
// and that stage is cast bit for bit as a run of that policy casts it while the other stages keep
// the run's; a stage whose scaling changes mid-run starts its amax histories afresh and the others
// keep theirs; a mixed recipe (an NVFP4 model with an MXFP8 tail) trains, and its record says
// which policy cast each stage's rows.
#include <QTemporaryDir>
#include <QTest>

#include "session_test_support.h"
#include "train/presets.h"

#include "engine/cpu_ops.h"
#include "recipe/recipe_caster.h"
#include "train/run_data.h"
#include "train/training_session.h"

#include <cmath>
#include <cstring>
#include <random>

using namespace plab;
using namespace plab::testing;

class TestStageScaling : public QObject {
    Q_OBJECT
private slots:
    void aStageCastsAsARunOfItsPolicyCastsIt_data();
    void aStageCastsAsARunOfItsPolicyCastsIt();
    void aChangedStageStartsItsHistoriesAfresh();
    void aMixedRecipeRecordsEachStagesScaling();
};

namespace {

constexpr int kStages = 3;

TrainConfig configOf(const nlohmann::json& j) {
    return configFromJson(j);
}

// A (32, 48) tensor spanning 2^-30 .. 2^2: unscaled E4M3 flushes most of it, any scaling
// keeps it.
std::vector<float> wideTensor(std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> binade(-30.0, 2.0);
    std::vector<float> v(32 * 48);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>((i % 2 ? -1.0 : 1.0) * std::exp2(binade(gen)));
    return v;
}

struct CastResult {
    std::vector<float> values;
    QuantStats stats;
    double tensorScale = 1.0;
    std::string scaling;
};

CastResult castWith(const TrainConfig& config, int stage, TensorRole role,
                    const std::vector<float>& input) {
    CpuOps ops;
    RecipeCaster caster(config, kStages, ops, nullptr);
    caster.setStep(3);
    Tensor in = ops.allocate(input.size());
    Tensor out = ops.allocate(input.size());
    ops.upload(in, input.data());
    CastResult r;
    std::string_view scaling;
    caster.cast(stage, role, in, out, BlockLayout{32, 48, true},
                CastCounters{&r.stats, nullptr, &r.tensorScale, &scaling}, true);
    r.values.resize(input.size());
    ops.download(r.values.data(), out);
    r.scaling = std::string(scaling);
    return r;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

void TestStageScaling::aStageCastsAsARunOfItsPolicyCastsIt_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("scaling"); // the stage's own, and the whole run's in the reference
    QTest::newRow("amax-current") << "fp8-e4m3"
                                  << R"({"policy": "amax-current", "margin": 1})";
    QTest::newRow("amax-delayed") << "fp8-e5m2"
                                  << R"({"policy": "amax-delayed"})";
    QTest::newRow("mx ceil") << "fp8-e4m3"
                             << R"({"policy": "mx", "scale_rounding": "ceil"})";
    QTest::newRow("nvfp4 tiles") << "fp4-e2m1"
                                 << R"({"policy": "nvfp4", "weight_tiles": true})";
    QTest::newRow("blockwise") << "fp8-e4m3"
                               << R"({"policy": "blockwise", "block_size": 16})";
}

void TestStageScaling::aStageCastsAsARunOfItsPolicyCastsIt() {
    QFETCH(QString, format);
    QFETCH(QString, scaling);
    const nlohmann::json own = nlohmann::json::parse(scaling.toStdString());
    const std::string f = format.toStdString();
    const nlohmann::json recipe = {{"weights", f}, {"activations", f}, {"activation_gradients", f}};
    // The run: a static loss scale of 1, stage 1 with its own scaling.
    nlohmann::json mixed = {{"recipe", recipe}, {"scaling", {{"policy", "static"}}}};
    mixed["recipe"]["overrides"] = {{{"stage", 1}, {"scaling", own}}};
    // The references: the whole run under that scaling, and the whole run unscaled.
    nlohmann::json scaledRun = {{"recipe", recipe}, {"scaling", own}};
    nlohmann::json plainRun = {{"recipe", recipe}, {"scaling", {{"policy", "static"}}}};
    const TrainConfig a = configOf(mixed), b = configOf(scaledRun), c = configOf(plainRun);
    const std::vector<float> input = wideTensor(7);
    for (TensorRole role :
         {TensorRole::Weights, TensorRole::Activations, TensorRole::ActivationGradients}) {
        const CastResult own1 = castWith(a, 1, role, input);
        const CastResult ref1 = castWith(b, 1, role, input);
        QVERIFY2(sameBits(own1.values, ref1.values), qPrintable(format + " stage 1"));
        QCOMPARE(own1.stats.counts, ref1.stats.counts);
        QCOMPARE(own1.tensorScale, ref1.tensorScale);
        QCOMPARE(own1.scaling, own["policy"].get<std::string>());
        const CastResult plain0 = castWith(a, 0, role, input);
        const CastResult ref0 = castWith(c, 0, role, input);
        QVERIFY2(sameBits(plain0.values, ref0.values), qPrintable(format + " stage 0"));
        QCOMPARE(plain0.scaling, std::string("none"));
        // The override changed what stage 1 keeps: unscaled, the tensor's small values flush.
        QVERIFY(own1.stats.counts != castWith(c, 1, role, input).stats.counts);
    }
    // Roles that are not a product's input are cast plainly under any scaling.
    QCOMPARE(castWith(a, 1, TensorRole::WeightGradients, input).scaling, std::string("none"));
}

void TestStageScaling::aChangedStageStartsItsHistoriesAfresh() {
    const TrainConfig config = configOf(
        {{"recipe", {{"activations", "fp8-e4m3"}}}, {"scaling", {{"policy", "amax-delayed"}}}});
    CpuOps ops;
    RecipeCaster caster(config, kStages, ops, nullptr);
    const std::vector<float> input = wideTensor(11);
    Tensor in = ops.allocate(input.size()), out = ops.allocate(input.size());
    ops.upload(in, input.data());
    for (int step = 1; step <= 3; ++step) {
        caster.setStep(step);
        for (int stage = 0; stage < kStages; ++stage)
            caster.cast(stage, TensorRole::Activations, in, out, {32, 48, false}, {}, true);
    }
    // Per tensor: 4 key words, the count, then the values (here 3 each).
    const auto historiesOf = [](const std::vector<double>& saved) {
        std::map<int, std::size_t> count;
        for (std::size_t i = 0; i + 5 <= saved.size();) {
            const auto n = static_cast<std::size_t>(saved[i + 4]);
            count[static_cast<int>(saved[i])] = n;
            i += 5 + n;
        }
        return count;
    };
    QCOMPARE(historiesOf(caster.amaxHistories()),
             (std::map<int, std::size_t>{{0, 3}, {1, 3}, {2, 3}}));
    // Stage 1 changes to a history of 16: it starts afresh, stages 0 and 2 go on with theirs.
    PrecisionRecipe recipe = config.recipe;
    TensorScaling longer = config.tensorScaling();
    longer.amaxHistory = 16;
    recipe.stageScaling[1] = longer;
    caster.setRecipe(recipe);
    QCOMPARE(historiesOf(caster.amaxHistories()), (std::map<int, std::size_t>{{0, 3}, {2, 3}}));
    QCOMPARE(caster.scaling(1).amaxHistory, 16);
    QCOMPARE(caster.scaling(0).amaxHistory, 1024);
    // The same recipe again changes nothing.
    caster.setRecipe(recipe);
    QCOMPARE(historiesOf(caster.amaxHistories()), (std::map<int, std::size_t>{{0, 3}, {2, 3}}));
}

void TestStageScaling::aMixedRecipeRecordsEachStagesScaling() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    nlohmann::json j = findPreset("nvfp4-mxfp8-tail").json;
    mergeConfig(j, {{"model", {{"hidden", {32, 32}}}},
                    {"data", {{"train_size", 512}, {"test_size", 128}}},
                    {"train", {{"steps", 4}, {"batch_size", 32}}}});
    const TrainConfig config = configFromJson(j);
    const auto data = loadRunData(config);
    {
        TrainingSession session(config, data, run);
        session.start();
        session.waitUntilDone();
        QCOMPARE(session.state(), SessionState::Finished);
    }
    const std::string layers = readAll(run + "/layers.csv");
    const std::vector<std::string> stage = column(layers, 1), role = column(layers, 3),
                                   format = column(layers, 4), scaling = column(layers, 23);
    int checked = 0;
    for (std::size_t i = 0; i < stage.size(); ++i) {
        if (role[i] != "weights" && role[i] != "activations")
            continue;
        const bool tail = stage[i] == "2";
        QCOMPARE(format[i], std::string(tail ? "fp8-e4m3" : "fp4-e2m1"));
        QCOMPARE(scaling[i], std::string(tail ? "mx" : "nvfp4"));
        ++checked;
    }
    QCOMPARE(checked, 4 * 3 * 2); // steps x stages x the two roles
    // config.json replays the stage's own scaling.
    const TrainConfig replay = configFromJson(nlohmann::json::parse(readAll(run + "/config.json")));
    QVERIFY(replay.recipe.stageScaling.at(-1).policy == ScalingPolicy::Mx);
    QVERIFY(replay.recipe.stageScaling.at(-1).scaleRounding == ScaleRounding::Ceil);
}

QTEST_GUILESS_MAIN(TestStageScaling)
#include "test_stage_scaling.moc"
