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
