#include "layer_cases.h"

#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/max_pool2d.h"

#include <algorithm>
#include <memory>
#include <random>

namespace plab::cases {
namespace {

using Inputs = std::vector<Tensor>;

// A Layer (nn/layer.h) through the engine's forward/backward pair: inputs x (batch, in) and, for
// a weight layer, its parameters (weights then bias).
LayerCase layerCase(std::string name, std::function<std::unique_ptr<Layer>()> make, FeatureShape in,
                    int batch) {
    const std::shared_ptr<Layer> layer = make();
    LayerCase c;
    c.name = std::move(name);
    c.inputSizes = {static_cast<std::size_t>(batch) * in.size()};
    if (layer->parameterCount() > 0)
        c.inputSizes.push_back(layer->parameterCount());
    c.outputSize = static_cast<std::size_t>(batch) * layer->outputShape().size();
    c.accumulates = layer->hasWeights();
    c.picks = dynamic_cast<MaxPool2d*>(layer.get()) != nullptr;
    c.forward = [layer, batch](TensorOps& ops, const Inputs& x, Tensor out,
                               const Accumulation& acc) {
        ops.forward(*layer, out.data, x[0].data, x.size() > 1 ? x[1].data : nullptr, batch, acc);
    };
    c.backward = [layer, batch](TensorOps& ops, const Inputs& x, Tensor out, Tensor dout,
                                const Inputs& grads, const Accumulation& acc) {
        float* dweights = nullptr;
        if (grads.size() > 1) { // the layer adds its weight gradients into them
            ops.fill(grads[1], 0.0f);
            dweights = grads[1].data;
        }
        ops.backward(*layer, grads[0].data, dweights, dout.data, x[0].data, out.data,
                     x.size() > 1 ? x[1].data : nullptr, batch, acc);
    };
    return c;
}

// A case's name and shapes; forward and backward set after.
LayerCase shaped(std::string name, std::vector<std::size_t> inputSizes, std::size_t outputSize) {
    LayerCase c;
    c.name = std::move(name);
    c.inputSizes = std::move(inputSizes);
    c.outputSize = outputSize;
    return c;
}

// Bytes in the engine's memory for a case's tokens or targets (a fresh copy per call: tests).
const std::uint8_t* bytesOn(TensorOps& ops, const std::vector<std::uint8_t>& host) {
    std::uint8_t* d = ops.allocateLabels(host.size());
    ops.uploadLabels(d, host.data(), host.size());
    return d;
}

std::vector<LayerCase> makeCases() {
    std::vector<LayerCase> cases;
    const auto activation = [](ActivationKind kind) {
        return [kind] { return std::make_unique<Activation>(kind, FeatureShape{40, 1, 1}); };
    };
    cases.push_back(layerCase(
        "linear 50->30", [] { return std::make_unique<Linear>(50, 30); }, {50, 1, 1}, 3));
    cases.push_back(layerCase(
        "conv3x3 3->4 on 8x7",
        [] {
            return std::make_unique<Conv2d>(FeatureShape{3, 8, 7}, 4, 3);
        },
        {3, 8, 7}, 3));
    cases.push_back(layerCase(
        "conv5x5 2->3 on 6x6",
        [] {
            return std::make_unique<Conv2d>(FeatureShape{2, 6, 6}, 3, 5);
        },
        {2, 6, 6}, 3));
    cases.push_back(layerCase(
        "maxpool on 3x7x6",
        [] {
            return std::make_unique<MaxPool2d>(FeatureShape{3, 7, 6});
        },
        {3, 7, 6}, 3));
    cases.push_back(layerCase("relu", activation(ActivationKind::ReLU), {40, 1, 1}, 3));
    cases.push_back(layerCase("gelu", activation(ActivationKind::GELU), {40, 1, 1}, 3));
    cases.push_back(layerCase("tanh", activation(ActivationKind::Tanh), {40, 1, 1}, 3));
    cases.push_back(layerCase("gelu-tanh", activation(ActivationKind::GeluTanh), {40, 1, 1}, 3));
    cases.push_back(layerCase(
        "flatten",
        [] {
            return std::make_unique<Flatten>(FeatureShape{3, 4, 4});
        },
        {3, 4, 4}, 3));

    // The GPT's layers (engine/transformer_ops.h).
    {
        const int rows = 10, in = 24, outputs = 40;
        LayerCase c =
            shaped("gpt linear 24->40 over 10 rows",
                   {std::size_t{rows * in}, std::size_t{outputs * in}, std::size_t{outputs}},
                   std::size_t{rows * outputs});
        c.forward = [=](TensorOps& ops, const Inputs& x, Tensor out, const Accumulation&) {
            ops.transformer().linearForward(out, x[0], x[1], x[2], rows, in, outputs);
        };
        c.backward = [=](TensorOps& ops, const Inputs& x, Tensor, Tensor dout, const Inputs& g,
                         const Accumulation&) {
            ops.fill(g[1], 0.0f);
            ops.fill(g[2], 0.0f);
            ops.transformer().linearBackward(g[0], g[1], g[2], dout, x[0], x[1], rows, in, outputs);
        };
        cases.push_back(std::move(c));
    }
    {
        // Batch 2, time 5 of a context of 8, vocabulary 7 (tokens repeat: their rows add up).
        const int batch = 2, time = 5, context = 8, vocab = 7, channels = 6;
        const std::vector<std::uint8_t> tokens = {3, 1, 3, 6, 0, 1, 1, 5, 3, 2};
        LayerCase c = shaped("embedding (token + position)",
                             {std::size_t{vocab * channels}, std::size_t{context * channels}},
                             std::size_t{batch * time * channels});
        c.forward = [=](TensorOps& ops, const Inputs& x, Tensor out, const Accumulation&) {
            ops.transformer().embeddingForward(out, bytesOn(ops, tokens), x[0], x[1], batch, time,
                                               channels);
        };
        c.backward = [=](TensorOps& ops, const Inputs&, Tensor, Tensor dout, const Inputs& g,
                         const Accumulation&) {
            ops.fill(g[0], 0.0f);
            ops.fill(g[1], 0.0f);
            ops.transformer().embeddingBackward(g[0], g[1], dout, bytesOn(ops, tokens), batch, time,
                                                channels);
        };
        cases.push_back(std::move(c));
    }
    {
        const int rows = 6, channels = 10;
        const auto n = static_cast<std::size_t>(rows * channels);
        LayerCase c = shaped("layernorm over 10 channels",
                             {n, std::size_t{channels}, std::size_t{channels}}, n);
        // mean and rstd from forward, for backward (per engine: the case runs on one at a time)
        const auto stats = std::make_shared<std::pair<Tensor, Tensor>>();
        c.forward = [=](TensorOps& ops, const Inputs& x, Tensor out, const Accumulation&) {
            *stats = {ops.allocate(rows), ops.allocate(rows)};
            ops.transformer().layerNormForward(out, stats->first, stats->second, x[0], x[1], x[2],
                                               rows, channels);
        };
        c.backward = [=](TensorOps& ops, const Inputs& x, Tensor, Tensor dout, const Inputs& g,
                         const Accumulation&) {
            ops.fill(g[1], 0.0f);
            ops.fill(g[2], 0.0f);
            ops.transformer().layerNormBackward(g[0], g[1], g[2], dout, x[0], x[1], stats->first,
                                                stats->second, rows, channels, false);
        };
        cases.push_back(std::move(c));
    }
    {
        const transformer::AttentionShape s{2, 5, 8, 2};
        const auto rows = static_cast<std::size_t>(s.batch * s.time);
        const auto square = static_cast<std::size_t>(s.batch * s.heads * s.time * s.time);
        LayerCase c = shaped("causal attention, 2 heads", {rows * 3 * 8}, rows * 8);
        const auto att = std::make_shared<Tensor>(); // the probabilities forward keeps
        c.forward = [=](TensorOps& ops, const Inputs& x, Tensor out, const Accumulation&) {
            *att = ops.allocate(square);
            ops.transformer().attentionProbabilities(*att, x[0], s);
            ops.transformer().attentionValues(out, *att, x[0], s);
        };
        c.backward = [=](TensorOps& ops, const Inputs& x, Tensor, Tensor dout, const Inputs& g,
                         const Accumulation&) {
            const Tensor dscores = ops.allocate(square);
            ops.transformer().attentionScoreGradients(dscores, dout, x[0], *att, s);
            ops.transformer().attentionInputGradients(g[0], dscores, dout, x[0], *att, s);
        };
        cases.push_back(std::move(c));
    }
    {
        LayerCase c = shaped("gelu (tanh) of the gpt", {40}, 40);
        c.forward = [](TensorOps& ops, const Inputs& x, Tensor out, const Accumulation&) {
            ops.transformer().geluTanhForward(out, x[0]);
        };
        c.backward = [](TensorOps& ops, const Inputs& x, Tensor, Tensor dout, const Inputs& g,
                        const Accumulation&) {
            ops.transformer().geluTanhBackward(g[0], dout, x[0]);
        };
        cases.push_back(std::move(c));
    }
    {
        LayerCase c = shaped("residual add", {30, 30}, 30);
        c.forward = [](TensorOps& ops, const Inputs& x, Tensor out, const Accumulation&) {
            ops.copy(out, x[0]);
            ops.transformer().addInto(out, x[1]);
        };
        c.backward = [](TensorOps& ops, const Inputs&, Tensor, Tensor dout, const Inputs& g,
                        const Accumulation&) {
            ops.copy(g[0], dout);
            ops.copy(g[1], dout);
        };
        cases.push_back(std::move(c));
    }
    {
        const int rows = 6, vocab = 9;
        const std::vector<std::uint8_t> targets = {0, 8, 3, 3, 5, 1};
        LayerCase c = shaped("sequence cross-entropy", {std::size_t{rows * vocab}}, 1);
        c.forward = [=](TensorOps& ops, const Inputs& x, Tensor out, const Accumulation&) {
            const Tensor scratch = ops.allocate(x[0].size);
            const SequenceLoss loss = ops.transformer().sequenceCrossEntropy(
                x[0], bytesOn(ops, targets), rows, vocab, scratch);
            ops.fill(out, static_cast<float>(loss.loss));
        };
        c.backward = [=](TensorOps& ops, const Inputs& x, Tensor, Tensor dout, const Inputs& g,
                         const Accumulation&) {
            ops.transformer().sequenceCrossEntropy(x[0], bytesOn(ops, targets), rows, vocab, g[0]);
            float d = 0.0f;
            ops.download(&d, dout);
            ops.scale(g[0], d);
        };
        cases.push_back(std::move(c));
    }
    return cases;
}

} // namespace

const std::vector<LayerCase>& layerCases() {
    static const std::vector<LayerCase> cases = makeCases();
    return cases;
}

std::vector<std::vector<float>> caseInputs(const LayerCase& c, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<std::vector<float>> inputs;
    float distinct = 0.0f;
    for (const std::size_t n : c.inputSizes) {
        std::vector<float> v(n);
        for (float& x : v) {
            const float u = uniform(rng);
            x = (u >= 0 ? 0.1f : -0.1f) + u + distinct;
            distinct += 1e-4f;
        }
        inputs.push_back(std::move(v));
    }
    if (c.picks) {
        std::vector<float>& x = inputs[0];
        for (std::size_t k = 0; k < x.size(); ++k)
            x[k] = (k % 2 == 0 ? 1.0f : -1.0f) * (0.1f + 0.025f * static_cast<float>(k));
        std::shuffle(x.begin(), x.end(), rng);
    }
    return inputs;
}

namespace {

std::vector<Tensor> upload(TensorOps& ops, const std::vector<std::vector<float>>& host) {
    std::vector<Tensor> out;
    for (const std::vector<float>& v : host) {
        out.push_back(ops.allocate(v.size()));
        ops.upload(out.back(), v.data());
    }
    return out;
}

std::vector<float> download(TensorOps& ops, Tensor t) {
    std::vector<float> host(t.size);
    ops.download(host.data(), t);
    return host;
}

} // namespace

CaseResult runCase(TensorOps& ops, const LayerCase& c,
                   const std::vector<std::vector<float>>& inputs, const std::vector<float>& dout,
                   const Accumulation& acc) {
    const std::vector<Tensor> x = upload(ops, inputs);
    const Tensor out = ops.allocate(c.outputSize);
    const Tensor dy = upload(ops, {dout})[0];
    std::vector<Tensor> grads;
    for (const std::size_t n : c.inputSizes)
        grads.push_back(ops.allocate(n));
    c.forward(ops, x, out, acc);
    c.backward(ops, x, out, dy, grads, acc);
    CaseResult r{download(ops, out), {}};
    for (const Tensor& g : grads)
        r.grads.push_back(download(ops, g));
    return r;
}

double caseObjective(TensorOps& ops, const LayerCase& c,
                     const std::vector<std::vector<float>>& inputs, const std::vector<float>& r) {
    const std::vector<Tensor> x = upload(ops, inputs);
    const Tensor out = ops.allocate(c.outputSize);
    c.forward(ops, x, out, {});
    const std::vector<float> y = download(ops, out);
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i)
        sum += static_cast<double>(y[i]) * r[i];
    return sum;
}

} // namespace plab::cases
