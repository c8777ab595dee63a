// The format what-if: the sample a statistics step keeps (evenly spaced aligned runs), and every
// format on it, with outcomes a researcher can check by reasoning: on values around 2^-20 FP16
// flushes part, BF16 nothing; per-block scales rescue FP8 and FP4 where per-element casts flush;
// SQNR orders the formats by their mantissa bits; and a trainer's statistics step carries the
// samples the GUI's table reads.
#include <QTest>

#include "numerics/amax_scaling.h"
#include "numerics/quantizer.h"
#include "stats/tensor_sample.h"
#include "stats/what_if_formats.h"
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace plab;

class TestWhatIfFormats : public QObject {
    Q_OBJECT
private slots:
    void sampleRunsAreAlignedAndSpread();
    void formatsOnSmallValues();
    void trainerKeepsSamples();
    void recordedCountsGiveTheSameRow();
};

void TestWhatIfFormats::sampleRunsAreAlignedAndSpread() {
    QCOMPARE(sampleRuns(0).size(), std::size_t{0});
    const std::vector<SampleRun> small = sampleRuns(4096);
    QCOMPARE(small.size(), std::size_t{1});
    QCOMPARE(small[0].length, std::size_t{4096});
    const std::size_t n = 1'000'003;
    const std::vector<SampleRun> runs = sampleRuns(n);
    QCOMPARE(runs.size(), kSampleRuns);
    QCOMPARE(runs.front().offset, std::size_t{0});
    for (std::size_t i = 0; i < runs.size(); ++i) {
        QCOMPARE(runs[i].length, kSampleRunLength);
        QCOMPARE(runs[i].offset % kSampleRunLength, std::size_t{0});
        QVERIFY(runs[i].offset + runs[i].length <= n);
        if (i > 0) // in order, none twice
            QVERIFY(runs[i].offset > runs[i - 1].offset);
    }
    QVERIFY(runs.back().offset + kSampleRunLength > n - 2 * kSampleRunLength); // reaches the end
}

void TestWhatIfFormats::formatsOnSmallValues() {
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> sample(4096);
    for (float& v : sample)
        v = normal(rng) * std::ldexp(1.0f, -20);
    std::map<std::string, FormatOutcome> by;
    for (const FormatOutcome& o : compareFormats(sample, 128))
        by[o.name] = o;
    QCOMPARE(by.size(), std::size_t{7 + 6 + blockFormats().size()});
    // 2^-20 is below FP16's normal range (2^-14): subnormal, some flushed below 2^-25.
    QVERIFY(by["fp16"].subnormal > 0.9);
    QVERIFY(by["fp16"].flushed > 0.0 && by["fp16"].flushed < 0.05);
    QCOMPARE(by["bf16"].flushed, 0.0);
    // E4M3's smallest value is 2^-9: every value flushes, SQNR 0 dB (the error is the signal).
    QCOMPARE(by["fp8-e4m3"].flushed, 1.0);
    QVERIFY(std::fabs(by["fp8-e4m3"].sqnrDb) < 1e-9);
    // A tensor scale brings them into range too: E4M3's max 448 at the amax, its 2^-9 subnormal
    // floor then about 2^17.8 below it, where a normal sample of 4,096 values hardly reaches.
    const FormatOutcome& e4m3Amax = by[tensorScaledName("fp8-e4m3")];
    QVERIFY(e4m3Amax.tensorScaled && !by["fp8-e4m3"].tensorScaled);
    QVERIFY2(e4m3Amax.flushed < 0.001, qPrintable(QString::number(e4m3Amax.flushed)));
    QCOMPARE(e4m3Amax.overflow, 0.0); // the amax lands exactly on the max
    // E4M3's 3 mantissa bits: about 6 dB a bit plus the spread's share, 25-35 dB.
    QVERIFY2(e4m3Amax.sqnrDb > 25.0 && e4m3Amax.sqnrDb < 35.0,
             qPrintable(QString::number(e4m3Amax.sqnrDb)));
    // FP4's one mantissa bit and narrow range: per-tensor scaling flushes what blocks keep.
    QVERIFY(by[tensorScaledName("fp4-e2m1")].flushed > by["nvfp4"].flushed);
    QVERIFY(by[tensorScaledName("fp4-e2m1")].flushed < by["fp4-e2m1"].flushed);
    // FP16 too (the amax policies scale it), not BF16 (FP32's range: a scale of 1).
    QVERIFY(by.count(tensorScaledName("fp16")) == 1 && by.count(tensorScaledName("bf16")) == 0);
    QVERIFY(by[tensorScaledName("fp16")].subnormal < by["fp16"].subnormal);
    // The tensor's amax where known: the sample of a tensor whose largest value fell outside it
    // scales down further, and flushes more.
    for (const FormatOutcome& o : compareFormats(sample, 128, 0, 64.0 * amaxOf(sample)))
        if (o.name == tensorScaledName("fp4-e2m1"))
            QVERIFY(o.flushed > by[tensorScaledName("fp4-e2m1")].flushed);
    // A margin of 2 leaves two binades of headroom: fewer at the top, more flushed at the bottom.
    for (const FormatOutcome& o : compareFormats(sample, 128, 2))
        if (o.name == tensorScaledName("fp4-e2m1"))
            QVERIFY(o.flushed > by[tensorScaledName("fp4-e2m1")].flushed);
    // A block scale brings the values into range: nothing flushes wholesale.
    QVERIFY(by["mxfp8-e4m3"].flushed < 0.02);
    QVERIFY(by["nvfp4"].flushed < by["fp4-e2m1"].flushed);
    // More mantissa bits, more SQNR (the block formats at their element's precision).
    QVERIFY(by["bf16"].sqnrDb > by["mxfp8-e4m3"].sqnrDb);
    QVERIFY(by["mxfp8-e4m3"].sqnrDb > by["mxfp8-e5m2"].sqnrDb);
    QVERIFY(by["mxfp8-e5m2"].sqnrDb > by["mxfp4"].sqnrDb);
    QVERIFY2(
        by["nvfp4"].sqnrDb > by["mxfp4"].sqnrDb, // finer blocks and scales
        qPrintable(QStringLiteral("%1 vs %2").arg(by["nvfp4"].sqnrDb).arg(by["mxfp4"].sqnrDb)));
}

