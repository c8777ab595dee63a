// The slider's what-if: shifting a recorded histogram must predict the classes the quantiser
// gives the scaled values (exactly, for values away from the thresholds).
#include <QTest>

#include "numerics/quantizer.h"
#include "stats/what_if.h"

#include <cmath>
#include <random>
#include <vector>

using namespace plab;

class TestWhatIf : public QObject {
    Q_OBJECT
private slots:
    void predictsQuantizerClasses_data();
    void predictsQuantizerClasses();
    void thresholdNeighboursAreExact_data();
    void thresholdNeighboursAreExact();
    void measuredSharesAreTheCounts();
};

void TestWhatIf::predictsQuantizerClasses_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<double>("log2Factor");
    for (const QString& f :
         {QStringLiteral("fp16"), QStringLiteral("bf16"), QStringLiteral("fp8-e5m2"),
          QStringLiteral("fp8-e4m3"), QStringLiteral("e5m10:nosub")})
        for (double k : {0.0, 10.0, 20.0, 30.0, 45.0, 7.25})
            QTest::newRow(qPrintable(QStringLiteral("%1 x2^%2").arg(f).arg(k))) << f << k;
}

void TestWhatIf::predictsQuantizerClasses() {
    QFETCH(QString, format);
    QFETCH(double, log2Factor);
    const FormatSpec spec = parseFormat(format.toStdString());
    // Gradient-like values over 30 binades, placed at bin centres so no bin straddles a threshold
    // by more than half a bin; plus true zeros.
    std::mt19937 rng(4);
    std::uniform_int_distribution<int> bin(-4 * 40, -4 * 10);
    std::vector<float> values;
    for (int i = 0; i < 20000; ++i)
        values.push_back(static_cast<float>(std::exp2((bin(rng) + 0.5) / 4.0)));
    for (int i = 0; i < 1000; ++i)
        values.push_back(0.0f);
    QuantStats recorded;
    std::vector<float> out(values.size());
    Quantizer(QuantConfig::forFormat(parseFormat("fp32"))).quantize(values, out, &recorded);

    const double factor = std::exp2(log2Factor);
    std::vector<float> scaled(values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
        scaled[i] = static_cast<float>(values[i] * factor);
    QuantStats actual;
    Quantizer(QuantConfig::forFormat(spec, Rounding::NearestEven)).quantize(scaled, out, &actual);

    const WhatIfFractions predicted = whatIf(recorded, spec, factor);
    // Thresholds fall inside bins at most once each: allow a few bins' worth of disagreement.
    const double tolerance = 3.0 / 120.0;
    QVERIFY(std::fabs(predicted.zero - actual.fraction(QuantClass::Zero)) < 1e-12);
    QVERIFY2(std::fabs(predicted.flushed - actual.fraction(QuantClass::Underflow)) < tolerance,
             qPrintable(QStringLiteral("flushed %1 vs %2")
                            .arg(predicted.flushed)
                            .arg(actual.fraction(QuantClass::Underflow))));
    QVERIFY2(std::fabs(predicted.subnormal - actual.fraction(QuantClass::Subnormal)) < tolerance,
             qPrintable(QStringLiteral("subnormal %1 vs %2")
                            .arg(predicted.subnormal)
                            .arg(actual.fraction(QuantClass::Subnormal))));
    QVERIFY2(std::fabs(predicted.normal - actual.fraction(QuantClass::Normal)) < tolerance,
             qPrintable(QStringLiteral("normal %1 vs %2")
                            .arg(predicted.normal)
                            .arg(actual.fraction(QuantClass::Normal))));
    const double sum = predicted.zero + predicted.flushed + predicted.subnormal + predicted.normal +
                       predicted.overflow + predicted.nan;
    QVERIFY(std::fabs(sum - 1.0) < 1e-12);
    QVERIFY2(std::fabs(predicted.overflow - actual.fraction(QuantClass::Overflow)) < tolerance,
             qPrintable(QStringLiteral("overflow %1 vs %2")
                            .arg(predicted.overflow)
                            .arg(actual.fraction(QuantClass::Overflow))));
}

// The definition, bin by bin: a recorded value at its bin's centre v is judged by log2(v) +
// log2(factor) against the format's thresholds (flushed below half the smallest value, subnormal
// below min normal, overflow above max finite). Values in the bins nearest each threshold, on
// either side, must be classed exactly so: a preview that reads its bins one off moves one of
// them across. The bins two away lie wholly on their side, and there the quantiser itself must
// agree with the preview.
void TestWhatIf::thresholdNeighboursAreExact_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<double>("log2Factor");
    for (const QString& f :
         {QStringLiteral("fp16"), QStringLiteral("bf16"), QStringLiteral("fp8-e5m2"),
          QStringLiteral("fp8-e4m3"), QStringLiteral("fp6-e3m2"), QStringLiteral("e5m10:nosub")})
        for (double k : {0.0, 12.0, -9.5, 5.1, 0.3})
            QTest::newRow(qPrintable(QStringLiteral("%1 x2^%2").arg(f).arg(k))) << f << k;
}

