// The recipe advisor on hand-made records: each layer's choice and the number that decided it,
// the products, the exports, and the one-line refusals.
#include <QTemporaryDir>
#include <QTest>

#include "advise/advice_exports.h"
#include "advise/recipe_advice.h"
#include "record/run_record.h"
#include "train/run_log.h"
#include "train/train_config.h"

#include <memory>

using namespace plab;

class TestRecipeAdvice : public QObject {
    Q_OBJECT
private slots:
    void choosesTheNarrowestFormatThatMeetsEveryCriterion();
    void productsTakeTheWiderOperand();
    void windowLimitsTheStepsJudged();
    void recipeExportRunsAsAConfig();
    void badCriteriaAndMissingFormatsAreOneLineErrors();
    void recipeNamesEmulatedModulesOnly();
    void sharesAreOfTheNonzeroValuesNaNsIncluded();
    void theDefaultLadderIsWhatTheRunRecorded();
    void theMarginKeepsTheAdviceInsideTheLimits();
    void aLayerTakesOneScalingSoTheDefaultAdviceExports();
    void aTiedHeadGetsItsProductsAndExports();
    void theFrameworksFilesNameEachModulesRecipe();
    void oneFormatIsOneNameAndAStaticScaleStaysStatic();
    void fp4AllTheWayJudgesFp4GradientsByTheirNoise();
};

namespace {

// Counts of 1,000 nonzero values: `flushed` flushed, `overflow` past the max, the rest normal;
// SQNR from signal and error sums.
QuantStats counts(std::uint64_t flushed, std::uint64_t overflow, double sqnrDb = 40.0) {
    QuantStats q;
    q.counts[static_cast<std::size_t>(QuantClass::Zero)] = 100;
    q.counts[static_cast<std::size_t>(QuantClass::Underflow)] = flushed;
    q.counts[static_cast<std::size_t>(QuantClass::Overflow)] = overflow;
    q.counts[static_cast<std::size_t>(QuantClass::Normal)] = 1000 - flushed - overflow;
    q.error = {1000, 1.0, std::pow(10.0, -sqnrDb / 10.0), 1.0};
    return q;
}

// How the watcher describes a watched run judging `formats` (with its modules' types, when
// given): what makes a record a watched one for the advisor.
ExternalRun watchedRun(const std::vector<std::string>& formats,
                       const nlohmann::json& modules = nullptr) {
    nlohmann::json watch = {{"formats", formats}, {"every", 1}};
    if (!modules.is_null())
        watch["modules"] = modules;
    ExternalRun run;
    run.config = {{"watch", watch}};
    run.meta = {{"source", "pytorch-watch"}, {"watch", watch}};
    return run;
}

// The ladder these records are advised on: their three formats (the default ladder would be nvfp4,
// bf16, fp32: fp8-e4m3 judged unscaled is no default).
AdviceCriteria withLadder() {
    AdviceCriteria c;
    c.ladder = {"nvfp4", "fp8-e4m3", "bf16", "fp32"};
    return c;
}

// A watched run judging every tensor in nvfp4, fp8-e4m3 and bf16, over `steps` statistics steps:
//   "grads":  activation gradients flush 6% in fp8-e4m3 (at step 3 only) and 0% in bf16;
//   "wide":   weights overflow in fp8-e4m3 only;
//   "blocks": nvfp4's blocks flush whole (5% of the live blocks) on every tensor;
// everything else is fine in fp8-e4m3, and every nvfp4 tensor's counts are fine.
void writeRecord(const std::string& dir, int steps = 4) {
    const std::vector<std::string> formats = {"nvfp4", "fp8-e4m3", "bf16"};
    RunLog log(dir, watchedRun(formats), {"grads", "wide", "blocks"});
    for (int step = 1; step <= steps; ++step) {
        log.logReportedStep(step, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(step);
        for (std::size_t stage = 0; stage < 3; ++stage)
            for (TensorRole role : {TensorRole::Weights, TensorRole::Activations,
                                    TensorRole::ActivationGradients, TensorRole::WeightGradients})
                for (const std::string& f : formats) {
                    QuantStats q = counts(0, 0);
                    BlockStats b;
                    if (f == "fp8-e4m3" && stage == 0 && role == TensorRole::ActivationGradients)
                        q = counts(step == 3 ? 60 : 5, 0);
                    if (f == "fp8-e4m3" && stage == 1 && role == TensorRole::Weights)
                        q = counts(0, 2);
                    if (f == "nvfp4") {
                        b.blocks = 64;
                        b.zeroBlocks = 4;
                        b.flushedBlocks = stage == 2 ? 3 : 0;
                        q = counts(0, 0, 25.0);
                    }
                    if (f == "nvfp4" && stage != 2)
                        q = counts(0, 0, stage == 0 ? 15.0 : 25.0); // grads: SQNR too low
                    log.logRoleStats(step, stage, role, {f, q, b, 1.0, 1.0}, histograms);
                }
        log.commit();
    }
}

const RoleAdvice& roleOf(const RunAdvice& a, const std::string& module, TensorRole role) {
    for (const RoleAdvice& r : a.roles)
        if (r.module == module && r.role == role)
            return r;
    throw std::logic_error("no advice for " + module);
}

} // namespace

void TestRecipeAdvice::choosesTheNarrowestFormatThatMeetsEveryCriterion() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    writeRecord(dir);
    const RunAdvice a = adviseRun(RunRecord(dir), withLadder());
    QCOMPARE(a.statisticsSteps, std::size_t{4});
    QVERIFY(a.watched);

