// Stochastic rounding: the Philox stream matches Random123's reference, rounding is unbiased
// (the mean converges to x within the statistical bound), and the bits are reproducible: same
// seed same bits, and the same bits for any thread count or split of the array.
#include <QTest>

#include "numerics/philox.h"
#include "numerics/quantizer.h"
#include "util/thread_pool.h"

#include <Random123/philox.h>

#include <cmath>
#include <vector>

using namespace plab;

class TestStochasticRounding : public QObject {
    Q_OBJECT
private slots:
    void philoxMatchesRandom123();
    void unbiased_data();
    void unbiased();
    void reproducible();
    void independentOfThreadsAndSplits();
};

void TestStochasticRounding::philoxMatchesRandom123() {
    r123::Philox4x32 reference;
    for (std::uint64_t seed : {0ull, 1ull, 0xDEADBEEFCAFEF00Dull})
        for (std::uint64_t stream : {0ull, 7ull, 0xFFFFFFFF00000001ull})
            for (std::uint64_t counter : {0ull, 1ull, 12345ull, 0x1'0000'0000ull}) {
                const r123::Philox4x32::ctr_type c = {
                    {static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                     static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
                const r123::Philox4x32::key_type k = {
                    {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
                const auto expected = reference(c, k);
                const philox::Block ours = philox::generate(counter, stream, seed);
                for (int w = 0; w < 4; ++w)
                    QCOMPARE(ours.w[w], expected.v[w]);
            }
}

void TestStochasticRounding::unbiased_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<float>("x");
    QTest::newRow("e4m3 normal, 1/512 of a step") << "fp8-e4m3" << 1.0f + 0.125f / 512;
    QTest::newRow("e4m3 negative, mid-step") << "fp8-e4m3" << -(3.0f + 0.3f * 0.25f);
    QTest::newRow("e5m2 subnormal") << "fp8-e5m2" << 0.37f * std::ldexp(1.0f, -16);
    QTest::newRow("e5m2 below min subnormal") << "fp8-e5m2" << 0.05f * std::ldexp(1.0f, -16);
    QTest::newRow("fp16 small update") << "fp16" << 1.0f + std::ldexp(1.0f, -14);
    QTest::newRow("bf16") << "bf16" << 0.1f;
    QTest::newRow("fp4") << "fp4-e2m1" << 2.6f;
}

void TestStochasticRounding::unbiased() {
    QFETCH(QString, format);
    QFETCH(float, x);
    constexpr std::size_t kN = 1 << 20;
    const std::vector<float> in(kN, x);
    std::vector<float> out(kN);
    Quantizer(QuantConfig::forFormat(parseFormat(format.toStdString()), Rounding::Stochastic))
        .quantize(in, out, nullptr, {.seed = 2024, .stream = 3});
    // Every result is one of the two neighbours of x; the mean must sit within 5 standard errors.
    const float lo = *std::min_element(out.begin(), out.end());
    const float hi = *std::max_element(out.begin(), out.end());
    QVERIFY(lo <= x && x <= hi);
    double sum = 0.0;
    for (float v : out)
        sum += v;
    const double mean = sum / kN;
    const double p = (static_cast<double>(x) - lo) / (static_cast<double>(hi) - lo);
    const double stdErr = (static_cast<double>(hi) - lo) * std::sqrt(p * (1 - p) / kN);
    QVERIFY2(std::fabs(mean - x) <= 5 * stdErr + 1e-12 * std::fabs(x),
             qPrintable(QStringLiteral("mean %1 vs x %2 (std err %3)")
                            .arg(mean, 0, 'g', 10)
                            .arg(static_cast<double>(x), 0, 'g', 10)
                            .arg(stdErr)));
    // And it is genuinely stochastic: both neighbours occur.
    QVERIFY(lo < hi);
}

void TestStochasticRounding::reproducible() {
    std::vector<float> in(100000);
    for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = std::sin(static_cast<float>(i)) * 3.0f;
    const Quantizer q(QuantConfig::forFormat(parseFormat("fp8-e5m2"), Rounding::Stochastic));
    std::vector<float> a(in.size()), b(in.size()), c(in.size());
    q.quantize(in, a, nullptr, {.seed = 1});
    q.quantize(in, b, nullptr, {.seed = 1});
    q.quantize(in, c, nullptr, {.seed = 2});
    QVERIFY(a == b);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < in.size(); ++i)
        differ += a[i] != c[i];
    QVERIFY2(differ > in.size() / 10, "another seed must change many roundings");
    q.quantize(in, c, nullptr, {.seed = 1, .stream = 1});
    QVERIFY(a != c);
}

void TestStochasticRounding::independentOfThreadsAndSplits() {
    std::vector<float> in(300'001);
    for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = std::cos(static_cast<float>(i) * 0.37f) * 1e-3f;
    const Quantizer q(QuantConfig::forFormat(parseFormat("bf16"), Rounding::Stochastic));
    std::vector<float> whole(in.size()), out(in.size());
    q.quantize(in, whole, nullptr, {.seed = 9});
    for (unsigned threads : {2u, 4u}) {
        ThreadPool pool(threads);
        q.quantize(in, out, nullptr, {.seed = 9, .pool = &pool});
        QVERIFY(out == whole);
    }
    // Splitting at an index that is not a multiple of 4 (mid Philox block) changes nothing.
    const std::size_t cut = 12345;
    q.quantize(std::span(in).first(cut), std::span(out).first(cut), nullptr, {.seed = 9});
    q.quantize(std::span(in).subspan(cut), std::span(out).subspan(cut), nullptr,
               {.seed = 9, .firstIndex = cut});
    QVERIFY(out == whole);
    for (CpuKernel kernel : supportedCpuKernels()) {
        Quantizer(q.config(), kernel).quantize(in, out, nullptr, {.seed = 9});
        QVERIFY2(out == whole, toString(kernel));
    }
}

QTEST_APPLESS_MAIN(TestStochasticRounding)
#include "test_stochastic_rounding.moc"
