// The fused kernels (every one this CPU runs) against the readable double-precision reference:
// identical values, bit for bit, for every format, rounding and overflow mode, and identical
// class counts, histogram and amax, and clip flags on exactly the Overflow class.
#include <QTest>

#include "dense_inputs.h"
#include "numerics/philox.h"
#include "numerics/quantizer.h"
#include "numerics/reference_quantize.h"

#include <bit>
#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <cmath>
#include <limits>
#include <vector>

using namespace plab;

class TestKernelVsReference : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void allConfigs_data();
    void allConfigs();
    void ignoresFlushToZeroMode();

private:
    std::vector<float> m_inputs;
};

void TestKernelVsReference::initTestCase() {
    // Every 11th dense input keeps each config well under a second while still covering ties
    // and boundaries of every binade; the specials are added explicitly.
    const std::vector<float> dense = test::denseInputs();
    for (std::size_t i = 0; i < dense.size(); i += 11)
        m_inputs.push_back(dense[i]);
    const float inf = std::numeric_limits<float>::infinity();
    for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                    -std::numeric_limits<float>::quiet_NaN(), 448.0f, 464.0f, 465.0f, 61440.0f,
                    65520.0f, std::numeric_limits<float>::denorm_min(),
                    std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()})
        m_inputs.push_back(v);
}

void TestKernelVsReference::allConfigs_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<int>("rounding");
    QTest::addColumn<int>("overflow");
    std::vector<std::string> formats;
    for (const FormatSpec& f : namedFormats())
        formats.push_back(f.name);
    for (const char* custom :
         {"e5m2:bias=16:nosub", "e4m3:unsigned", "e3m4:fnuz", "e2m5:finite", "e3m1:nozero",
          // Quantum a few binades below 2^-126: stochastic rounding once rounded zeros up.
          "e5m7:bias=122"})
        formats.push_back(custom);
    for (const std::string& f : formats)
        for (Rounding r : kAllRoundings)
            for (Overflow o : {Overflow::Saturate, Overflow::Inf})
                QTest::addRow("%s %s %s", f.c_str(), toString(r).data(), toString(o).data())
                    << QString::fromStdString(f) << static_cast<int>(r) << static_cast<int>(o);
}

