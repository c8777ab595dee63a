// Finite-difference gradient checks for every layer type and the loss: the analytic backward
// must match central differences of the forward (in double-precision sums of float outputs).
#include <QTest>

#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/max_pool2d.h"
#include "nn/softmax_cross_entropy.h"

#include <cmath>
#include <memory>
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

// L = sum(out * r) for a fixed random r, so dL/dout = r.
double objective(Layer& layer, const std::vector<float>& in, const std::vector<float>& w,
                 const std::vector<float>& r, int batch) {
    std::vector<float> out(r.size());
    layer.forward(out.data(), in.data(), w.data(), batch, {});
    double sum = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i)
        sum += static_cast<double>(out[i]) * r[i];
    return sum;
}

double relativeError(double a, double b) {
    return std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1e-2});
}

} // namespace

void TestLayerGradients::layers_data() {
    QTest::addColumn<QString>("kind");
    for (const char* k :
         {"linear", "conv3", "conv5", "maxpool", "relu", "gelu", "tanh", "gelu-tanh", "flatten"})
        QTest::newRow(k) << QString::fromLatin1(k);
}

void TestLayerGradients::layers() {
    QFETCH(QString, kind);
    const FeatureShape image{2, 6, 6};
    std::unique_ptr<Layer> layer;
    if (kind == QLatin1String("linear"))
        layer = std::make_unique<Linear>(image.size(), 5);
    else if (kind == QLatin1String("conv3"))
        layer = std::make_unique<Conv2d>(image, 3, 3);
    else if (kind == QLatin1String("conv5"))
        layer = std::make_unique<Conv2d>(image, 3, 5);
    else if (kind == QLatin1String("maxpool"))
        layer = std::make_unique<MaxPool2d>(image);
    else if (kind == QLatin1String("relu"))
        layer = std::make_unique<Activation>(ActivationKind::ReLU, image);
    else if (kind == QLatin1String("gelu"))
        layer = std::make_unique<Activation>(ActivationKind::GELU, image);
    else if (kind == QLatin1String("tanh"))
        layer = std::make_unique<Activation>(ActivationKind::Tanh, image);
    else if (kind == QLatin1String("gelu-tanh"))
        layer = std::make_unique<Activation>(ActivationKind::GeluTanh, image);
    else
        layer = std::make_unique<Flatten>(image);

    const int batch = 3;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::vector<float> in(static_cast<std::size_t>(batch * image.size()));
    // Inputs away from ReLU's kink, and all distinct so max pooling has no ties.
    for (std::size_t i = 0; i < in.size(); ++i) {
        const float v = uni(rng);
        in[i] = (v >= 0 ? 0.1f : -0.1f) + v + 1e-4f * static_cast<float>(i);
    }
    std::vector<float> w(layer->parameterCount());
    layer->initParameters(w.data(), rng, InitKind::He, 1.0f);
    for (float& v : w)
        v += 0.1f * uni(rng); // nonzero biases too
    std::vector<float> r(static_cast<std::size_t>(batch * layer->outputShape().size()));
    for (float& v : r)
        v = uni(rng);

    std::vector<float> out(r.size()), din(in.size()), dw(w.size(), 0.0f);
    layer->forward(out.data(), in.data(), w.data(), batch, {});
    layer->backward(din.data(), dw.data(), r.data(), in.data(), out.data(), w.data(), batch, {});

    const float h = 1e-2f;
    double worst = 0.0;
    for (std::size_t i = 0; i < in.size(); i += 3) {
        std::vector<float> plus = in, minus = in;
        plus[i] += h;
        minus[i] -= h;
        const double numeric =
            (objective(*layer, plus, w, r, batch) - objective(*layer, minus, w, r, batch)) /
            (2.0 * h);
        worst = std::max(worst, relativeError(numeric, din[i]));
    }
    for (std::size_t i = 0; i < w.size(); i += 2) {
        std::vector<float> plus = w, minus = w;
        plus[i] += h;
        minus[i] -= h;
        const double numeric =
            (objective(*layer, in, plus, r, batch) - objective(*layer, in, minus, r, batch)) /
            (2.0 * h);
        worst = std::max(worst, relativeError(numeric, dw[i]));
    }
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
