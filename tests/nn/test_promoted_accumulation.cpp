// Matrix products with DeepSeek-V3's promotion (Accumulation::promoteEvery) against a scalar
// reference written from the rule: per output, chunks of N products summed in the accumulation
// format with a rounding after every addition, each chunk's sum added to an FP32 total. Checked
// bit for bit through all three product shapes, for the vectorised path (e8m13, nearest-even:
// 8-row tiles, 16 columns at a time and the last columns) and the general one (fp16, and
// stochastic rounding with its per-product random words), on one thread and spread over a pool.
#include <QTest>

#include "nn/matmul.h"
#include "numerics/philox.h"
#include "numerics/quantizer.h"
#include "numerics/reference_quantize.h"
#include "util/thread_pool.h"

#include <cstring>
#include <random>
#include <vector>

using namespace plab;

class TestPromotedAccumulation : public QObject {
    Q_OBJECT
private slots:
    void matchesReference_data();
    void matchesReference();
    void promotionBeatsANarrowRunningSum();
};

namespace {

RowMatrix randomMatrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    RowMatrix m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i)
        m.data()[i] = normal(rng);
    return m;
}

// C (M, N) = A (M, K) B (K, N) by the rule, one output at a time.
RowMatrix reference(const RowMatrix& a, const RowMatrix& b, const QuantConfig& format, int every,
                    const RowMatrix* start) {
    RowMatrix c(a.rows(), b.cols());
    const bool stochastic = format.rounding == Rounding::Stochastic;
    for (Eigen::Index row = 0; row < a.rows(); ++row)
        for (Eigen::Index col = 0; col < b.cols(); ++col) {
            const auto index = static_cast<std::uint64_t>(row * b.cols() + col);
            float total = start != nullptr ? (*start)(row, col) : 0.0f;
            for (Eigen::Index from = 0; from < a.cols(); from += every) {
                float chunk = 0.0f;
                for (Eigen::Index i = from; i < std::min<Eigen::Index>(a.cols(), from + every);
                     ++i) {
                    const std::uint32_t word =
                        stochastic
                            ? philox::elementWord(index, static_cast<std::uint64_t>(i) + 1, 0)
                            : 0u;
                    chunk = quantizeReference(format, chunk + a(row, i) * b(i, col), word);
                }
                total += chunk;
            }
            c(row, col) = total;
        }
    return c;
}

bool sameBits(const RowMatrix& x, const RowMatrix& y) {
    return x.size() == y.size() &&
           std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.size()) * sizeof(float)) == 0;
}

} // namespace

void TestPromotedAccumulation::matchesReference_data() {
    QTest::addColumn<QString>("format");
    QTest::addColumn<bool>("stochastic");
    QTest::addColumn<int>("every");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    QTest::addColumn<int>("threads");
    QTest::newRow("e8m13 every 128") << "e8m13" << false << 128 << 4 << 9 << 1;
    QTest::newRow("e8m13 every 7") << "e8m13" << false << 7 << 4 << 9 << 1;
    QTest::newRow("fp16 every 32") << "fp16" << false << 32 << 4 << 9 << 1;
    QTest::newRow("e8m13 stochastic every 64") << "e8m13" << true << 64 << 4 << 9 << 1;
    // 37 rows: four whole 8-row tiles (the vectorised tile) and a partial one; 40 columns: two
    // vectors of 16 and 8 left over. Over 3 threads the tiles go in ranges, each thread its own.
    QTest::newRow("e8m13 every 128, tiles (vectorised)")
        << "e8m13" << false << 128 << 37 << 40 << 1;
    QTest::newRow("e8m13 every 128, tiles, 3 threads") << "e8m13" << false << 128 << 37 << 40 << 3;
    QTest::newRow("fp16 every 32, tiles, 3 threads") << "fp16" << false << 32 << 37 << 40 << 3;
    QTest::newRow("e8m13 stochastic every 64, 3 threads") << "e8m13" << true << 64 << 37 << 40 << 3;
}

void TestPromotedAccumulation::matchesReference() {
    QFETCH(QString, format);
    QFETCH(bool, stochastic);
    QFETCH(int, every);
    QFETCH(int, rows);
    QFETCH(int, cols);
    QFETCH(int, threads);
    const QuantConfig config =
        QuantConfig::forFormat(parseFormat(format.toStdString()),
                               stochastic ? Rounding::Stochastic : Rounding::NearestEven);
    const Quantizer q(config);
    ThreadPool pool(static_cast<unsigned>(threads));
    const Accumulation acc{&q, 0, every, &pool};
    const Eigen::Index m = rows, k = 300, n = cols;
    const RowMatrix a = randomMatrix(m, k, 1), b = randomMatrix(k, n, 2),
                    c0 = randomMatrix(m, n, 3);
    const RowMatrix want = reference(a, b, config, every, nullptr);
    const RowMatrix wantAccumulated = reference(a, b, config, every, &c0);

    RowMatrix c(m, n);
    matmulNN(MatrixMap(c.data(), m, n), ConstMatrixMap(a.data(), m, k),
             ConstMatrixMap(b.data(), k, n), false, acc);
    QVERIFY2(sameBits(c, want), "NN");

    const RowMatrix bt = b.transpose(); // (N, K)
    matmulNT(MatrixMap(c.data(), m, n), ConstMatrixMap(a.data(), m, k),
             ConstMatrixMap(bt.data(), n, k), false, acc);
    QVERIFY2(sameBits(c, want), "NT");

    const RowMatrix at = a.transpose(); // (K, M)
    c = c0;
    matmulTN(MatrixMap(c.data(), m, n), ConstMatrixMap(at.data(), k, m),
             ConstMatrixMap(b.data(), k, n), true, acc);
    QVERIFY2(sameBits(c, wantAccumulated), "TN, accumulating");
}

void TestPromotedAccumulation::promotionBeatsANarrowRunningSum() {
    // The point of promotion: a long sum in a ~14-bit accumulator drifts (each addition loses
    // the bits of a small term to a large total); promoted every 128 it stays near FP32.
    const Eigen::Index k = 4096;
    RowMatrix a = RowMatrix::Constant(1, k, 1.0f);
    const RowMatrix b = randomMatrix(k, 1, 5).array().abs() + 1.0f; // positive: the sum grows
    const Quantizer e8m13(QuantConfig::forFormat(parseFormat("e8m13")));
    RowMatrix exact(1, 1), narrow(1, 1), promoted(1, 1);
    exact(0, 0) = static_cast<float>(b.cast<double>().sum());
    const ConstMatrixMap av(a.data(), 1, k), bv(b.data(), k, 1);
    matmulNN(MatrixMap(narrow.data(), 1, 1), av, bv, false,
             Accumulation{&e8m13, 0, static_cast<int>(k)});
    matmulNN(MatrixMap(promoted.data(), 1, 1), av, bv, false, Accumulation{&e8m13, 0, 128});
    const double narrowError = std::abs(narrow(0, 0) - exact(0, 0)) / exact(0, 0);
    const double promotedError = std::abs(promoted(0, 0) - exact(0, 0)) / exact(0, 0);
    QVERIFY2(promotedError < narrowError / 4,
             qPrintable(QStringLiteral("relative error: promoted %1, one long narrow sum %2")
                            .arg(promotedError)
                            .arg(narrowError)));
}

QTEST_APPLESS_MAIN(TestPromotedAccumulation)
#include "test_promoted_accumulation.moc"