    // Activation gradients that flush 6% in E4M3 at step 3: BF16, and the reason names it.
    const RoleAdvice& grads = roleOf(a, "grads", TensorRole::ActivationGradients);
    QCOMPARE(grads.chosen, std::string("bf16"));
    QCOMPARE(grads.verdicts.size(), std::size_t{3});
    QCOMPARE(grads.verdicts[0].criterion, std::string("sqnr")); // nvfp4: 15 dB < 20
    QCOMPARE(grads.verdicts[1].criterion, std::string("flushed"));
    QCOMPARE(grads.verdicts[1].step, std::int64_t{3});
    QCOMPARE(grads.verdicts[1].value, 0.06);
    QVERIFY2(grads.summary.find("fp8-e4m3 rejected: 6% of nonzero activation gradients flushed "
                                "(limit 1%, 0.5% with the margin) at step 3") != std::string::npos,
             grads.summary.c_str());
    QVERIFY(grads.summary.find("bf16 chosen") != std::string::npos);
    QCOMPARE(roleOf(a, "grads", TensorRole::Weights).chosen, std::string("fp8-e4m3"));

    // Weights that overflow in E4M3 only: NVFP4's block scales fit them; without NVFP4 in the
    // ladder, BF16, for overflow.
    QCOMPARE(roleOf(a, "wide", TensorRole::Weights).chosen, std::string("nvfp4"));
    AdviceCriteria fp8;
    fp8.ladder = {"fp8-e4m3", "bf16", "fp32"};
    const RunAdvice withoutFp4 = adviseRun(RunRecord(dir), fp8);
    const RoleAdvice& wide = roleOf(withoutFp4, "wide", TensorRole::Weights);
    QCOMPARE(wide.chosen, std::string("bf16"));
    QCOMPARE(wide.verdicts[0].criterion, std::string("overflow"));
    QCOMPARE(wide.verdicts[0].value, 0.002);
    // Its activations: NVFP4's counts and SQNR pass.
    QCOMPARE(roleOf(a, "wide", TensorRole::Activations).chosen, std::string("nvfp4"));

    // NVFP4 blocks flushed whole (3 of 60 live blocks): FP8 E4M3, for the blocks.
    const RoleAdvice& blocks = roleOf(a, "blocks", TensorRole::Activations);
    QCOMPARE(blocks.chosen, std::string("fp8-e4m3"));
    QCOMPARE(blocks.verdicts[0].criterion, std::string("flushed_blocks"));
    QCOMPARE(blocks.verdicts[0].value, 0.05);
    // Loosen the block criterion and NVFP4 passes.
    AdviceCriteria loose = withLadder();
    loose.maxFlushedBlocks = 0.1;
    QCOMPARE(roleOf(adviseRun(RunRecord(dir), loose), "blocks", TensorRole::Activations).chosen,
             std::string("nvfp4"));
    // At step 4 alone the activation gradients flush 0.5% in E4M3: within 1%, not within 0.1%.
    AdviceCriteria lastStep;
    lastStep.ladder = {"fp8-e4m3", "bf16", "fp32"};
    parseStepWindow("last:1", lastStep);
    QCOMPARE(roleOf(adviseRun(RunRecord(dir), lastStep), "grads", TensorRole::ActivationGradients)
                 .chosen,
             std::string("fp8-e4m3"));
    lastStep.maxFlushed = 0.001;
    QCOMPARE(roleOf(adviseRun(RunRecord(dir), lastStep), "grads", TensorRole::ActivationGradients)
                 .chosen,
             std::string("bf16"));
}

void TestRecipeAdvice::productsTakeTheWiderOperand() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    writeRecord(dir);
    AdviceCriteria c;
    c.ladder = {"fp8-e4m3", "bf16", "fp32"};
    const RunAdvice a = adviseRun(RunRecord(dir), c);
    auto gemm = [&](const std::string& module, const std::string& name) {
        for (const GemmAdvice& g : a.gemms)
            if (g.module == module && g.gemm == name)
                return g;
        throw std::logic_error("no product");
    };
    QCOMPARE(a.gemms.size(), std::size_t{9});
    // grads: activations and weights E4M3, activation gradients BF16.
    QCOMPARE(gemm("grads", "forward").format, std::string("fp8-e4m3"));
    QCOMPARE(gemm("grads", "data_gradient").format, std::string("bf16"));
    QCOMPARE(gemm("grads", "weight_gradient").format, std::string("bf16"));
    QCOMPARE(gemm("grads", "weight_gradient").reason,
             std::string("activation gradients need bf16"));
    // wide: weights BF16 (overflow), activations E4M3: the forward product is BF16.
    QCOMPARE(gemm("wide", "forward").format, std::string("bf16"));
    QCOMPARE(gemm("wide", "forward").reason, std::string("weights need bf16"));
    QCOMPARE(gemm("wide", "weight_gradient").format, std::string("fp8-e4m3"));
    QCOMPARE(gemm("wide", "weight_gradient").reason, std::string("both operands take fp8-e4m3"));
}

