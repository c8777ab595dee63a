// The tiny GPT (core/gpt/gpt_model) against PyTorch: the fixture written by
// make_gpt_fixture.py holds the peer's weights, one batch, its loss and its gradients; the same
// weights here must give the same loss and gradients (normalised error 1e-5). And the whole
// model against finite differences, and the peer's initialisation.
#include "gpt/gpt_model.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <vector>

using namespace plab::transformer;

class TestGptModel : public QObject {
    Q_OBJECT
private slots:
    void matchesPyTorch();
    void finiteDifferences();
    void initialisationAsThePeer();
    void rejectsBadShapes();
    void castsReachEveryOperandOfEveryStage();
    void identityCastsChangeNothing();
    void channelAmaxAndOutliers();
};

namespace {

struct Fixture {
    GptSpec spec;
    int batch = 0, time = 0;
    std::vector<std::uint8_t> tokens, targets;
    double loss = 0.0;
    std::vector<float> params, grads;
};

bool readFixture(const char* path, Fixture& f) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
    std::size_t at = 0;
    auto take = [&](void* dst, std::size_t n) {
        if (at + n > bytes.size())
            return false;
        std::memcpy(dst, bytes.data() + at, n);
        at += n;
        return true;
    };
    char magic[4];
    std::int32_t h[7];
    if (!take(magic, 4) || std::memcmp(magic, "GPTF", 4) != 0 || !take(h, sizeof h))
        return false;
    f.spec = {h[0], h[1], h[2], h[3], h[4]};
    f.batch = h[5];
    f.time = h[6];
    const auto rows = static_cast<std::size_t>(f.batch * f.time);
    f.tokens.resize(rows);
    f.targets.resize(rows);
    if (!take(f.tokens.data(), rows) || !take(f.targets.data(), rows) || !take(&f.loss, 8))
        return false;
    const std::size_t n = GptModel(f.spec).parameterCount();
    f.params.resize(n);
    f.grads.resize(n);
    return take(f.params.data(), n * 4) && take(f.grads.data(), n * 4) && at == bytes.size();
}

// Host vectors as the model's tensors: GptModel(spec) runs on a CPU engine of its own, whose
// memory is the host's.
plab::Tensor host(std::vector<float>& v) {
    return {v.data(), v.size()};
}

double normalisedError(const float* got, const float* want, std::size_t n) {
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
        norm += double(want[i]) * want[i];
    }
    return std::sqrt(diff / std::max(norm, 1e-300));
}

} // namespace

void TestGptModel::matchesPyTorch() {
    Fixture f;
    QVERIFY2(readFixture(qgetenv("PLAB_GPT_FIXTURE").constData(), f),
             "tests/gpt/gpt_peer_fixture.bin missing or not as make_gpt_fixture.py writes");
    GptModel model(f.spec);
    const double loss =
        model.forward(host(f.params), f.tokens.data(), f.targets.data(), f.batch, f.time);
    QVERIFY2(
        std::fabs(loss - f.loss) <= 1e-5 * f.loss,
        qPrintable(QString("loss %1, PyTorch %2").arg(loss, 0, 'g', 10).arg(f.loss, 0, 'g', 10)));
    std::vector<float> grads(model.parameterCount());
    model.backward(host(f.params), host(grads));
    const double all = normalisedError(grads.data(), f.grads.data(), grads.size());
    QVERIFY2(all <= 1e-5, qPrintable(QString("gradients: normalised error %1").arg(all)));
    for (const GptTensor& t : model.tensors()) {
        const double e =
            normalisedError(grads.data() + t.offset, f.grads.data() + t.offset, t.size());
        QVERIFY2(
            e <= 1e-4,
            qPrintable(
                QString("%1: normalised error %2").arg(QString::fromStdString(t.name)).arg(e)));
    }
}