namespace {

enum class Judged { Flushed, Subnormal, Normal, Overflow };
QLatin1String name(Judged j) {
    static const char* const kNames[] = {"flushed", "subnormal", "normal", "overflow"};
    return QLatin1String(kNames[static_cast<int>(j)]);
}

Judged judgeByDefinition(const FormatSpec& format, double log2Value) {
    const bool hasSubnormals = format.hasZero && format.subnormals && format.mantissaBits > 0;
    if (log2Value > std::log2(format.maxFinite()))
        return Judged::Overflow;
    if (format.hasZero && log2Value < std::log2(format.minPositive()) - 1.0)
        return Judged::Flushed;
    if (hasSubnormals && log2Value < std::log2(format.minNormal()))
        return Judged::Subnormal;
    return Judged::Normal;
}

} // namespace

void TestWhatIf::thresholdNeighboursAreExact() {
    QFETCH(QString, format);
    QFETCH(double, log2Factor);
    const FormatSpec spec = parseFormat(format.toStdString());
    const double factor = std::exp2(log2Factor);
    const bool hasSubnormals = spec.hasZero && spec.subnormals && spec.mantissaBits > 0;
    std::vector<double> thresholds = {std::log2(spec.maxFinite())};
    if (spec.hasZero)
        thresholds.push_back(std::log2(spec.minPositive()) - 1.0);
    if (hasSubnormals)
        thresholds.push_back(std::log2(spec.minNormal()));
    int checked = 0;
    for (double threshold : thresholds) {
        // Recorded bin centres sit at (k + 0.5) / 4; k0 is the last whose shifted centre lies
        // below the threshold.
        const int k0 =
            static_cast<int>(std::ceil(kHistBinsPerBinade * (threshold - log2Factor) - 0.5)) - 1;
        for (int k = k0 - 1; k <= k0 + 2; ++k) {
            const double log2Recorded = (k + 0.5) / kHistBinsPerBinade;
            const float value = static_cast<float>(std::exp2(log2Recorded));
            if (!(value > 0.0f) || std::isinf(value))
                continue; // outside float32: no recorded value can sit there
            QuantStats recorded;
            recorded.histogram[static_cast<std::size_t>(histogramBin(value))] = 1;
            recorded.counts[static_cast<std::size_t>(QuantClass::Normal)] = 1;
            const WhatIfFractions f = whatIf(recorded, spec, factor);
            const Judged expected = judgeByDefinition(spec, log2Recorded + log2Factor);
            const Judged got = f.overflow == 1.0    ? Judged::Overflow
                               : f.flushed == 1.0   ? Judged::Flushed
                               : f.subnormal == 1.0 ? Judged::Subnormal
                                                    : Judged::Normal;
            QVERIFY2(got == expected && f.normal + f.overflow + f.flushed + f.subnormal == 1.0,
                     qPrintable(QStringLiteral("2^%1 x2^%2 near threshold 2^%3: class %4, the "
                                               "definition says %5")
                                    .arg(log2Recorded)
                                    .arg(log2Factor)
                                    .arg(threshold)
                                    .arg(name(got), name(expected))));
            ++checked;
            // Two bins away the whole bin is on its side: the cast agrees.
            if (k != k0 - 1 && k != k0 + 2)
                continue;
            const float scaled = static_cast<float>(static_cast<double>(value) * factor);
            QuantStats actual;
            float out = 0.0f;
            Quantizer(QuantConfig::forFormat(spec)).quantize({&scaled, 1}, {&out, 1}, &actual);
            const QuantClass cast =
                actual.count(QuantClass::Overflow) == 1    ? QuantClass::Overflow
                : actual.count(QuantClass::Underflow) == 1 ? QuantClass::Underflow
                : actual.count(QuantClass::Subnormal) == 1 ? QuantClass::Subnormal
                                                           : QuantClass::Normal;
            const QuantClass preview = got == Judged::Overflow    ? QuantClass::Overflow
                                       : got == Judged::Flushed   ? QuantClass::Underflow
                                       : got == Judged::Subnormal ? QuantClass::Subnormal
                                                                  : QuantClass::Normal;
            QVERIFY2(cast == preview, qPrintable(QStringLiteral("%1 cast as %2, previewed as %3")
                                                     .arg(static_cast<double>(scaled), 0, 'g', 9)
                                                     .arg(QLatin1String(toString(cast)))
                                                     .arg(QLatin1String(toString(preview)))));
        }
    }
    QVERIFY(checked >= 4);
}

// At the recorded scale the views show the cast's own counts, not the histogram's estimate: a
// value just above E2M1's max that rounds down to it is normal, though its bin's centre (6.17)
// lies past the max.
void TestWhatIf::measuredSharesAreTheCounts() {
    const std::vector<float> in = {6.1f, 6.1f, 1.0f, 0.0f};
    std::vector<float> out(in.size());
    QuantStats stats;
    Quantizer(QuantConfig::forFormat(parseFormat("fp4-e2m1"))).quantize(in, out, &stats);
    const WhatIfFractions measured = measuredFractions(stats);
    QCOMPARE(measured.overflow, 0.0);
    QCOMPARE(measured.normal, 0.75);
    QCOMPARE(measured.zero, 0.25);
    const WhatIfFractions estimate = whatIf(stats, parseFormat("fp4-e2m1"), 1.0);
    QCOMPARE(estimate.overflow, 0.5); // why the estimate is kept for other scales only
}

QTEST_APPLESS_MAIN(TestWhatIf)
#include "test_what_if.moc"