void TestRecipeAdvice::windowLimitsTheStepsJudged() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    writeRecord(dir, 6);
    AdviceCriteria c = withLadder();
    parseStepWindow("last:2", c); // steps 5 and 6: the 6% flush at step 3 is outside
    const RunAdvice a = adviseRun(RunRecord(dir), c);
    QCOMPARE(a.firstStep, std::int64_t{5});
    QCOMPARE(a.statisticsSteps, std::size_t{2});
    QCOMPARE(roleOf(a, "grads", TensorRole::ActivationGradients).chosen, std::string("fp8-e4m3"));
    parseStepWindow("2:3", c);
    QCOMPARE(roleOf(adviseRun(RunRecord(dir), c), "grads", TensorRole::ActivationGradients).chosen,
             std::string("bf16"));
    parseStepWindow("all", c);
    QCOMPARE(adviseRun(RunRecord(dir), c).statisticsSteps, std::size_t{6});
    // ml_dtypes' names in the ladder are the record's formats.
    c.ladder = {"float8_e4m3fn", "bfloat16", "fp32"};
    const RunAdvice named = adviseRun(RunRecord(dir), c);
    QCOMPARE(roleOf(named, "grads", TensorRole::ActivationGradients).chosen, std::string("bf16"));
    QCOMPARE(roleOf(named, "grads", TensorRole::Weights).chosen, std::string("fp8-e4m3"));
}

void TestRecipeAdvice::recipeExportRunsAsAConfig() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    writeRecord(dir);
    AdviceCriteria c;
    c.ladder = {"fp8-e4m3", "bf16", "fp32"};
    RunAdvice a = adviseRun(RunRecord(dir), c);
    // A watched run's exceptions name its modules (emulate's form).
    const nlohmann::json watched = adviceRecipe(a);
    QCOMPARE(watched["recipe"]["activation_gradients"].get<std::string>(), std::string("fp8-e4m3"));
    const nlohmann::json& entries = watched["recipe"]["overrides"];
    QCOMPARE(entries.size(), std::size_t{2}); // shorter names first: a parent before its child
    QCOMPARE(entries[0]["modules"].get<std::string>(), std::string("wide"));
    QCOMPARE(entries[0]["weights"].get<std::string>(), std::string("bf16"));
    QCOMPARE(entries[1]["modules"].get<std::string>(), std::string("grads"));
    QCOMPARE(entries[1]["activation_gradients"].get<std::string>(), std::string("bf16"));
    QCOMPARE(watched["scaling"]["policy"].get<std::string>(), std::string("none"));
    // A trained run's name their stages, inside its own config (its model and data, its recipe
    // and scaling replaced, its timeline of edits dropped); train --config's reader takes it.
    a.watched = false;
    a.runConfig = {{"model", {{"type", "mlp"}, {"hidden", {16, 8}}}},
                   {"recipe", {{"weights", "fp16"}}},
                   {"timeline", {{{"step", 2}, {"set", {{"scaling", {{"scale", 8}}}}}}}}};
    const nlohmann::json document = adviceRecipe(a);
    QVERIFY(!document.contains("timeline"));
    QVERIFY(document["model"]["hidden"] == nlohmann::json({16, 8}));
    const TrainConfig config = configFromJson(document);
    QCOMPARE(config.recipe.stageOverrides.size(), std::size_t{2});
    QCOMPARE(config.recipe.config(0, 3, TensorRole::ActivationGradients).format.name,
             std::string("bf16"));
    QCOMPARE(config.recipe.config(2, 3, TensorRole::ActivationGradients).format.name,
             std::string("fp8-e4m3"));
    QCOMPARE(config.recipe.config(1, 3, TensorRole::Weights).format.name, std::string("bf16"));
    // TE: the layers with a product above 8 bits, and the products.
    const std::string yaml = adviceTeYaml(a, TeFeatureNames::Quantization);
    QVERIFY2(yaml.find("layer_name_regex_pattern: \"^grads$\"") != std::string::npos, yaml.c_str());
    QVERIFY(yaml.find("gemms: [dgrad, wgrad]") != std::string::npos);
    QVERIFY(yaml.find("gemms: [fprop, dgrad]") != std::string::npos); // wide: its weights
    QVERIFY(yaml.find("\"^blocks$\"") == std::string::npos);          // all E4M3
    QVERIFY(adviceTorchao(a).find("    \"blocks\": \"fp8-current\",\n}") != std::string::npos);
    // A ladder of NVFP4 and unscaled E4M3 mixes them in different layers: each layer takes its
    // own scaling (issue 63 item 1), and the run keeps its loss scaler.
    RunAdvice mixed = adviseRun(RunRecord(dir), withLadder());
    mixed.watched = false; // stage indices, which the config reader takes (emulate resolves names)
    nlohmann::json mixedDocument;
    try {
        mixedDocument = adviceRecipe(mixed);
    } catch (const std::invalid_argument& e) {
        QFAIL(e.what());
    }
    TrainConfig mixedConfig;
    try {
        mixedConfig = configFromJson(mixedDocument);
    } catch (const std::exception& e) {
        QFAIL(qPrintable(
            QString::fromStdString(std::string(e.what()) + ": " + mixedDocument.dump())));
    }
    QVERIFY(mixedConfig.scalingPolicy != ScalingPolicy::Nvfp4);
    int blockScaled = 0;
    for (const RoleAdvice& r : mixed.roles) {
        const int stage = static_cast<int>(r.stage);
        const TensorScaling* own = mixedConfig.recipe.scalingOverride(stage, 3);
        const bool nvfp4 = r.chosen == "nvfp4";
        if (nvfp4) {
            QVERIFY2(own != nullptr && own->policy == ScalingPolicy::Nvfp4, r.module.c_str());
            QCOMPARE(mixedConfig.recipe.config(stage, 3, r.role).format.name,
                     std::string("fp4-e2m1"));
            ++blockScaled;
        } else if (own != nullptr && own->policy == ScalingPolicy::Nvfp4 &&
                   isProductInput(r.role)) {
            QVERIFY2(r.chosen.empty() || !parseFormat(r.chosen).hasNarrowRange(),
                     r.module.c_str()); // wide beside it (a weight gradient is not scaled)
        }
    }
    QVERIFY(blockScaled > 0);
    // Two block formats in one layer are still refused, naming the layer.
    RunAdvice twoBlocks = mixed;
    for (RoleAdvice& r : twoBlocks.roles)
        if (r.stage == 0)
            r.chosen = r.role == TensorRole::Weights ? "nvfp4" : "mxfp8-e4m3";
    try {
        adviceRecipe(twoBlocks);
        QFAIL("a layer with two block formats was written");
    } catch (const std::invalid_argument& e) {
        QVERIFY2(std::string(e.what()).find("two scaled recipes in ") != std::string::npos,
                 e.what());
    }
}

