// The fused counters on constructed inputs with known numbers of each class, the histogram's
// bin edges and its exact shift under power-of-two scaling, and thread-count independence.
#include <QTest>

#include "numerics/quantize_element.h"
#include "numerics/quantizer.h"
#include "numerics/tensor_cast.h"
#include "util/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace plab;

class TestQuantStats : public QObject {
    Q_OBJECT
private slots:
    void fp16Classes();
    void saturatingFp8Classes();
    void noSubnormalsFlush();
    void unsignedAndNoZeroFormats();
    void histogramEdges();
    void bitsHistogramBinMatchesDefinition();
    void histogramShiftsUnderScaling();
    void threadCountIndependent();
    void histogramSkippedOnRequest();
    void errorSumsMatchTheirDefinition();
    void castErrorSumsMatchMeasureError();
};

namespace {

QuantStats run(const char* format, const std::vector<float>& in,
               Rounding rounding = Rounding::NearestEven) {
    QuantStats stats;
    std::vector<float> out(in.size());
    Quantizer(QuantConfig::forFormat(parseFormat(format), rounding)).quantize(in, out, &stats);
    return stats;
}

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

} // namespace

void TestQuantStats::fp16Classes() {
    // 3 zeros, 4 flushed (< 2^-25), 3 subnormal, 5 normal, 3 overflow (incl. one Inf), 2 NaN.
    const std::vector<float> in = {0.0f,  -0.0f,    0.0f,  1e-9f, -1e-9f, 2e-8f,  1e-30f,
                                   1e-6f, -3e-5f,   6e-8f, 1.0f,  -2.5f,  100.0f, 65504.0f,
                                   7e-5f, 70000.0f, -1e6f, kInf,  kNaN,   -kNaN};
    const QuantStats s = run("fp16", in);
    QCOMPARE(s.count(QuantClass::Zero), 3ull);
    QCOMPARE(s.count(QuantClass::Underflow), 4ull);
    QCOMPARE(s.count(QuantClass::Subnormal), 3ull);
    QCOMPARE(s.count(QuantClass::Normal), 5ull);
    QCOMPARE(s.count(QuantClass::Overflow), 3ull);
    QCOMPARE(s.count(QuantClass::NaN), 2ull);
    QCOMPARE(s.total(), static_cast<std::uint64_t>(in.size()));
    QCOMPARE(s.amax, kInf);
    QCOMPARE(s.histogram[kHistZeroBin], 3ull);
    QCOMPARE(s.histogram[kHistInfBin], 1ull);
    QCOMPARE(s.histogram[kHistNanBin], 2ull);
    QCOMPARE(s.fraction(QuantClass::Underflow), 4.0 / 20.0);
    // "Flushed" is of the nonzero inputs: the 3 true zeros are neither flushed nor counted.
    QCOMPARE(s.flushedShare(), 4.0 / 17.0);
    QCOMPARE(QuantStats{}.flushedShare(), 0.0);
}

void TestQuantStats::saturatingFp8Classes() {
    // E4M3 saturates by default: 500 and -Inf count as overflow, amax ignores NaN.
    const std::vector<float> in = {448.0f, 464.0f, 500.0f, -kInf, kNaN, 0.001f, 1e-4f, 3.0f};
    const QuantStats s = run("fp8-e4m3", in);
    QCOMPARE(s.count(QuantClass::Normal), 3ull); // 448, 464 -> 448, 3
    QCOMPARE(s.count(QuantClass::Overflow), 2ull);
    QCOMPARE(s.count(QuantClass::NaN), 1ull);
    QCOMPARE(s.count(QuantClass::Subnormal), 1ull); // 0.001 -> 2^-9
    QCOMPARE(s.count(QuantClass::Underflow), 1ull); // 1e-4 < 2^-10
    QCOMPARE(s.amax, kInf);
    const QuantStats finite = run("fp8-e4m3", {448.0f, -500.0f, kNaN});
    QCOMPARE(finite.amax, 500.0f);
}

