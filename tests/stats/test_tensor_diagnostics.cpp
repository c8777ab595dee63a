// Kurtosis, block-scale spread and the signal-to-noise ratio on values whose answers are known
// by hand (numpy on watched tensors: tests/python/test_advise.py).
#include <QTest>

#include "stats/tensor_diagnostics.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace plab;

class TestTensorDiagnostics : public QObject {
    Q_OBJECT
private slots:
    void kurtosisOfKnownValues();
    void blockScaleSpreadOfKnownScales();
    void signalToNoiseRatio();
};

void TestTensorDiagnostics::kurtosisOfKnownValues() {
    // +-1 alternating: every deviation is 1, so E[c^4] / E[c^2]^2 = 1 (the smallest there is).
    QCOMPARE(tensorDiagnostics(std::vector<float>{1, -1, 1, -1}).kurtosis, 1.0);
    // {0 x 8, 4, -4}: mean 0, E[c^2] = 32/10, E[c^4] = 512/10: 51.2 / 10.24 = 5.
    std::vector<float> tails(8, 0.0f);
    tails.insert(tails.end(), {4.0f, -4.0f});
    QCOMPARE(tensorDiagnostics(tails).kurtosis, 5.0);
    // A shift changes nothing (central moments), a large one included.
    for (float& v : tails)
        v += 1e6f;
    QCOMPARE(tensorDiagnostics(tails).kurtosis, 5.0);
    // Inf and NaN are not values of the distribution: skipped and not counted.
    const float inf = std::numeric_limits<float>::infinity();
    const TensorDiagnostics d =
        tensorDiagnostics(std::vector<float>{1, -1, inf, 1, std::nanf(""), -1});
    QCOMPARE(d.kurtosis, 1.0);
    QCOMPARE(d.values, std::uint64_t{4});
    // No spread, or too few values: not a number, never a made-up 0.
    QVERIFY(std::isnan(tensorDiagnostics(std::vector<float>{2, 2, 2}).kurtosis));
    QVERIFY(std::isnan(tensorDiagnostics(std::vector<float>{2}).kurtosis));
}

void TestTensorDiagnostics::blockScaleSpreadOfKnownScales() {
    auto block = [](float decoded, std::uint32_t nonzero) {
        BlockInfo b;
        b.scale.decoded = decoded;
        b.nonzero = nonzero;
        return b;
    };
    // Scales 2^0 and 2^2 (std of {0, 2} is 1), an all-zero block (not live), a live block whose
    // scale underflowed (counted apart, not in the spread).
    const BlockScaleSpread s =
        blockScaleSpread({block(1.0f, 16), block(4.0f, 3), block(8.0f, 0), block(0.0f, 5)});
    QCOMPARE(s.log2StdDev, 1.0);
    QCOMPARE(s.liveBlocks, std::uint64_t{3});
    QCOMPARE(s.zeroScaleBlocks, std::uint64_t{1});
    QVERIFY(std::isnan(blockScaleSpread({block(2.0f, 1)}).log2StdDev));
}

void TestTensorDiagnostics::signalToNoiseRatio() {
    QCOMPARE(plab::signalToNoiseRatio({10, 9.0, 1.0, 9.0}), 3.0);
    QVERIFY(std::isinf(plab::signalToNoiseRatio({10, 9.0, 0.0, 9.0})));
    QVERIFY(std::isnan(plab::signalToNoiseRatio({})));
}

QTEST_GUILESS_MAIN(TestTensorDiagnostics)
#include "test_tensor_diagnostics.moc"