void TestRecipeAdvice::badCriteriaAndMissingFormatsAreOneLineErrors() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    writeRecord(dir);
    auto refused = [&](const AdviceCriteria& c, const std::string& expected) {
        try {
            adviseRun(RunRecord(dir), c);
        } catch (const std::invalid_argument& e) {
            const std::string what = e.what();
            if (what.find(expected) == std::string::npos || what.find('\n') != std::string::npos)
                QFAIL(("unexpected message: " + what).c_str());
            return;
        }
        QFAIL(("accepted: " + expected).c_str());
    };
    AdviceCriteria c;
    c.ladder = {"fp16", "fp32"};
    refused(c, "holds no statistics in any format of the ladder fp16,fp32 (it recorded nvfp4,"
               "fp8-e4m3,bf16)");
    c.ladder = {"fp9"};
    refused(c, "fp9");
    c.ladder = {"bf16", "bf16"};
    refused(c, "bf16 is named twice");
    c.ladder = {"fp8-e4m3", "float8_e4m3fn"}; // one format, two spellings
    refused(c, "fp8-e4m3 is named twice");
    c = {};
    c.maxFlushed = 1.5;
    refused(c, "--max-flushed");
    c = {};
    c.firstStep = 50;
    c.lastStep = 60;
    refused(c, "no statistics steps from step 50 to 60");
    QCOMPARE(parseShare("0.5%", "--max-flushed"), 0.005);
    QCOMPARE(parseShare("0.25", "--max-flushed"), 0.25);
    for (const char* bad : {"", "%", "150%", "-1", "1e", "abc"})
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseShare(bad, "--max-flushed"));
    for (const char* bad : {"last:0", "last:", "5:2", "x", "0:4"})
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parseStepWindow(bad, c));
}