void TestKernelVsReference::allConfigs() {
    QFETCH(QString, format);
    QFETCH(int, rounding);
    QFETCH(int, overflow);
    QuantConfig config;
    config.format = parseFormat(format.toStdString());
    config.rounding = static_cast<Rounding>(rounding);
    config.overflow = static_cast<Overflow>(overflow);
    const QuantizeOptions options{.seed = 0x1234, .stream = 99, .firstIndex = 0, .pool = nullptr};

    std::vector<std::uint32_t> expected(m_inputs.size());
    std::vector<std::uint8_t> expectedClipped(m_inputs.size());
    QuantStats expectedStats;
    for (std::size_t i = 0; i < m_inputs.size(); ++i) {
        QuantClass cls;
        const float q = quantizeReference(
            config, m_inputs[i], philox::elementWord(i, options.stream, options.seed), &cls);
        expected[i] = std::bit_cast<std::uint32_t>(q);
        // Clipped: rounded past the max. An unsigned format's negative inputs are Overflow too,
        // but out of range below, not clipped to the max.
        const bool belowUnsigned =
            !config.format.isSigned && std::signbit(m_inputs[i]) && !std::isnan(m_inputs[i]);
        expectedClipped[i] = cls == QuantClass::Overflow && !belowUnsigned ? 1 : 0;
        ++expectedStats.counts[static_cast<std::size_t>(cls)];
        ++expectedStats.histogram[static_cast<std::size_t>(histogramBin(m_inputs[i]))];
        if (!std::isnan(m_inputs[i]))
            expectedStats.amax = std::max(expectedStats.amax, std::fabs(m_inputs[i]));
    }

    std::vector<float> out(m_inputs.size());
    for (CpuKernel kernel : supportedCpuKernels()) {
        QuantStats stats;
        Quantizer(config, kernel).quantize(m_inputs, out, &stats, options);
        for (std::size_t i = 0; i < m_inputs.size(); ++i)
            if (std::bit_cast<std::uint32_t>(out[i]) != expected[i])
                QFAIL(qPrintable(
                    QStringLiteral("%1 kernel: input 0x%2 gave 0x%3, reference 0x%4")
                        .arg(QLatin1String(toString(kernel)))
                        .arg(std::bit_cast<std::uint32_t>(m_inputs[i]), 8, 16, QLatin1Char('0'))
                        .arg(std::bit_cast<std::uint32_t>(out[i]), 8, 16, QLatin1Char('0'))
                        .arg(expected[i], 8, 16, QLatin1Char('0'))));
        for (std::size_t c = 0; c < kQuantClassCount; ++c)
            QVERIFY2(stats.counts[c] == expectedStats.counts[c],
                     qPrintable(QStringLiteral("%1: class %2 counted %3, reference %4")
                                    .arg(QLatin1String(toString(kernel)))
                                    .arg(QLatin1String(toString(static_cast<QuantClass>(c))))
                                    .arg(stats.counts[c])
                                    .arg(expectedStats.counts[c])));
        QVERIFY(stats.histogram == expectedStats.histogram);
        QCOMPARE(stats.amax, expectedStats.amax);

        // The same values without counting, and counted in place (a float32 cast has paths of
        // its own for both: a copy, and counting without a store).
        for (const bool inPlace : {false, true}) {
            std::vector<float> values = m_inputs;
            std::fill(out.begin(), out.end(), 0.0f);
            const std::span<float> target = inPlace ? std::span<float>(values) : out;
            QuantStats inPlaceStats;
            Quantizer(config, kernel)
                .quantize(values, target, inPlace ? &inPlaceStats : nullptr, options);
            for (std::size_t i = 0; i < m_inputs.size(); ++i)
                if (std::bit_cast<std::uint32_t>(target[i]) != expected[i])
                    QFAIL(qPrintable(
                        QStringLiteral("%1 kernel, %2: input 0x%3 gave 0x%4, "
                                       "reference 0x%5")
                            .arg(QLatin1String(toString(kernel)))
                            .arg(inPlace ? "counted in place" : "not counted")
                            .arg(std::bit_cast<std::uint32_t>(m_inputs[i]), 8, 16, QLatin1Char('0'))
                            .arg(std::bit_cast<std::uint32_t>(target[i]), 8, 16, QLatin1Char('0'))
                            .arg(expected[i], 8, 16, QLatin1Char('0'))));
            if (inPlace) {
                QVERIFY(inPlaceStats.counts == expectedStats.counts);
                QVERIFY(inPlaceStats.histogram == expectedStats.histogram);
                QCOMPARE(inPlaceStats.amax, expectedStats.amax);
            }
        }

        // The clip flags (quantizePiece's optional output, with and without counting): 1 for
        // exactly the elements of class Overflow.
        for (const bool counting : {false, true}) {
            std::vector<std::uint8_t> clipped(m_inputs.size(), 7);
            QuantTally tally;
            Quantizer(config, kernel)
                .quantizePiece(m_inputs, out, counting ? &tally : nullptr, options, clipped.data());
            for (std::size_t i = 0; i < m_inputs.size(); ++i)
                if (clipped[i] != expectedClipped[i])
                    QFAIL(qPrintable(
                        QStringLiteral("%1 kernel: input 0x%2 clip flag %3, class %4")
                            .arg(QLatin1String(toString(kernel)))
                            .arg(std::bit_cast<std::uint32_t>(m_inputs[i]), 8, 16, QLatin1Char('0'))
                            .arg(clipped[i])
                            .arg(expectedClipped[i])));
        }

        // The same values and counts when the tensor is cast in calls of 1000 elements (each
        // call's random words start at its own first index).
        const Quantizer pieceQuantizer(config, kernel);
        QuantStats pieces;
        std::fill(out.begin(), out.end(), 0.0f);
        for (std::size_t start = 0; start < m_inputs.size(); start += 1000) {
            const std::size_t len = std::min<std::size_t>(1000, m_inputs.size() - start);
            QuantizeOptions piece = options;
            piece.firstIndex = start;
            pieceQuantizer.quantize(std::span<const float>(m_inputs).subspan(start, len),
                                    std::span<float>(out).subspan(start, len), &pieces, piece);
        }
        for (std::size_t i = 0; i < m_inputs.size(); ++i)
            QCOMPARE(std::bit_cast<std::uint32_t>(out[i]), expected[i]);
        QVERIFY(pieces.counts == expectedStats.counts);
        QVERIFY(pieces.histogram == expectedStats.histogram);
        QCOMPARE(pieces.amax, expectedStats.amax);
    }
}

// A host that switched on flush-to-zero / denormals-are-zero must not change our results.
void TestKernelVsReference::ignoresFlushToZeroMode() {
#if defined(__SSE2__)
    const QuantConfig config = QuantConfig::forFormat(parseFormat("bf16"));
    const std::vector<float> in = {1e-39f, -3e-40f, 1e-45f, 2e-38f, 1.0f};
    std::vector<float> expected(in.size()), out(in.size());
    for (std::size_t i = 0; i < in.size(); ++i)
        expected[i] = quantizeReference(config, in[i]);
    const unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u);
    for (CpuKernel kernel : supportedCpuKernels())
        Quantizer(config, kernel).quantize(in, out, nullptr);
    const unsigned after = _mm_getcsr();
    _mm_setcsr(saved);
    // The caller's mode is restored (bits 0-5 are sticky exception flags, not the mode).
    QCOMPARE(after & ~0x3Fu, (saved | 0x8040u) & ~0x3Fu);
    for (std::size_t i = 0; i < in.size(); ++i)
        QCOMPARE(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(expected[i]));
    QVERIFY(out[0] != 0.0f);
#else
    QSKIP("x86 only: MXCSR flush modes");
#endif
}

QTEST_APPLESS_MAIN(TestKernelVsReference)
#include "test_kernel_vs_reference.moc"