void TestQuantStats::noSubnormalsFlush() {
    // Without subnormals, values below half of fp16's min normal flush and none are subnormal.
    const std::vector<float> in = {1e-6f, 2e-5f, 4e-5f, 6.2e-5f};
    const QuantStats withSub = run("fp16", in);
    QCOMPARE(withSub.count(QuantClass::Subnormal), 3ull);
    const QuantStats noSub = run("e5m10:nosub", in);
    QCOMPARE(noSub.count(QuantClass::Subnormal), 0ull);
    QCOMPARE(noSub.count(QuantClass::Underflow), 2ull); // 1e-6 and 2e-5 < 2^-15
    QCOMPARE(noSub.count(QuantClass::Normal), 2ull);    // 4e-5 rounds up to 2^-14; 6.2e-5 is normal
}

void TestQuantStats::unsignedAndNoZeroFormats() {
    const QuantStats u = run("e4m3:unsigned", {-1.0f, -0.0f, 2.0f, -kInf});
    QCOMPARE(u.count(QuantClass::Overflow), 2ull);
    QCOMPARE(u.count(QuantClass::Zero), 1ull);
    QCOMPARE(u.count(QuantClass::Normal), 1ull);
    // E8M0 has no zero: 0 stays "zero on input" (clamped to 2^-127), tiny values clamp too.
    // 3 is a tie between 2 (exponent field 128) and 4 (129): nearest-even takes the even field.
    std::vector<float> out(3);
    QuantStats e;
    Quantizer(QuantConfig::forFormat(parseFormat("e8m0")))
        .quantize(std::vector<float>{0.0f, 1e-39f, 3.0f}, out, &e);
    QCOMPARE(e.count(QuantClass::Zero), 1ull);
    QCOMPARE(e.count(QuantClass::Underflow), 1ull);
    QCOMPARE(out[0], std::ldexp(1.0f, -127));
    QCOMPARE(out[1], std::ldexp(1.0f, -127));
    QCOMPARE(out[2], 2.0f);
}

// histogramBinOfBits (shared with the CUDA kernel) against histogramBin on every float32 with
// a 16-bit stride through all codes, plus each quarter edge's neighbours in every binade.
void TestQuantStats::bitsHistogramBinMatchesDefinition() {
    for (std::uint64_t u = 0; u <= 0xFFFFFFFFu; u += 0x10001u) {
        const auto bits = static_cast<std::uint32_t>(u);
        float x;
        std::memcpy(&x, &bits, 4);
        QCOMPARE(histogramBinOfBits(bits), histogramBin(x));
    }
    for (int e = -149; e <= 127; ++e)
        for (double q : {0.25, 0.5, 0.75})
            if (const float edge = static_cast<float>(std::ldexp(std::exp2(q), e));
                std::isfinite(edge) && edge != 0.0f)
                for (float v : {std::nextafter(edge, 0.0f), edge,
                                std::nextafter(edge, std::numeric_limits<float>::infinity())}) {
                    std::uint32_t bits;
                    std::memcpy(&bits, &v, 4);
                    QCOMPARE(histogramBinOfBits(bits), histogramBin(v));
                }
}

