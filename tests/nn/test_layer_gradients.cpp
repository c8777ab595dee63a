// Finite-difference gradient checks for every layer the engines run (tests/engine/layer_cases.h,
// the list the engine parity checks are generated from too) and the MLP's loss: the analytic
// backward must match central differences of the forward (in double-precision sums of float
// outputs), on the CPU engine.
#include <QTest>

#include "engine/cpu_ops.h"
#include "layer_cases.h"
#include "nn/linear.h"
#include "nn/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace plab;

class TestLayerGradients : public QObject {
    Q_OBJECT
private slots:
    void layers_data();
    void layers();
    void softmaxCrossEntropy();
    void biasGradientSumOrder();
};

namespace {

double relativeError(double a, double b) {
    return std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-2});
}

} // namespace

void TestLayerGradients::layers_data() {
    QTest::addColumn<int>("index");
    const std::vector<cases::LayerCase>& all = cases::layerCases();
    for (std::size_t i = 0; i < all.size(); ++i)
        QTest::newRow(all[i].name.c_str()) << static_cast<int>(i);
}

void TestLayerGradients::layers() {
    QFETCH(int, index);
    const cases::LayerCase& c = cases::layerCases()[static_cast<std::size_t>(index)];
    CpuOps cpu;
    std::vector<std::vector<float>> inputs = cases::caseInputs(c, 7);
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> r(c.outputSize); // L = sum(out * r), so dL/dout = r
    for (float& v : r)
        v = uniform(rng);
    const cases::CaseResult analytic = cases::runCase(cpu, c, inputs, r);

    const float h = 1e-2f;
    double worst = 0.0;
    int checked = 0;
    for (std::size_t which = 0; which < inputs.size(); ++which) {
        std::vector<float>& x = inputs[which];
        // About 60 elements of each input, spread over it.
        const std::size_t step = std::max<std::size_t>(1, x.size() / 60);
        for (std::size_t i = 0; i < x.size(); i += step) {
            const float keep = x[i];
            x[i] = keep + h;
            const double plus = cases::caseObjective(cpu, c, inputs, r);
            x[i] = keep - h;
            const double minus = cases::caseObjective(cpu, c, inputs, r);
            x[i] = keep;
            const double numeric = (plus - minus) / (2.0 * h);
            worst = std::max(worst, relativeError(numeric, analytic.grads[which][i]));
            ++checked;
        }
    }
    QVERIFY(checked > 0);
    QVERIFY2(worst < 2e-2, qPrintable(QStringLiteral("worst relative error %1").arg(worst)));
}

void TestLayerGradients::softmaxCrossEntropy() {
    const int batch = 4, classes = 5;
    std::mt19937_64 rng(3);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(batch * classes), grad(logits.size());
    for (float& v : logits)
        v = normal(rng);
    const std::uint8_t labels[] = {0, 3, 4, 1};
    const float scale = 8.0f; // the loss scale multiplies the gradient, not the loss
    const LossResult base =
        plab::softmaxCrossEntropy(logits.data(), labels, batch, classes, grad.data(), scale);
    QVERIFY(base.loss > 0.0);
    const float h = 1e-3f;
    for (std::size_t i = 0; i < logits.size(); ++i) {
        std::vector<float> plus = logits, minus = logits;
        plus[i] += h;
        minus[i] -= h;
        const double numeric =
            (plab::softmaxCrossEntropy(plus.data(), labels, batch, classes, nullptr, 1).loss -
             plab::softmaxCrossEntropy(minus.data(), labels, batch, classes, nullptr, 1).loss) /
            (2.0 * h);
        QVERIFY2(
            relativeError(numeric * scale, grad[i]) < 1e-2,
            qPrintable(
                QStringLiteral("logit %1: %2 vs %3").arg(i).arg(numeric * scale).arg(grad[i])));
    }
}

// The bias gradient's column sums (addColumnSums, vectorised across columns) keep their stated
// order bit for bit: row 0, rows four at a time as (r + r) + (r + r), the rest one by one, then
// added to what the gradient held. Widths past a vector and past the 64-column tile, batches
// with and without a remainder, and values spread over many binades so that another order
// would round differently.
void TestLayerGradients::biasGradientSumOrder() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> exponent(-12, 12);
    int compared = 0;
    for (int rows : {1, 2, 4, 5, 6, 128, 131})
        for (int cols : {1, 3, 10, 16, 64, 70, 256}) {
            std::vector<float> dy(static_cast<std::size_t>(rows) * cols);
            for (float& v : dy)
                v = std::ldexp(normal(rng), exponent(rng));
            std::vector<float> db(static_cast<std::size_t>(cols));
            for (float& v : db)
                v = normal(rng);
            std::vector<float> expected = db;
            for (int c = 0; c < cols; ++c) {
                const auto at = [&](int r) { return dy[static_cast<std::size_t>(r) * cols + c]; };
                float sum = at(0);
                int r = 1;
                for (; r < ((rows - 1) & ~3); r += 4)
                    sum = sum + ((at(r) + at(r + 1)) + (at(r + 2) + at(r + 3)));
                for (; r < rows; ++r)
                    sum = sum + at(r);
                expected[static_cast<std::size_t>(c)] += sum;
            }
            addColumnSums(db.data(), dy.data(), rows, cols);
            QVERIFY2(std::memcmp(db.data(), expected.data(), db.size() * sizeof(float)) == 0,
                     qPrintable(QStringLiteral("%1 x %2").arg(rows).arg(cols)));
            ++compared;
        }
    QCOMPARE(compared, 49);
}

QTEST_APPLESS_MAIN(TestLayerGradients)
#include "test_layer_gradients.moc"
