// Finite-difference gradient checks for every layer the engines run (tests/engine/layer_cases.h,
// the list the engine parity checks are generated from too) and the MLP's loss: the analytic
// backward must match central differences of the forward (in double-precision sums of float
// outputs), on the CPU engine.
#include <QTest>

#include "engine/cpu_ops.h"
#include "layer_cases.h"
#include "nn/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace plab;

class TestLayerGradients : public QObject {
    Q_OBJECT
private slots:
    void layers_data();
    void layers();
    void softmaxCrossEntropy();
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

QTEST_APPLESS_MAIN(TestLayerGradients)
#include "test_layer_gradients.moc"