void TestQuantStats::histogramEdges() {
    const float quarter = static_cast<float>(std::exp2(0.25));
    const int one = 1 + (0 - kHistMinExponent) * kHistBinsPerBinade;
    QCOMPARE(histogramBin(1.0f), one);
    QCOMPARE(histogramBin(-1.0f), one);
    QCOMPARE(histogramBin(std::nextafter(1.0f, 0.0f)), one - 1);
    // The float nearest 2^(1/4) may lie on either side of it; its neighbours decide the edge.
    const float firstAbove = quarter >= std::exp2(0.25) ? quarter : std::nextafter(quarter, 2.0f);
    QCOMPARE(histogramBin(std::nextafter(firstAbove, 0.0f)), one);
    QCOMPARE(histogramBin(firstAbove), one + 1);
    QCOMPARE(histogramBin(1.5f), one + 2);  // log2 1.5 = 0.58
    QCOMPARE(histogramBin(1.75f), one + 3); // 0.81
    QCOMPARE(histogramBin(std::numeric_limits<float>::denorm_min()), 1);
    QCOMPARE(histogramBin(std::numeric_limits<float>::max()), kHistLogBins);
    QCOMPARE(histogramBinLowerLog2(one), 0.0);
    // The kernel agrees with the definition on every float32 power-of-two neighbourhood.
    std::vector<float> in;
    for (int e = -149; e <= 127; ++e)
        for (float m : {1.0f, 1.0000001f, 1.18920708f, 1.18920720f, 1.41421354f, 1.41421366f,
                        1.68179281f, 1.68179294f, 1.99999988f})
            if (const float v = std::ldexp(m, e); std::isfinite(v) && v != 0.0f)
                in.push_back(v);
    const QuantStats s = run("fp32", in);
    std::array<std::uint64_t, kHistBinCount> expected{};
    for (float v : in)
        ++expected[static_cast<std::size_t>(histogramBin(v))];
    QVERIFY(s.histogram == expected);
}

void TestQuantStats::histogramShiftsUnderScaling() {
    std::mt19937 rng(1);
    std::lognormal_distribution<float> dist(-8.0f, 3.0f);
    std::vector<float> in(10000), scaled(10000);
    for (std::size_t i = 0; i < in.size(); ++i) {
        in[i] = dist(rng);
        scaled[i] = in[i] * 8.0f; // 2^3: exactly 12 quarter-binade bins
    }
    const QuantStats a = run("fp32", in), b = run("fp32", scaled);
    for (int bin = 1; bin + 12 <= kHistLogBins; ++bin)
        QCOMPARE(b.histogram[static_cast<std::size_t>(bin + 12)],
                 a.histogram[static_cast<std::size_t>(bin)]);
}

void TestQuantStats::threadCountIndependent() {
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1e-4f);
    std::vector<float> in(1'000'003);
    for (float& v : in)
        v = dist(rng);
    const Quantizer q(QuantConfig::forFormat(parseFormat("fp8-e5m2"), Rounding::Stochastic));
    std::vector<float> reference(in.size()), out(in.size());
    QuantStats one;
    q.quantize(in, reference, &one, {.seed = 11});
    for (unsigned threads : {2u, 3u}) {
        ThreadPool pool(threads);
        QuantStats many;
        q.quantize(in, out, &many, {.seed = 11, .pool = &pool});
        QVERIFY(out == reference);
        QVERIFY(many.counts == one.counts);
        QVERIFY(many.histogram == one.histogram);
        QCOMPARE(many.amax, one.amax);
    }
}