void TestWhatIfFormats::trainerKeepsSamples() {
    TrainConfig config = configFromJson(
        {{"model", {{"hidden", {32}}}}, {"train", {{"steps", 2}, {"batch_size", 16}}}});
    Trainer t(config, std::make_shared<const DataSplit>(makeSyntheticData(1, 200, 50)));
    t.step();
    const StageStats& first = t.stageStats()[0];
    const auto& acts = first.samples[static_cast<std::size_t>(TensorRole::Activations)];
    QCOMPARE(acts.values.size(), std::size_t{16 * 32}); // small: kept whole
    QCOMPARE(acts.runLength, std::size_t{32});          // in the tensor's rows
    QVERIFY(!first.samples[static_cast<std::size_t>(TensorRole::WeightGradients)].values.empty());
    QVERIFY(first.samples[static_cast<std::size_t>(TensorRole::MasterWeights)].values.empty());
    // The sample is the input of the cast: FP32 here, so it is what the layer produced (ReLU:
    // no negative values).
    for (float v : acts.values)
        QVERIFY(v >= 0.0f);
    // Each sample carries its whole tensor's amax: a plain cast's, from its statistics.
    for (TensorRole r : {TensorRole::Weights, TensorRole::Activations,
                         TensorRole::ActivationGradients, TensorRole::WeightGradients}) {
        const auto& s = first.samples[static_cast<std::size_t>(r)];
        QCOMPARE(s.tensorAmax, static_cast<double>(first.role(r).amax));
        QVERIFY(s.tensorAmax >= amaxOf(s.values) && s.tensorAmax > 0.0);
    }
    // The weights of 784 -> 32 are larger than a sample: the whole tensor's amax is at least the
    // sample's, and under amax scaling it is the one the cast's scale came from.
    config = configFromJson({{"model", {{"hidden", {32}}}},
                             {"train", {{"steps", 2}, {"batch_size", 16}}},
                             {"recipe", {{"weights", "fp8-e4m3"}}},
                             {"scaling", {{"policy", "amax-current"}}}});
    Trainer scaled(config, std::make_shared<const DataSplit>(makeSyntheticData(1, 200, 50)));
    scaled.step();
    const StageStats& st = scaled.stageStats()[0];
    const auto& w = st.samples[static_cast<std::size_t>(TensorRole::Weights)];
    QVERIFY(w.values.size() < 784 * 32);
    const double fromScale = 448.0 / st.tensorScale[static_cast<std::size_t>(TensorRole::Weights)];
    QVERIFY2(std::fabs(w.tensorAmax / fromScale - 1.0) < 1e-12,
             qPrintable(QStringLiteral("%1 vs %2").arg(w.tensorAmax).arg(fromScale)));
    // Block casts: NVFP4's s_enc = 448 * 6 / amax (in float) came from it; MX takes none, and a
    // pass finds it.
    for (const char* policy : {"nvfp4", "mx"}) {
        config = configFromJson({{"model", {{"hidden", {32}}}},
                                 {"train", {{"steps", 2}, {"batch_size", 16}}},
                                 {"recipe", {{"weights", "fp4-e2m1"}}},
                                 {"scaling", {{"policy", policy}}}});
        Trainer blocks(config, std::make_shared<const DataSplit>(makeSyntheticData(1, 200, 50)));
        blocks.step();
        const StageStats& b = blocks.stageStats()[0];
        const auto& bw = b.samples[static_cast<std::size_t>(TensorRole::Weights)];
        QVERIFY(bw.tensorAmax >= amaxOf(bw.values) && bw.tensorAmax > 0.0);
        if (std::string(policy) == "nvfp4") {
            const double sEnc = b.tensorScale[static_cast<std::size_t>(TensorRole::Weights)];
            QVERIFY2(std::fabs(bw.tensorAmax * sEnc / 2688.0 - 1.0) < 1e-6,
                     qPrintable(QString::number(bw.tensorAmax * sEnc / 2688.0)));
        }
    }
}

