// The transformer's layers (core/nn/transformer) against central finite differences: for a
// random linear objective L = sum(r * out), each input's and parameter's analytic gradient.
#include "nn/transformer/causal_attention.h"
#include "nn/transformer/embedding.h"
#include "nn/transformer/layer_norm.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

using namespace plab;
using namespace plab::transformer;

class TestTransformerLayers : public QObject {
    Q_OBJECT
private slots:
    void layerNorm();
    void attention();
    void attentionIsCausal();
    void embedding();
};

namespace {

std::vector<float> randomVector(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uni(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v)
        x = uni(rng);
    return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        s += static_cast<double>(a[i]) * b[i];
    return s;
}

// The worst relative error between the analytic gradient `grad` of `x` and central
// differences of objective() over x's elements (every `step`-th).
double worstError(std::vector<float>& x, const std::vector<float>& grad,
                  const std::function<double()>& objective, std::size_t step = 1) {
    const float h = 1e-2f;
    double worst = 0.0;
    for (std::size_t i = 0; i < x.size(); i += step) {
        const float keep = x[i];
        x[i] = keep + h;
        const double plus = objective();
        x[i] = keep - h;
        const double minus = objective();
        x[i] = keep;
        const double numeric = (plus - minus) / (2.0 * h);
        worst =
            std::max(worst, std::fabs(numeric - grad[i]) /
                                std::max({std::fabs(numeric), std::fabs(double(grad[i])), 1e-2}));
    }
    return worst;
}

} // namespace

void TestTransformerLayers::layerNorm() {
    const int rows = 5, c = 12;
    std::vector<float> in = randomVector(rows * c, 1, 2.0f), w = randomVector(c, 2),
                       b = randomVector(c, 3), r = randomVector(rows * c, 4);
    for (float& v : w)
        v += 1.0f;
    std::vector<float> out(in.size()), mean(rows), rstd(rows);
    auto objective = [&] {
        layerNormForward(out.data(), mean.data(), rstd.data(), in.data(), w.data(), b.data(), rows,
                         c);
        return dot(out, r);
    };
    objective();
    std::vector<float> din(in.size(), 5.0f), dw(c, 0.0f), db(c, 0.0f);
    layerNormBackward(din.data(), dw.data(), db.data(), r.data(), in.data(), w.data(), mean.data(),
                      rstd.data(), rows, c, false);
    QVERIFY(worstError(in, din, objective) < 1e-2);
    QVERIFY(worstError(w, dw, objective) < 1e-2);
    QVERIFY(worstError(b, db, objective) < 1e-2);

    // accumulate adds the input gradient to what is there (the residual stream's).
    std::vector<float> again(in.size(), 5.0f), dw2(c, 0.0f), db2(c, 0.0f);
    layerNormBackward(again.data(), dw2.data(), db2.data(), r.data(), in.data(), w.data(),
                      mean.data(), rstd.data(), rows, c, true);
    for (std::size_t i = 0; i < in.size(); ++i)
        QCOMPARE(again[i], din[i] + 5.0f);
}

void TestTransformerLayers::attention() {
    const AttentionShape s{2, 5, 8, 2};
    const std::size_t rows = 10;
    std::vector<float> qkv = randomVector(rows * 24, 5, 1.5f), r = randomVector(rows * 8, 6);
    std::vector<float> out(rows * 8), att(2 * 2 * 5 * 5);
    auto objective = [&] {
        attentionForward(out.data(), att.data(), qkv.data(), s);
        return dot(out, r);
    };
    objective();
    std::vector<float> dqkv(qkv.size(), 7.0f), dscores(att.size());
    attentionBackward(dqkv.data(), dscores.data(), r.data(), qkv.data(), att.data(), s);
    const double worst = worstError(qkv, dqkv, objective);
    QVERIFY2(worst < 1e-2, qPrintable(QString("worst relative error %1").arg(worst)));
    // Each row of probabilities sums to 1 over the past and is 0 over the future.
    for (int bh = 0; bh < 4; ++bh)
        for (int i = 0; i < 5; ++i) {
            double sum = 0.0;
            for (int j = 0; j < 5; ++j) {
                const float p = att[static_cast<std::size_t>((bh * 5 + i) * 5 + j)];
                if (j > i)
                    QCOMPARE(p, 0.0f);
                sum += p;
            }
            QVERIFY(std::fabs(sum - 1.0) < 1e-6);
        }
}

void TestTransformerLayers::attentionIsCausal() {
    // Changing position 3's q, k and v leaves the outputs of positions 0..2 untouched.
    const AttentionShape s{1, 5, 8, 2};
    std::vector<float> qkv = randomVector(5 * 24, 8), out(5 * 8), att(2 * 25);
    attentionForward(out.data(), att.data(), qkv.data(), s);
    const std::vector<float> before = out;
    for (int j = 0; j < 24; ++j)
        qkv[static_cast<std::size_t>(3 * 24 + j)] += 0.5f;
    attentionForward(out.data(), att.data(), qkv.data(), s);
    for (int i = 0; i < 3 * 8; ++i)
        QCOMPARE(out[static_cast<std::size_t>(i)], before[static_cast<std::size_t>(i)]);
    QVERIFY(out[3 * 8] != before[3 * 8]);
}

void TestTransformerLayers::embedding() {
    const int batch = 2, time = 4, c = 6, vocab = 10;
    const std::vector<std::uint8_t> idx = {1, 7, 7, 0, 3, 1, 9, 2}; // repeats accumulate
    std::vector<float> tok = randomVector(vocab * c, 9), pos = randomVector(time * c, 10),
                       r = randomVector(batch * time * c, 11), out(r.size());
    auto objective = [&] {
        embeddingForward(out.data(), idx.data(), tok.data(), pos.data(), batch, time, c);
        return dot(out, r);
    };
    objective();
    std::vector<float> dtok(tok.size(), 0.0f), dpos(pos.size(), 0.0f);
    embeddingBackward(dtok.data(), dpos.data(), r.data(), idx.data(), batch, time, c);
    QVERIFY(worstError(tok, dtok, objective) < 1e-2);
    QVERIFY(worstError(pos, dpos, objective) < 1e-2);
    for (int i = 0; i < c; ++i) // token 4 never occurs
        QCOMPARE(dtok[static_cast<std::size_t>(4 * c + i)], 0.0f);
}

QTEST_APPLESS_MAIN(TestTransformerLayers)
#include "test_transformer_layers.moc"