// countHistogram = false (a caller casting one tensor in several formats counts its histogram
// once): the histogram is left as it was and everything else is as with it, on each kernel,
// one thread and several, a call short of the split histogram and one past it, an element format
// and a block format (the block quantiser's pieces), with float32 subnormals (the general path).
void TestQuantStats::histogramSkippedOnRequest() {
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 1e-3f);
    ThreadPool pool(3);
    for (CpuKernel kernel : supportedCpuKernels()) {
        for (std::size_t n : {std::size_t{1000}, std::size_t{300'000}}) {
            std::vector<float> in(n);
            for (float& v : in)
                v = dist(rng);
            in[7] = 1e-40f; // a float32 subnormal
            for (const char* format : {"fp8-e4m3", "nvfp4"}) {
                const TensorCast cast(TensorCastSpec{.format = format});
                const Quantizer element(
                    QuantConfig::forFormat(parseFormat("fp8-e4m3"), Rounding::NearestEven), kernel);
                for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
                    QuantizeOptions counted{.pool = p, .measureError = true};
                    QuantizeOptions skipped = counted;
                    skipped.countHistogram = false;
                    std::vector<float> outCounted(n), outSkipped(n);
                    TensorCastResult withHist, without;
                    if (std::string_view(format) == "nvfp4") {
                        cast.cast(in, outCounted, 0, 1.0f, counted, &withHist);
                        cast.cast(in, outSkipped, 0, 1.0f, skipped, &without);
                    } else {
                        element.quantize(in, outCounted, &withHist.stats, counted);
                        element.quantize(in, outSkipped, &without.stats, skipped);
                    }
                    const QString where = QString("%1, %2 values, %3, %4")
                                              .arg(toString(kernel))
                                              .arg(n)
                                              .arg(format)
                                              .arg(p ? "3 threads" : "1 thread");
                    QVERIFY2(outSkipped == outCounted, qPrintable(where));
                    QVERIFY2(without.stats.counts == withHist.stats.counts, qPrintable(where));
                    QCOMPARE(without.stats.amax, withHist.stats.amax);
                    QCOMPARE(without.stats.error.errorSq, withHist.stats.error.errorSq);
                    QVERIFY2(without.stats.error.count == n, qPrintable(where));
                    std::uint64_t countedBins = 0, skippedBins = 0;
                    for (std::size_t b = 0; b < kHistBinCount; ++b) {
                        countedBins += withHist.stats.histogram[b];
                        skippedBins += without.stats.histogram[b];
                    }
                    QVERIFY2(countedBins == n, qPrintable(where));
                    QVERIFY2(skippedBins == 0, qPrintable(where));
                }
            }
        }
    }
}

// measureError's sums (vector lanes in each target clone) equal their definition written out
// here bit for bit: element i into partial sum i % 8 in order within each chunk of kErrorChunk
// elements, non-finite pairs skipped, each chunk's partials added into running lanes in chunk
// order, the lanes added at the end; on lengths around the vector width and the chunk, with
// Inf and NaN on either side.
void TestQuantStats::errorSumsMatchTheirDefinition() {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
          std::size_t{15}, std::size_t{16}, std::size_t{17}, std::size_t{1000}, std::size_t{4099},
          kErrorChunk, kErrorChunk + 13, 2 * kErrorChunk + 5}) {
        std::vector<float> in(n), out(n);
        for (std::size_t i = 0; i < n; ++i) {
            in[i] = normal(rng) * std::exp2(static_cast<float>(static_cast<int>(i % 40) - 20));
            out[i] = in[i] * (1.0f + 0.01f * normal(rng));
            if (i % 97 == 5)
                in[i] = i % 2 ? kInf : -kNaN;
            if (i % 89 == 3)
                out[i] = i % 2 ? -kInf : kNaN;
        }
        double signal[8] = {}, error[8] = {}, outSq[8] = {};
        std::uint64_t count = 0;
        for (std::size_t begin = 0; begin < n; begin += kErrorChunk) {
            double chunkSignal[8] = {}, chunkError[8] = {}, chunkOut[8] = {};
            for (std::size_t i = begin; i < std::min(n, begin + kErrorChunk); ++i) {
                const std::size_t lane = i % 8;
                if (!std::isfinite(in[i]) || !std::isfinite(out[i]))
                    continue;
                const double x = in[i], q = out[i];
                ++count;
                chunkSignal[lane] += x * x;
                chunkError[lane] += (q - x) * (q - x);
                chunkOut[lane] += q * q;
            }
            for (int lane = 0; lane < 8; ++lane) {
                signal[lane] += chunkSignal[lane];
                error[lane] += chunkError[lane];
                outSq[lane] += chunkOut[lane];
            }
        }
        QuantError want;
        want.count = count;
        for (int lane = 0; lane < 8; ++lane) {
            want.signalSq += signal[lane];
            want.errorSq += error[lane];
            want.outputSq += outSq[lane];
        }
        const QuantError got = measureError(in, out);
        QCOMPARE(got.count, want.count);
        QVERIFY2(std::memcmp(&got.signalSq, &want.signalSq, sizeof(double)) == 0 &&
                     std::memcmp(&got.errorSq, &want.errorSq, sizeof(double)) == 0 &&
                     std::memcmp(&got.outputSq, &want.outputSq, sizeof(double)) == 0,
                 qPrintable(QString("n = %1").arg(n)));
    }
}