void TestWhatIfFormats::recordedCountsGiveTheSameRow() {
    // A watched run's what-if rows come from the counts and error sums the record holds
    // (recordedOutcome); a live run's from the sample (compareFormats). For a tensor kept whole,
    // the same cast's counts must give the same row, bit for bit.
    std::mt19937 random(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(2048);
    for (float& v : values)
        v = normal(random) * 1e-5f;
    values[3] = 0.0f;
    const std::vector<FormatOutcome> live = compareFormats(values, 128);
    QVERIFY(!live.empty());
    std::vector<float> cast(values.size());
    for (const char* name : {"fp16", "fp8-e4m3"}) {
        const Quantizer quantizer(QuantConfig{parseFormat(name)});
        QuantStats stats;
        quantizer.quantize(values, cast, &stats);
        const FormatOutcome recorded =
            recordedOutcome(name, false, stats.counts, measureError(values, cast));
        const auto same = std::find_if(live.begin(), live.end(),
                                       [&](const FormatOutcome& o) { return o.name == name; });
        QVERIFY2(same != live.end(), name);
        QCOMPARE(recorded.flushed, same->flushed);
        QCOMPARE(recorded.subnormal, same->subnormal);
        QCOMPARE(recorded.overflow, same->overflow);
        QCOMPARE(recorded.sqnrDb, same->sqnrDb);
    }
    // Shares from counts alone, each of the nonzero values (as the shares line gives them).
    ClassCounts counts{};
    counts[static_cast<std::size_t>(QuantClass::Zero)] = 2;
    counts[static_cast<std::size_t>(QuantClass::Underflow)] = 2;
    counts[static_cast<std::size_t>(QuantClass::Subnormal)] = 1;
    counts[static_cast<std::size_t>(QuantClass::Normal)] = 4;
    counts[static_cast<std::size_t>(QuantClass::Overflow)] = 1;
    const FormatOutcome o = recordedOutcome("x", true, counts, QuantError{});
    QCOMPARE(o.flushed, 2.0 / 8.0);
    QCOMPARE(o.subnormal, 1.0 / 8.0);
    QCOMPARE(o.overflow, 1.0 / 8.0);
    QCOMPARE(o.values, std::uint64_t{10});
    QVERIFY(o.blockFormat);
    QVERIFY(std::isnan(o.sqnrDb)); // not measured
}

QTEST_APPLESS_MAIN(TestWhatIfFormats)
#include "test_what_if_formats.moc"