// A watched transformer block: an attention (MultiheadAttention, whose out_proj is a module of its
// own), a LayerNorm (advised, but no product a recipe casts), a Linear "fc" and a Linear inside it
// "fc.inner". The attention's activation gradients and fc's weights flush in E4M3; the rest is
// fine.
void TestRecipeAdvice::recipeNamesEmulatedModulesOnly() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    {
        const std::vector<std::string> formats = {"fp8-e4m3", "bf16"};
        const nlohmann::json modules = {
            {{"name", "attn"}, {"type", "MultiheadAttention"}},
            {{"name", "attn.out_proj"}, {"type", "NonDynamicallyQuantizableLinear"}},
            {{"name", "norm"}, {"type", "LayerNorm"}},
            {{"name", "fc"}, {"type", "Linear"}},
            {{"name", "fc.inner"}, {"type", "Linear"}}};
        RunLog log(dir, watchedRun(formats, modules),
                   {"attn", "attn.out_proj", "norm", "fc", "fc.inner"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        for (std::size_t stage = 0; stage < 5; ++stage)
            for (TensorRole role : {TensorRole::Weights, TensorRole::Activations,
                                    TensorRole::ActivationGradients, TensorRole::WeightGradients})
                for (const std::string& f : formats) {
                    const bool flush = f == "fp8-e4m3" &&
                                       ((stage == 0 && role == TensorRole::ActivationGradients) ||
                                        (stage == 3 && role == TensorRole::Weights));
                    const QuantStats q = counts(flush ? 50 : 0, 0);
                    log.logRoleStats(1, stage, role, {f, q, BlockStats{}, 1.0, 1.0}, histograms);
                }
        log.commit();
    }
    AdviceCriteria c;
    c.ladder = {"fp8-e4m3", "bf16", "fp32"};
    const RunAdvice a = adviseRun(RunRecord(dir), c);
    QCOMPARE(a.roles.size(), std::size_t{20}); // the LayerNorm is advised too
    for (const GemmAdvice& g : a.gemms)
        QVERIFY2(g.module != "norm", "a LayerNorm has no product");
    QCOMPARE(a.gemms.size(), std::size_t{12});
    const nlohmann::json overrides = adviceRecipe(a)["recipe"]["overrides"];
    // Parents first (later entries win): fc's own exception; fc.inner, which emulate's pattern
    // "fc" also reaches, with its own formats; the attention's input projection under emulate's
    // name (its out_proj, not reached by "attn.in_proj", keeps the base formats).
    QCOMPARE(overrides.size(), std::size_t{3});
    QCOMPARE(overrides[0]["modules"].get<std::string>(), std::string("fc"));
    QCOMPARE(overrides[0]["weights"].get<std::string>(), std::string("bf16"));
    QCOMPARE(overrides[1]["modules"].get<std::string>(), std::string("fc.inner"));
    QCOMPARE(overrides[1]["weights"].get<std::string>(), std::string("fp8-e4m3"));
    QCOMPARE(overrides[1]["activation_gradients"].get<std::string>(), std::string("fp8-e4m3"));
    QCOMPARE(overrides[2]["modules"].get<std::string>(), std::string("attn.in_proj"));
    QCOMPARE(overrides[2]["activation_gradients"].get<std::string>(), std::string("bf16"));
    QVERIFY(adviceTeYaml(a, TeFeatureNames::Quantization).find("\"^attn$\"") != std::string::npos);
    QVERIFY(adviceTeYaml(a, TeFeatureNames::Quantization).find("norm") == std::string::npos);
}

// The overflow share is of the nonzero inputs, NaNs among them, as the flushed share (and every
// table of the app) counts them: 10 overflows of 1,000 nonzero values, 500 of them NaN, are 1%.
void TestRecipeAdvice::sharesAreOfTheNonzeroValuesNaNsIncluded() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    {
        RunLog log(dir, watchedRun({"fp8-e4m3"}), {"fc"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        QuantStats q;
        q.counts[static_cast<std::size_t>(QuantClass::NaN)] = 500;
        q.counts[static_cast<std::size_t>(QuantClass::Overflow)] = 10;
        q.counts[static_cast<std::size_t>(QuantClass::Normal)] = 490;
        log.logRoleStats(1, 0, TensorRole::Weights, {"fp8-e4m3", q, BlockStats{}, 1.0, 1.0},
                         histograms);
        log.commit();
    }
    AdviceCriteria c;
    c.ladder = {"fp8-e4m3", "fp32"};
    const RunAdvice a = adviseRun(RunRecord(dir), c);
    QCOMPARE(a.roles.at(0).verdicts.at(0).criterion, std::string("overflow"));
    QCOMPARE(a.roles.at(0).verdicts.at(0).value, 0.01);
}

// Without --ladder: the recipe candidates and BF16 a run recorded, narrowest first; a run that
// recorded no candidate, its own formats by width; FP32 always last, and an FP32 run advised FP32
// rather than refused.
void TestRecipeAdvice::theDefaultLadderIsWhatTheRunRecorded() {
    using Ladder = std::vector<std::string>;
    QCOMPARE(defaultLadder({"bf16", "fp16", "fp8-current", "nvfp4", "mxfp8"}),
             (Ladder{"nvfp4", "mxfp8", "fp8-current", "bf16", "fp32"}));
    QCOMPARE(defaultLadder({"fp32", "fp16"}), (Ladder{"fp16", "fp32"}));
    QCOMPARE(defaultLadder({"bf16", "fp8-e5m2", "mxfp4", "fp32"}),
             (Ladder{"mxfp4", "fp8-e5m2", "bf16", "fp32"}));
    QCOMPARE(defaultLadder({"fp32"}), (Ladder{"fp32"}));
    // A trained FP32 run: every role FP32, none refused.
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    {
        RunLog log(dir, watchedRun({"fp32"}), {"fc"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        for (TensorRole role : {TensorRole::Weights, TensorRole::Activations})
            log.logRoleStats(1, 0, role, {"fp32", counts(0, 0), BlockStats{}, 1.0, 1.0},
                             histograms);
        log.commit();
    }
    const RunAdvice a = adviseRun(RunRecord(dir), AdviceCriteria{});
    QCOMPARE(a.criteria.ladder, (Ladder{"fp32"}));
    QCOMPARE(a.roles.size(), std::size_t{2});
    for (const RoleAdvice& r : a.roles)
        QCOMPARE(r.chosen, std::string("fp32"));
    // A candidate is not judged on weight gradients, even where rows name it.
    QTemporaryDir tmp2;
    const std::string dir2 = tmp2.path().toStdString() + "/run";
    {
        RunLog log(dir2, watchedRun({"fp8-current", "bf16"}), {"fc"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        for (const char* f : {"fp8-current", "bf16"})
            log.logRoleStats(1, 0, TensorRole::WeightGradients,
                             {f, counts(0, 0), BlockStats{}, 1.0, 1.0}, histograms);
        log.commit();
    }
    const RunAdvice b = adviseRun(RunRecord(dir2), AdviceCriteria{});
    QCOMPARE(b.criteria.ladder, (Ladder{"fp8-current", "bf16", "fp32"}));
    QCOMPARE(b.roles.at(0).chosen, std::string("bf16"));
    QVERIFY2(b.roles.at(0).summary.find("fp8-current not judged: a recipe keeps weight "
                                        "gradients") != std::string::npos,
             b.roles.at(0).summary.c_str());
}

// The default margin advises only where the worst step is within half of each limit (a run under
// the advice differs: 0.96% watched became 1.035% there); a failing share is printed with the
// digits that tell it from the limit (1.049% is not "1%").
void TestRecipeAdvice::theMarginKeepsTheAdviceInsideTheLimits() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    {
        RunLog log(dir, watchedRun({"fp8-e4m3", "bf16"}), {"near", "over", "sqnr"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        QuantStats over; // 1,049 of 100,000 nonzero values flushed: 1.049%
        over.counts[static_cast<std::size_t>(QuantClass::Underflow)] = 1049;
        over.counts[static_cast<std::size_t>(QuantClass::Normal)] = 100000 - 1049;
        const QuantStats stats[3] = {counts(8, 0), over, counts(0, 0, 21.0)};
        for (std::size_t stage = 0; stage < 3; ++stage) {
            log.logRoleStats(1, stage, TensorRole::Weights,
                             {"fp8-e4m3", stats[stage], BlockStats{}, 1.0, 1.0}, histograms);
            log.logRoleStats(1, stage, TensorRole::Weights,
                             {"bf16", counts(0, 0, 60.0), BlockStats{}, 1.0, 1.0}, histograms);
        }
        log.commit();
    }
    AdviceCriteria c;
    c.ladder = {"fp8-e4m3", "bf16", "fp32"};
    const RunAdvice margined = adviseRun(RunRecord(dir), c);
    // 0.8% flushed: within 1%, not within half of it; SQNR 21 dB: above 20, below 23 dB.
    const RoleAdvice& near = roleOf(margined, "near", TensorRole::Weights);
    QCOMPARE(near.chosen, std::string("bf16"));
    QVERIFY2(near.summary.find("0.8% of nonzero weights flushed (limit 1%, 0.5% with the "
                               "margin)") != std::string::npos,
             near.summary.c_str());
    const RoleAdvice& sqnr = roleOf(margined, "sqnr", TensorRole::Weights);
    QCOMPARE(sqnr.chosen, std::string("bf16"));
    QVERIFY2(sqnr.summary.find("SQNR 21.0 dB (at least 20.0 dB asked, 23.0 dB with the margin)") !=
                 std::string::npos,
             sqnr.summary.c_str());
    // At the limits (margin 1): both meet them; 1.049% does not, and says so in digits.
    c.margin = 1.0;
    const RunAdvice atLimits = adviseRun(RunRecord(dir), c);
    QCOMPARE(roleOf(atLimits, "near", TensorRole::Weights).chosen, std::string("fp8-e4m3"));
    QCOMPARE(roleOf(atLimits, "sqnr", TensorRole::Weights).chosen, std::string("fp8-e4m3"));
    const RoleAdvice& over = roleOf(atLimits, "over", TensorRole::Weights);
    QCOMPARE(over.chosen, std::string("bf16"));
    QVERIFY2(over.summary.find("1.05% of nonzero weights flushed (limit 1%)") != std::string::npos,
             over.summary.c_str());
    c.margin = 0.0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, checkCriteria(c));
}

// Each role's narrowest passing candidate may differ within a layer (weights in NVFP4,
// activations in MXFP8, gradients in FP8 with current scaling), but a recipe scales a layer under
// one policy: the layer takes the candidate that leaves its roles fewest bits together, and the
// default advice exports as a recipe with each layer's own scaling.
// A watched run judging the candidates: "mix" passes nvfp4 in its weights only, mxfp8 in its
// weights and activations, fp8-current in all three product inputs; "narrow" passes nvfp4 in all.
static void writeMixedCandidates(const std::string& dir) {
    const std::vector<std::string> formats = {"nvfp4", "mxfp8", "fp8-current", "bf16"};
    {
        RunLog log(dir, watchedRun(formats), {"mix", "narrow"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        for (std::size_t stage = 0; stage < 2; ++stage)
            for (TensorRole role :
                 {TensorRole::Weights, TensorRole::Activations, TensorRole::ActivationGradients})
                for (const std::string& f : formats) {
                    // "mix": activations flush in nvfp4, gradients in nvfp4 and mxfp8.
                    const bool flushes =
                        stage == 0 && ((role == TensorRole::Activations && f == "nvfp4") ||
                                       (role == TensorRole::ActivationGradients &&
                                        f != "fp8-current" && f != "bf16"));
                    log.logRoleStats(1, stage, role,
                                     {f, counts(flushes ? 100 : 0, 0), BlockStats{}, 1.0, 1.0},
                                     histograms);
                }
        log.commit();
    }
}

void TestRecipeAdvice::aLayerTakesOneScalingSoTheDefaultAdviceExports() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    writeMixedCandidates(dir);
    RunAdvice a = adviseRun(RunRecord(dir), AdviceCriteria{});
    // nvfp4 (4 + 16 + 16 bits), mxfp8 (8 + 8 + 16) or fp8-current (8 + 8 + 8): the last.
    for (TensorRole role :
         {TensorRole::Weights, TensorRole::Activations, TensorRole::ActivationGradients})
        QCOMPARE(roleOf(a, "mix", role).chosen, std::string("fp8-current"));
    const std::string& why = roleOf(a, "mix", TensorRole::Weights).summary;
    QVERIFY2(why.find("nvfp4 meets the criteria") != std::string::npos &&
                 why.find("but mix scales as fp8-current (one scaling policy per layer") !=
                     std::string::npos,
             why.c_str());
    for (TensorRole role :
         {TensorRole::Weights, TensorRole::Activations, TensorRole::ActivationGradients})
        QCOMPARE(roleOf(a, "narrow", role).chosen, std::string("nvfp4"));
    // The export: each layer under its own candidate's scaling.
    a.watched = false; // stage indices, which the config reader takes
    nlohmann::json document;
    try {
        document = adviceRecipe(a);
    } catch (const std::invalid_argument& e) {
        QFAIL(e.what());
    }
    const TrainConfig config = configFromJson(document);
    const TensorScaling* mix = config.recipe.scalingOverride(0, 2);
    const TensorScaling* narrow = config.recipe.scalingOverride(1, 2);
    QVERIFY(mix != nullptr && narrow != nullptr);
    QVERIFY(mix->policy == ScalingPolicy::AmaxCurrent);
    QVERIFY(narrow->policy == ScalingPolicy::Nvfp4);
    QCOMPARE(config.recipe.config(0, 2, TensorRole::ActivationGradients).format.name,
             std::string("fp8-e5m2"));
    QCOMPARE(config.recipe.config(1, 2, TensorRole::Activations).format.name,
             std::string("fp4-e2m1"));
}

// nanoGPT's lm_head.weight is transformer.wte.weight: the watcher records it once, under wte.
// The head computes with it all the same, so it gets its weights (judged from wte's rows), its
// three products and its entries in the exports; before, TE's YAML had no section for it and TE
// would have run its GEMMs in FP8.
void TestRecipeAdvice::aTiedHeadGetsItsProductsAndExports() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    const std::vector<std::string> formats = {"fp8-e4m3", "bf16"};
    ExternalRun run = watchedRun(formats, nlohmann::json::array({
                                              {{"name", "wte"}, {"type", "Embedding"}},
                                              {{"name", "lm_head"}, {"type", "Linear"}},
                                          }));
    run.meta["watch"]["tied_weights"] = nlohmann::json::array(
        {{{"parameter", "wte.weight"}, {"aliases", nlohmann::json::array({"lm_head.weight"})}}});
    {
        RunLog log(dir, run, {"wte", "lm_head"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        for (const std::string& f : formats) {
            // The shared weight overflows E4M3 unscaled; everything else fits it.
            log.logRoleStats(1, 0, TensorRole::Weights,
                             {f, counts(0, f == "bf16" ? 0 : 5), BlockStats{}, 1.0, 1.0},
                             histograms);
            for (TensorRole role : {TensorRole::Activations, TensorRole::ActivationGradients})
                log.logRoleStats(1, 1, role, {f, counts(0, 0), BlockStats{}, 1.0, 1.0}, histograms);
        }
        log.commit();
    }
    AdviceCriteria c;
    c.ladder = {"fp8-e4m3", "bf16", "fp32"};
    const RunAdvice a = adviseRun(RunRecord(dir), c);
    const RoleAdvice& head = roleOf(a, "lm_head", TensorRole::Weights);
    QCOMPARE(head.chosen, std::string("bf16"));
    QVERIFY2(head.summary.rfind("tied to wte.weight, judged from its rows: ", 0) == 0,
             head.summary.c_str());
    int headGemms = 0;
    for (const GemmAdvice& g : a.gemms)
        if (g.module == "lm_head") {
            ++headGemms;
            QCOMPARE(g.format, std::string(g.gemm == "weight_gradient" ? "fp8-e4m3" : "bf16"));
        }
    QCOMPARE(headGemms, 3);
    const std::string yaml = adviceTeYaml(a, TeFeatureNames::Quantization);
    QVERIFY2(yaml.find("\"^lm_head$\"") != std::string::npos, yaml.c_str());
    RunAdvice byStage = a;
    byStage.watched = false; // stage indices, which the config reader takes
    const TrainConfig config = configFromJson(adviceRecipe(byStage));
    QCOMPARE(config.recipe.config(1, 2, TensorRole::Weights).format.name, std::string("bf16"));
    QCOMPARE(config.recipe.config(1, 2, TensorRole::Activations).format.name,
             std::string("fp8-e4m3"));
}

// The framework files carry each module's own recipe: TE's YAML names it (the YAML cannot choose
// one), Megatron's precision config matches each module to its recipe's config, torchao's
// script converts each module with its recipe's config; the old DisableFP8GEMM names on request.
void TestRecipeAdvice::theFrameworksFilesNameEachModulesRecipe() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    writeMixedCandidates(dir);
    const RunAdvice a = adviseRun(RunRecord(dir), AdviceCriteria{});
    const auto holds = [](const std::string& text, const std::string& part) {
        if (text.find(part) == std::string::npos)
            QFAIL(qPrintable(QString::fromStdString("no \"" + part + "\" in\n" + text)));
    };
    const std::string te = adviceExport(a, "te-yaml");
    holds(te, "#   \"mix\": fp8-current -> Float8CurrentScaling(fp8_format=Format.HYBRID)");
    holds(te, "#   \"narrow\": nvfp4 -> NVFP4BlockScaling()");
    holds(te, "no section needed");
    const std::string megatron = adviceExport(a, "megatron");
    holds(megatron, "  fp8_current:\n    transformer_engine_config_type: \"TEQuantizationParams\"\n"
                    "    training_recipe:\n      fp8_quantization_recipe: \"tensorwise\"\n"
                    "      fp8_format: \"hybrid\"\n      override_nonquantized_autocast: true\n");
    holds(megatron, "      fp4_quantization_recipe: \"nvfp4\"\n");
    holds(megatron, "  m0_mix:\n    config: \"fp8_current\"\n    type: \"glob\"\n"
                    "    pattern: \"mix\"\n    enabled: true\n");
    holds(megatron, "  m1_narrow:\n    config: \"nvfp4\"\n");
    const std::string torchao = adviceExport(a, "torchao");
    holds(torchao,
          "MODULE_RECIPES = {\n    \"mix\": \"fp8-current\",\n    \"narrow\": \"nvfp4\",\n}");
    holds(torchao, "NVFP4TrainingConfig(), filter_fn=filter_for(\"nvfp4\")");
    // One GEMM that must stay wide: TE keeps it, Megatron and torchao say why the module cannot
    // take its recipe there.
    RunAdvice wide = a;
    for (GemmAdvice& g : wide.gemms)
        if (g.module == "mix" && g.gemm == "data_gradient") {
            g.format = "bf16";
            g.reason = "activation gradients need bf16";
        }
    holds(adviceExport(wide, "te-yaml"), "    DisableQuantizationGEMM:\n      enabled: True\n"
                                         "      gemms: [dgrad]\n");
    holds(adviceExport(wide, "te-yaml-fp8"), "    DisableFP8GEMM:\n");
    holds(adviceExport(wide, "megatron"),
          "#   \"mix\": fp8-current for some GEMMs only (dgrad: activation gradients need bf16): "
          "this config cannot split a module's GEMMs, so bf16");
    holds(adviceExport(wide, "megatron"), "  m0_mix:\n    config: \"bf16\"\n");
    holds(adviceExport(wide, "torchao"), "MODULE_RECIPES = {\n    \"narrow\": \"nvfp4\",\n}");
    for (GemmAdvice& g : wide.gemms)
        if (g.module == "mix") {
            g.format = "bf16";
        }
    holds(adviceExport(wide, "te-yaml"), "    DisableQuantizationLayer:\n      enabled: True\n");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, adviceExport(a, "onnx"));
}

// A trained run records its config's spelling ("e5m10", "e4m3:fn"): the advisor reads them as
// fp16 and fp8-e4m3, in the record and in --ladder alike. A run at a static loss scale of 1024
// over fewer steps than the window is exported static, not dynamic (the window's nominal start
// before step 1 made the first step look like a change).
void TestRecipeAdvice::oneFormatIsOneNameAndAStaticScaleStaysStatic() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    {
        RunLog log(dir, watchedRun({"e5m10", "e4m3:fn"}), {"fc"});
        for (int step = 1; step <= 3; ++step) {
            log.logReportedStep(step, 1.0, 0.1, 1024.0);
            const bool histograms = log.startStatistics(step);
            log.logRoleStats(step, 0, TensorRole::Weights,
                             {"e5m10", counts(0, 0, 60.0), BlockStats{}, 1.0, 1.0}, histograms);
            log.logRoleStats(step, 0, TensorRole::Activations,
                             {"e4m3:fn", counts(0, 0), BlockStats{}, 1.0, 1.0}, histograms);
            log.commit();
        }
    }
    const RunAdvice a = adviseRun(RunRecord(dir), AdviceCriteria{});
    QCOMPARE(a.criteria.ladder, (std::vector<std::string>{"fp8-e4m3", "fp16", "fp32"}));
    QCOMPARE(roleOf(a, "fc", TensorRole::Weights).chosen, std::string("fp16"));
    QCOMPARE(roleOf(a, "fc", TensorRole::Activations).chosen, std::string("fp8-e4m3"));
    AdviceCriteria spelled;
    spelled.ladder = {"e4m3:fn", "e5m10", "fp32"};
    QCOMPARE(roleOf(adviseRun(RunRecord(dir), spelled), "fc", TensorRole::Activations).chosen,
             std::string("fp8-e4m3"));
    QCOMPARE(a.lossScale, 1024.0);
    QVERIFY(!a.scaleVaried);
    const nlohmann::json scaling = adviceRecipe(a)["scaling"];
    QCOMPARE(scaling["policy"].get<std::string>(), std::string("static"));
}

// "FP4 all the way" (opt-in): a 4-bit format on gradients is judged by the gradient's norm
// against sqrt(3) times its quantisation noise (with the margin: sqrt(6), 7.8 dB) instead of the
// SQNR floor (23 dB with the margin), which every FP4 gradient here misses.
void TestRecipeAdvice::fp4AllTheWayJudgesFp4GradientsByTheirNoise() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    {
        RunLog log(dir, watchedRun({"mxfp4", "bf16"}), {"clear", "noisy"});
        log.logReportedStep(1, 1.0, 0.1, 1.0);
        const bool histograms = log.startStatistics(1);
        for (std::size_t stage = 0; stage < 2; ++stage) {
            log.logRoleStats(
                1, stage, TensorRole::ActivationGradients,
                {"mxfp4", counts(0, 0, stage == 0 ? 10.0 : 6.0), BlockStats{}, 1.0, 1.0},
                histograms);
            log.logRoleStats(1, stage, TensorRole::ActivationGradients,
                             {"bf16", counts(0, 0, 50.0), BlockStats{}, 1.0, 1.0}, histograms);
        }
        log.commit();
    }
    AdviceCriteria c;
    c.ladder = {"mxfp4", "bf16", "fp32"};
    const RunAdvice plain = adviseRun(RunRecord(dir), c);
    QCOMPARE(roleOf(plain, "clear", TensorRole::ActivationGradients).chosen, std::string("bf16"));
    c.fp4GradientNoise = true;
    const RunAdvice fp4 = adviseRun(RunRecord(dir), c);
    QCOMPARE(roleOf(fp4, "clear", TensorRole::ActivationGradients).chosen, std::string("mxfp4"));
    const RoleAdvice& noisy = roleOf(fp4, "noisy", TensorRole::ActivationGradients);
    QCOMPARE(noisy.chosen, std::string("bf16"));
    QCOMPARE(noisy.verdicts.front().criterion, std::string("fp4_noise"));
    QVERIFY2(noisy.summary.find("gradient norm / quantisation noise 2.00 (at least 1.73, sqrt 3, "
                                "asked; 2.45 with the margin): FP4 all the way leaves FP4 "
                                "here") != std::string::npos,
             noisy.summary.c_str());
}

QTEST_GUILESS_MAIN(TestRecipeAdvice)
#include "test_recipe_advice.moc"