// The cast's own error sums (QuantizeOptions::measureError, fused into every kernel) equal
// measureError of its input and output bit for bit: for every kernel this CPU runs, formats on
// the fast path (with and without a range below float32's normals) and on the general one
// (FNUZ, unsigned), nearest-even and stochastic rounding, one thread and three, in place and
// not, lengths around the vector widths, the kernels' blocks and the chunks, and inputs with
// float32 subnormals (a vector the fast path hands to the general one), zeros, Inf and NaN.
void TestQuantStats::castErrorSumsMatchMeasureError() {
    std::mt19937 rng(9);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const std::size_t sizes[] = {1, 5, 8, 13, 16, 17, 515, 4099, kErrorChunk, 2 * kErrorChunk + 7};
    std::vector<float> source(sizes[std::size(sizes) - 1]);
    for (std::size_t i = 0; i < source.size(); ++i) {
        source[i] = normal(rng) * std::exp2(static_cast<float>(static_cast<int>(i % 50) - 30));
        if (i % 211 == 7)
            source[i] = 1e-40f * static_cast<float>(i % 5 + 1); // float32 subnormal
        if (i % 307 == 11)
            source[i] = i % 2 ? kInf : -kNaN;
        if (i % 401 == 13)
            source[i] = i % 2 ? 0.0f : 1e30f;
    }
    ThreadPool pool(3);
    std::uint64_t measured = 0;
    for (const CpuKernel kernel : supportedCpuKernels())
        for (const char* format : {"fp8-e4m3", "fp16", "fp8-e5m2fnuz", "e4m3:unsigned", "fp32"})
            for (const Rounding rounding : {Rounding::NearestEven, Rounding::Stochastic}) {
                const Quantizer q(QuantConfig::forFormat(parseFormat(format), rounding), kernel);
                for (const std::size_t n : sizes)
                    for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool})
                        for (const bool inPlace : {false, true}) {
                            const std::vector<float> in(source.begin(),
                                                        source.begin() + static_cast<long>(n));
                            std::vector<float> out(in);
                            QuantStats stats;
                            q.quantize(inPlace ? std::span<const float>(out) : in, out, &stats,
                                       {.seed = 3, .pool = threads, .measureError = true});
                            const QuantError want = measureError(in, out);
                            const QuantError& got = stats.error;
                            const QString where = QString("%1 %2 rounding %3 n %4 %5 %6")
                                                      .arg(toString(kernel))
                                                      .arg(format)
                                                      .arg(static_cast<int>(rounding))
                                                      .arg(n)
                                                      .arg(threads ? "3 threads" : "1 thread")
                                                      .arg(inPlace ? "in place" : "into another");
                            QVERIFY2(got.count == want.count, qPrintable(where));
                            measured += got.count;
                            QVERIFY2(std::memcmp(&got.signalSq, &want.signalSq, 8) == 0 &&
                                         std::memcmp(&got.errorSq, &want.errorSq, 8) == 0 &&
                                         std::memcmp(&got.outputSq, &want.outputSq, 8) == 0,
                                     qPrintable(where));
                        }
            }
    QVERIFY(measured > 1'000'000); // the pairs were mostly finite: the sums were not empty
}

QTEST_APPLESS_MAIN(TestQuantStats)
#include "test_quant_stats.moc"