void TestGptModel::finiteDifferences() {
    // A small model in which every parameter kind is checked (every 7th element).
    const GptSpec spec{16, 6, 8, 2, 2};
    GptModel model(spec);
    std::vector<float> params(model.parameterCount());
    std::mt19937_64 rng(3);
    std::normal_distribution<float> normal(0.0f, 0.3f);
    for (float& p : params)
        p = normal(rng);
    const std::vector<std::uint8_t> tokens = {1, 5, 9, 2, 2, 15, 0, 7, 3, 3, 11, 4};
    const std::vector<std::uint8_t> targets = {5, 9, 2, 2, 15, 0, 7, 3, 3, 11, 4, 8};
    model.forward(host(params), tokens.data(), targets.data(), 2, 6);
    std::vector<float> grads(params.size());
    model.backward(host(params), host(grads));
    const float h = 1e-2f;
    double worst = 0.0;
    for (std::size_t i = 0; i < params.size(); i += 7) {
        const float keep = params[i];
        params[i] = keep + h;
        const double plus = model.forward(host(params), tokens.data(), targets.data(), 2, 6);
        params[i] = keep - h;
        const double minus = model.forward(host(params), tokens.data(), targets.data(), 2, 6);
        params[i] = keep;
        const double numeric = (plus - minus) / (2.0 * h);
        worst =
            std::max(worst, std::fabs(numeric - grads[i]) /
                                std::max({std::fabs(numeric), std::fabs(double(grads[i])), 1e-2}));
    }
    QVERIFY2(worst < 2e-2, qPrintable(QString("worst relative error %1").arg(worst)));
}

void TestGptModel::initialisationAsThePeer() {
    GptModel model(GptSpec{});
    QCOMPARE(model.parameterCount(), std::size_t{470784}); // the peer's "0.47M parameters"
    std::vector<float> params(model.parameterCount());
    model.initParameters(params.data(), 1);
    auto stddev = [&](const GptTensor& t) {
        double s = 0.0;
        for (std::size_t i = 0; i < t.size(); ++i)
            s += double(params[t.offset + i]) * params[t.offset + i];
        return std::sqrt(s / double(t.size()));
    };
    for (const GptTensor& t : model.tensors()) {
        const QString name = QString::fromStdString(t.name);
        if (name.endsWith("proj.weight") || name.endsWith("out.weight"))
            QVERIFY2(std::fabs(stddev(t) - 0.01) < 0.001, qPrintable(name)); // 0.02 / sqrt(4)
        else if (t.matrix())
            QVERIFY2(std::fabs(stddev(t) - 0.02) < 0.002, qPrintable(name));
        else if (name.contains("ln") && name.endsWith("weight"))
            QVERIFY2(std::all_of(params.begin() + t.offset, params.begin() + t.offset + t.size(),
                                 [](float v) { return v == 1.0f; }),
                     qPrintable(name));
        else
            QVERIFY2(std::all_of(params.begin() + t.offset, params.begin() + t.offset + t.size(),
                                 [](float v) { return v == 0.0f; }),
                     qPrintable(name));
    }
}

void TestGptModel::rejectsBadShapes() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, GptModel(GptSpec{256, 64, 130, 4, 2}));
    GptModel model(GptSpec{16, 4, 8, 2, 1});
    std::vector<float> params(model.parameterCount());
    const std::vector<std::uint8_t> ok(10, 1), past(10, 20);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             model.forward(host(params), ok.data(), ok.data(), 2, 5)); // T > 4
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             model.forward(host(params), past.data(), ok.data(), 2, 4));
}

namespace {

// Records which (stage, operand) pairs were cast and how many values; optionally rounds to
// bfloat16 (truncating the low 16 bits, enough to tell that casts reach the arithmetic).
class RecordingCasts final : public GptCasts {
public:
    explicit RecordingCasts(bool truncate) : m_truncate(truncate) {}
    void cast(int stage, plab::TensorRole operand, GptSite site, plab::Tensor tensor,
              const plab::BlockLayout& layout) override {
        // Every cast names rows that tile it.
        if (layout.cols != 0 && tensor.size % layout.cols != 0)
            ++badLayouts;
        float* values = tensor.data; // the CPU engine's memory
        const std::size_t count = tensor.size;
        sites[site] += count;
        if (site == GptSite::Embedding) // offered for a recipe's embedding kind; left as it is
            return;
        seen[{stage, static_cast<int>(operand)}] += count;
        if (m_truncate)
            for (std::size_t i = 0; i < count; ++i) {
                std::uint32_t u;
                std::memcpy(&u, values + i, 4);
                u &= 0xFFFF0000u;
                std::memcpy(values + i, &u, 4);
            }
    }
    std::map<std::pair<int, int>, std::size_t> seen;
    int badLayouts = 0;
    std::map<GptSite, std::size_t> sites;

private:
    bool m_truncate;
};

struct SmallRun {
    GptModel model{GptSpec{16, 6, 8, 2, 2}};
    std::vector<float> params = std::vector<float>(model.parameterCount());
    std::vector<std::uint8_t> tokens = {1, 5, 9, 2, 2, 15, 0, 7, 3, 3, 11, 4};
    std::vector<std::uint8_t> targets = {5, 9, 2, 2, 15, 0, 7, 3, 3, 11, 4, 8};
    SmallRun() {
        std::mt19937_64 rng(3);
        std::normal_distribution<float> normal(0.0f, 0.3f);
        for (float& p : params)
            p = normal(rng);
    }
    std::pair<double, std::vector<float>> lossAndGradients() {
        const double loss = model.forward(host(params), tokens.data(), targets.data(), 2, 6);
        std::vector<float> grads(params.size());
        model.backward(host(params), host(grads));
        return {loss, grads};
    }
};

} // namespace

