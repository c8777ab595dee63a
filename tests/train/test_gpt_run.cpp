// Training the GPT (core/train/gpt_run) with and without a precision recipe (gpt_casts): FP32
// learns; a preset's recipe reaches the arithmetic and its counters; loss scaling and the
// policies the GPT cannot run yet.
#include "data/text_corpus.h"
#include "train/gpt_run.h"
#include "train/train_config.h"

#include <QtTest>

#include <cmath>

using namespace plab;

class TestGptRun : public QObject {
    Q_OBJECT
private slots:
    void learnsTheSyntheticText();
    void fp32RecipeIsTheFp32Run();
    void fp16WithoutScalingFlushesGradients();
    void perLayerScalingIsRefused();
    void everyOtherPresetTrains();
    void samplesWhatItLearnt();
};

namespace {

GptRunSettings small() {
    GptRunSettings s;
    s.spec = {256, 16, 32, 2, 1};
    s.batch = 8;
    s.validationWindows = 4;
    s.lr = 3e-3;
    return s;
}

const TextCorpus& corpus() {
    static const TextCorpus c = makeSyntheticText(1, 40000, 16);
    return c;
}

TrainConfig preset(const char* name) {
    return configFromJson(findPreset(name).json);
}

} // namespace

void TestGptRun::learnsTheSyntheticText() {
    GptRun run(small(), corpus());
    const double before = run.validationLoss();
    for (int i = 0; i < 60; ++i)
        run.step();
    const double after = run.validationLoss();
    // From about ln 256 = 5.5 nats towards the text's letters: well below uniform.
    QVERIFY2(after < before - 1.0, qPrintable(QString("%1 -> %2").arg(before).arg(after)));
}

void TestGptRun::fp32RecipeIsTheFp32Run() {
    GptRun plain(small(), corpus());
    GptRunSettings s = small();
    s.precision = preset("fp32");
    GptRun recipe(s, corpus());
    for (int i = 0; i < 3; ++i)
        QCOMPARE(recipe.step().loss, plain.step().loss);
    QVERIFY(plain.parameters() == recipe.parameters());
}

void TestGptRun::fp16WithoutScalingFlushesGradients() {
    GptRunSettings s = small();
    s.precision = preset("fp16-noscale");
    GptRun run(s, corpus());
    run.setCounting(true);
    for (int i = 0; i < 5; ++i)
        run.step();
    const GptRecipeCasts* casts = run.casts();
    QVERIFY(casts != nullptr && casts->castsAnything());
    // Gradients of a loss averaged over the batch's positions are small: FP16 flushes some of
    // the attention's; its weights and activations are far from the subnormal range.
    const double gradients =
        casts->stats(0, transformer::GptOperand::ActivationGradients).flushedShare();
    QVERIFY2(gradients > 0.001, qPrintable(QString::number(gradients)));
    QCOMPARE(casts->stats(0, transformer::GptOperand::Activations).flushedShare(), 0.0);
    QVERIFY(casts->stats(0, transformer::GptOperand::Weights).total() > 0);
}

void TestGptRun::perLayerScalingIsRefused() {
    GptRunSettings s = small();
    s.precision = preset("fp16-zhao");
    QVERIFY_THROWS_EXCEPTION(ConfigError, GptRun(s, corpus()));
}

void TestGptRun::everyOtherPresetTrains() {
    // Every preset but the per-layer one: a few steps with finite losses, counted casts.
    for (const Preset& p : presets()) {
        GptRunSettings s = small();
        s.precision = configFromJson(p.json);
        if (s.precision->scalingPolicy == ScalingPolicy::PerLayer)
            continue;
        GptRun run(s, corpus());
        double loss = 0.0;
        for (int i = 0; i < 4; ++i)
            loss = run.step().loss;
        QVERIFY2(std::isfinite(loss) && std::isfinite(run.validationLoss()), p.name.c_str());
        QVERIFY2(run.skippedSteps() < 4, p.name.c_str());
    }
}

void TestGptRun::samplesWhatItLearnt() {
    // A text that repeats "abcd": after some training the model writes it on, and the same
    // seed writes the same bytes.
    std::string text;
    while (text.size() < 4000)
        text += "abcd";
    const TextCorpus repeat =
        splitText("abcd", std::vector<std::uint8_t>(text.begin(), text.end()), 16);
    GptRun run(small(), repeat);
    for (int i = 0; i < 80; ++i)
        run.step();
    const std::string written = run.sample("abcdab", 12, 5);
    QCOMPARE(written.size(), std::size_t{12});
    QCOMPARE(QString::fromStdString(written), QString("cdabcdabcdab"));
    QCOMPARE(run.sample("abcdab", 12, 5), written);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, run.sample("", 3, 1));
}

QTEST_APPLESS_MAIN(TestGptRun)
#include "test_gpt_run.moc"