void TestGptModel::castsReachEveryOperandOfEveryStage() {
    SmallRun run;
    const auto [plainLoss, plainGrads] = run.lossAndGradients();
    RecordingCasts casts(true);
    run.model.setCasts(&casts);
    const auto [castLoss, castGrads] = run.lossAndGradients();
    QCOMPARE(run.model.stageCount(), 5);
    QCOMPARE(QString::fromStdString(run.model.stageName(0)), QString("block0.attention"));
    QCOMPARE(QString::fromStdString(run.model.stageName(3)), QString("block1.mlp"));
    QCOMPARE(QString::fromStdString(run.model.stageName(4)), QString("head"));
    for (int stage = 0; stage < 5; ++stage)
        for (int operand = 0; operand < 4; ++operand)
            QVERIFY2(casts.seen.count({stage, operand}) == 1,
                     qPrintable(QString("stage %1 operand %2 never cast").arg(stage).arg(operand)));
    // Attention: its QKV and output weights (3C x C + C x C), and as activations the QKV
    // projection's input, q k v, the probabilities (B H T T) and the output projection's input.
    const std::size_t rows = 12, c = 8;
    const std::size_t attentionWeights = casts.seen[{0, 0}];
    const std::size_t attentionActivations = casts.seen[{0, 1}];
    QCOMPARE(attentionWeights, 3 * c * c + c * c);
    QCOMPARE(attentionActivations, rows * c + rows * 3 * c + 2 * 2 * 6 * 6 + rows * c);
    // The sites a recipe can override by kind: 5 LayerNorm outputs (two per block, the final
    // one), the probabilities and score gradients of 2 blocks, the token and position tables.
    QCOMPARE(casts.sites[GptSite::NormOutput], 5 * rows * c);
    QCOMPARE(casts.sites[GptSite::Probabilities], std::size_t{2 * 2 * 2 * 6 * 6});
    QCOMPARE(casts.sites[GptSite::ScoreGradients], std::size_t{2 * 2 * 2 * 6 * 6});
    QCOMPARE(casts.sites[GptSite::Embedding], (16 + 6) * c);
    QCOMPARE(casts.badLayouts, 0);
    // The casts reach the arithmetic: bfloat16-truncated operands move the loss a little.
    QVERIFY(castLoss != plainLoss);
    QVERIFY(std::fabs(castLoss - plainLoss) < 0.05 * plainLoss);
    QVERIFY(normalisedError(castGrads.data(), plainGrads.data(), castGrads.size()) < 0.1);
}

void TestGptModel::identityCastsChangeNothing() {
    SmallRun run;
    const auto [plainLoss, plainGrads] = run.lossAndGradients();
    RecordingCasts casts(false);
    run.model.setCasts(&casts);
    const auto [castLoss, castGrads] = run.lossAndGradients();
    QCOMPARE(castLoss, plainLoss);
    QVERIFY(std::memcmp(castGrads.data(), plainGrads.data(), 4 * castGrads.size()) == 0);
}

void TestGptModel::channelAmaxAndOutliers() {
    // 1 of 8 channels at 10x the others' amax: an outlier share of 1/8; none at 6x exactly.
    QCOMPARE(outlierChannelShare({1, 1, 1, 1, 1, 1, 1, 10}), 0.125);
    QCOMPARE(outlierChannelShare({1, 1, 1, 6}), 0.0);
    QCOMPARE(outlierChannelShare({}), 0.0);
    SmallRun run;
    QVERIFY(run.model.channelAmax(0).empty()); // before any forward
    run.lossAndGradients();
    for (int stage = 0; stage < run.model.stageCount(); ++stage) {
        const std::vector<float> amax = run.model.channelAmax(stage);
        QCOMPARE(amax.size(), std::size_t{8});
        for (float a : amax) // LayerNorm outputs: finite, and not all zero
            QVERIFY(std::isfinite(a) && a > 0.0f);
    }
    QVERIFY(run.model.channelAmax(5).empty());
}

QTEST_APPLESS_MAIN(TestGptModel)
#include "test_gpt_model.moc"
