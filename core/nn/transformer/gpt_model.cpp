#include "nn/transformer/gpt_model.h"

#include "nn/activation.h"
#include "nn/matmul.h"
#include "nn/transformer/causal_attention.h"
#include "nn/transformer/embedding.h"
#include "nn/transformer/layer_norm.h"
#include "nn/transformer/sequence_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace plab::transformer {
namespace {

// out (N, O) = in (N, I) . W^T (O, I) + b (O)
void linearForward(float* out, const float* in, const float* w, const float* b, int rows,
                   int inputs, int outputs) {
    gemm(false, true, rows, outputs, inputs, 1.0f, in, inputs, w, inputs, 0.0f, out, outputs);
    for (int r = 0; r < rows; ++r) {
        float* o = out + static_cast<std::ptrdiff_t>(r) * outputs;
        for (int j = 0; j < outputs; ++j)
            o[j] += b[j];
    }
}

// din (N, I) = dout (N, O) . W (O, I) (+= when accumulate); dW (O, I) += dout^T . in;
// db (O) += column sums of dout.
void linearBackward(float* din, float* dw, float* db, const float* dout, const float* in,
                    const float* w, int rows, int inputs, int outputs, bool accumulate) {
    if (din != nullptr)
        gemm(false, false, rows, inputs, outputs, 1.0f, dout, outputs, w, inputs,
             accumulate ? 1.0f : 0.0f, din, inputs);
    gemm(true, false, outputs, inputs, rows, 1.0f, dout, outputs, in, inputs, 1.0f, dw, inputs);
    for (int r = 0; r < rows; ++r) {
        const float* d = dout + static_cast<std::ptrdiff_t>(r) * outputs;
        for (int j = 0; j < outputs; ++j)
            db[j] += d[j];
    }
}

} // namespace

GptModel::GptModel(const GptSpec& spec) : m_spec(spec) {
    if (spec.vocab < 1 || spec.vocab > 256 || spec.context < 1 || spec.width < 1 ||
        spec.heads < 1 || spec.blocks < 1)
        throw std::invalid_argument("gpt: vocabulary 1..256, context, width, heads and blocks at "
                                    "least 1 expected");
    if (spec.width % spec.heads != 0)
        throw std::invalid_argument("gpt: width " + std::to_string(spec.width) +
                                    " is not divisible by heads " + std::to_string(spec.heads));
    const auto v = static_cast<std::size_t>(spec.vocab), t = static_cast<std::size_t>(spec.context),
               c = static_cast<std::size_t>(spec.width);
    m_tok = add("tok.weight", v, c);
    m_pos = add("pos.weight", t, c);
    for (int l = 0; l < spec.blocks; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        BlockOffsets o{};
        o.ln1w = add(p + "ln1.weight", c, 1);
        o.ln1b = add(p + "ln1.bias", c, 1);
        o.ln2w = add(p + "ln2.weight", c, 1);
        o.ln2b = add(p + "ln2.bias", c, 1);
        o.qkvw = add(p + "qkv.weight", 3 * c, c);
        o.qkvb = add(p + "qkv.bias", 3 * c, 1);
        o.projw = add(p + "proj.weight", c, c);
        o.projb = add(p + "proj.bias", c, 1);
        o.fcw = add(p + "fc.weight", 4 * c, c);
        o.fcb = add(p + "fc.bias", 4 * c, 1);
        o.outw = add(p + "out.weight", c, 4 * c);
        o.outb = add(p + "out.bias", c, 1);
        m_blockOffsets.push_back(o);
    }
    m_lnfw = add("ln.weight", c, 1);
    m_lnfb = add("ln.bias", c, 1);
    m_headw = add("head.weight", v, c);
    m_headb = add("head.bias", v, 1);
}

std::size_t GptModel::add(const std::string& name, std::size_t rows, std::size_t cols) {
    m_tensors.push_back({name, m_count, rows, cols});
    m_count += rows * cols;
    return m_tensors.back().offset;
}

std::string GptModel::stageName(int stage) const {
    if (stage >= 2 * m_spec.blocks)
        return "head";
    return "block" + std::to_string(stage / 2) + (stage % 2 == 0 ? ".attention" : ".mlp");
}

int GptModel::stageOfTensor(std::size_t i) const {
    const std::string& name = m_tensors[i].name;
    if (name.starts_with("head."))
        return 2 * m_spec.blocks;
    if (!name.starts_with("blocks."))
        return -1; // embeddings, the final norm
    const int block = std::stoi(name.substr(7));
    if (name.find(".qkv.") != std::string::npos || name.find(".proj.") != std::string::npos)
        return 2 * block;
    if (name.find(".fc.") != std::string::npos || name.find(".out.") != std::string::npos)
        return 2 * block + 1;
    return -1; // the blocks' norms
}

const char* siteKind(GptSite site) {
    switch (site) {
    case GptSite::Product:
        return "";
    case GptSite::NormOutput:
        return "norm";
    case GptSite::Probabilities:
    case GptSite::ScoreGradients:
        return "softmax";
    case GptSite::Embedding:
        break;
    }
    return "embedding";
}

std::string GptModel::stageKind(int stage) const {
    if (stage == stageCount() - 1)
        return "head";
    return stage % 2 == 0 ? "attention" : "mlp";
}

int GptModel::stageHolding(std::size_t i) const {
    if (const int stage = stageOfTensor(i); stage >= 0)
        return stage;
    const std::string& name = m_tensors[i].name;
    if (name.starts_with("blocks."))
        return 2 * std::stoi(name.substr(7)) + (name.find(".ln2.") != std::string::npos ? 1 : 0);
    return name.starts_with("ln.") ? 2 * m_spec.blocks : 0; // the final norm; the embeddings
}

const float* GptModel::operand(int stage, GptOperand role, const float* values, std::size_t count,
                               std::vector<float>& copy, GptSite site) {
    if (m_casts == nullptr)
        return values;
    copy.assign(values, values + count);
    m_casts->cast(stage, role, site, copy.data(), count);
    return copy.data();
}

void GptModel::productBackward(int stage, float* din, float* grads, const float* w,
                               std::size_t weight, std::size_t bias, const float* dout,
                               const float* input, int rows, int inputs, int outputs) {
    const auto outputCount = static_cast<std::size_t>(outputs);
    const float* dy = operand(stage, GptOperand::ActivationGradients, dout,
                              static_cast<std::size_t>(rows) * outputCount, m_gradCast);
    linearBackward(din, grads + weight, grads + bias, dy, input, w + weight, rows, inputs, outputs,
                   false);
    if (m_casts == nullptr)
        return;
    m_casts->cast(stage, GptOperand::WeightGradients, GptSite::Product, grads + weight,
                  outputCount * static_cast<std::size_t>(inputs));
    m_casts->cast(stage, GptOperand::WeightGradients, GptSite::Product, grads + bias, outputCount);
}

double outlierChannelShare(const std::vector<float>& channelAmax, double factor) {
    if (channelAmax.empty())
        return 0.0;
    std::vector<float> sorted = channelAmax;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    const double median =
        n % 2 == 1 ? sorted[n / 2] : 0.5 * (double(sorted[n / 2 - 1]) + sorted[n / 2]);
    std::size_t outliers = 0;
    for (const float a : channelAmax)
        outliers += a > factor * median ? 1u : 0u;
    return static_cast<double>(outliers) / static_cast<double>(n);
}

std::vector<float> GptModel::channelAmax(int stage) const {
    if (m_batch == 0 || stage < 0 || stage >= stageCount())
        return {};
    const std::vector<float>& x = stage == stageCount() - 1 ? m_lnf
                                  : stage % 2 == 0
                                      ? m_acts[static_cast<std::size_t>(stage / 2)].ln1
                                      : m_acts[static_cast<std::size_t>(stage / 2)].ln2;
    const auto c = static_cast<std::size_t>(m_spec.width);
    std::vector<float> amax(c, 0.0f);
    for (std::size_t i = 0; i < x.size(); ++i)
        amax[i % c] = std::max(amax[i % c], std::fabs(x[i]));
    return amax;
}

void GptModel::initParameters(float* params, std::uint64_t seed) const {
    std::mt19937_64 rng(seed);
    const float projStd = 0.02f / std::sqrt(2.0f * static_cast<float>(m_spec.blocks));
    for (const GptTensor& t : m_tensors) {
        float* p = params + t.offset;
        const bool norm = t.name.find("ln") != std::string::npos;
        if (t.matrix()) {
            const bool projection =
                t.name.ends_with("proj.weight") || t.name.ends_with("out.weight");
            std::normal_distribution<float> normal(0.0f, projection ? projStd : 0.02f);
            for (std::size_t i = 0; i < t.size(); ++i)
                p[i] = normal(rng);
        } else {
            std::fill(p, p + t.size(), norm && t.name.ends_with("weight") ? 1.0f : 0.0f);
        }
    }
}

void GptModel::resize(int batch, int time) {
    if (batch == m_batch && time == m_time)
        return;
    m_batch = batch;
    m_time = time;
    const auto rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(time);
    const auto c = static_cast<std::size_t>(m_spec.width);
    const auto att = static_cast<std::size_t>(batch) * static_cast<std::size_t>(m_spec.heads) *
                     static_cast<std::size_t>(time) * static_cast<std::size_t>(time);
    m_acts.assign(static_cast<std::size_t>(m_spec.blocks), {});
    for (BlockActivations& a : m_acts) {
        a.in.resize(rows * c);
        a.ln1.resize(rows * c);
        a.ln1Mean.resize(rows);
        a.ln1Rstd.resize(rows);
        a.qkv.resize(rows * 3 * c);
        a.att.resize(att);
        a.attOut.resize(rows * c);
        a.mid.resize(rows * c);
        a.ln2.resize(rows * c);
        a.ln2Mean.resize(rows);
        a.ln2Rstd.resize(rows);
        a.fc.resize(rows * 4 * c);
        a.gelu.resize(rows * 4 * c);
    }
    m_final.resize(rows * c);
    m_lnf.resize(rows * c);
    m_lnfMean.resize(rows);
    m_lnfRstd.resize(rows);
    m_logits.resize(rows * static_cast<std::size_t>(m_spec.vocab));
    m_dlogits.resize(m_logits.size());
}

double GptModel::forward(const float* params, const std::uint8_t* tokens,
                         const std::uint8_t* targets, int batch, int time) {
    if (batch < 1 || time < 1 || time > m_spec.context)
        throw std::invalid_argument("gpt forward: batch >= 1 and time in 1.." +
                                    std::to_string(m_spec.context) + " expected");
    resize(batch, time);
    const int rows = batch * time, c = m_spec.width;
    const auto n = static_cast<std::size_t>(rows);
    m_tokens.assign(tokens, tokens + n);
    m_targets.assign(targets, targets + n);
    for (std::size_t i = 0; i < n; ++i)
        if (tokens[i] >= m_spec.vocab || targets[i] >= m_spec.vocab)
            throw std::invalid_argument("gpt forward: a byte past the vocabulary");

    const AttentionShape shape{batch, time, c, m_spec.heads};
    // With casts the products read cast weights (matrices only; biases are added in FP32).
    m_castLastForward = m_casts != nullptr;
    const float* w = params;
    if (m_casts != nullptr) {
        m_castParams.assign(params, params + m_count);
        for (std::size_t i = 0; i < m_tensors.size(); ++i) {
            float* values = m_castParams.data() + m_tensors[i].offset;
            if (const int stage = stageOfTensor(i); stage >= 0 && m_tensors[i].matrix())
                m_casts->cast(stage, GptOperand::Weights, GptSite::Product, values,
                              m_tensors[i].size());
            else if (m_tensors[i].offset == m_tok || m_tensors[i].offset == m_pos)
                m_casts->cast(0, GptOperand::Weights, GptSite::Embedding, values,
                              m_tensors[i].size());
        }
        w = m_castParams.data();
    }
    const std::size_t nc = n * static_cast<std::size_t>(c);
    embeddingForward(m_acts[0].in.data(), tokens, w + m_tok, w + m_pos, batch, time, c);
    for (std::size_t l = 0; l < m_acts.size(); ++l) {
        BlockActivations& a = m_acts[l];
        const BlockOffsets& o = m_blockOffsets[l];
        const int attention = 2 * static_cast<int>(l), mlp = attention + 1;
        layerNormForward(a.ln1.data(), a.ln1Mean.data(), a.ln1Rstd.data(), a.in.data(),
                         params + o.ln1w, params + o.ln1b, rows, c);
        linearForward(a.qkv.data(),
                      operand(attention, GptOperand::Activations, a.ln1.data(), nc, a.ln1Cast,
                              GptSite::NormOutput),
                      w + o.qkvw, w + o.qkvb, rows, c, 3 * c);
        AttentionCast castProbabilities;
        if (m_casts != nullptr) { // q, k and v, and the probabilities: the products' operands
            m_casts->cast(attention, GptOperand::Activations, GptSite::Product, a.qkv.data(),
                          a.qkv.size());
            castProbabilities = [this, attention](float* v, std::size_t count) {
                m_casts->cast(attention, GptOperand::Activations, GptSite::Probabilities, v, count);
            };
        }
        attentionForward(a.attOut.data(), a.att.data(), a.qkv.data(), shape, castProbabilities);
        linearForward(
            a.mid.data(),
            operand(attention, GptOperand::Activations, a.attOut.data(), nc, a.attOutCast),
            w + o.projw, w + o.projb, rows, c, c);
        for (std::size_t i = 0; i < a.mid.size(); ++i)
            a.mid[i] += a.in[i]; // residual
        layerNormForward(a.ln2.data(), a.ln2Mean.data(), a.ln2Rstd.data(), a.mid.data(),
                         params + o.ln2w, params + o.ln2b, rows, c);
        linearForward(
            a.fc.data(),
            operand(mlp, GptOperand::Activations, a.ln2.data(), nc, a.ln2Cast, GptSite::NormOutput),
            w + o.fcw, w + o.fcb, rows, c, 4 * c);
        geluTanhForward(a.gelu.data(), a.fc.data(), a.fc.size());
        float* next = l + 1 < m_acts.size() ? m_acts[l + 1].in.data() : m_final.data();
        linearForward(next,
                      operand(mlp, GptOperand::Activations, a.gelu.data(), 4 * nc, a.geluCast),
                      w + o.outw, w + o.outb, rows, 4 * c, c);
        for (std::size_t i = 0; i < a.mid.size(); ++i)
            next[i] += a.mid[i]; // residual
    }
    layerNormForward(m_lnf.data(), m_lnfMean.data(), m_lnfRstd.data(), m_final.data(),
                     params + m_lnfw, params + m_lnfb, rows, c);
    const int head = stageCount() - 1;
    linearForward(
        m_logits.data(),
        operand(head, GptOperand::Activations, m_lnf.data(), nc, m_lnfCast, GptSite::NormOutput),
        w + m_headw, w + m_headb, rows, c, m_spec.vocab);
    return sequenceCrossEntropy(m_logits.data(), targets, rows, m_spec.vocab, m_dlogits.data());
}

void GptModel::backward(const float* params, float* grads, float lossScale) {
    if (m_batch == 0)
        throw std::logic_error("gpt backward before forward");
    if (lossScale != 1.0f) { // forward writes dlogits afresh each time
        for (float& d : m_dlogits)
            d *= lossScale;
    }
    std::fill(grads, grads + m_count, 0.0f);
    const int rows = m_batch * m_time, c = m_spec.width;
    const auto n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(c);
    const AttentionShape shape{m_batch, m_time, c, m_spec.heads};
    // Gradient buffers, kept between steps (sized by the first backward of a shape).
    std::vector<float>&dlnf = m_dlnf, &dx = m_dx, &dmid = m_dmid, &dln = m_dln,
    &dattOut = m_dattOut, &dqkv = m_dqkv, &dfc = m_dfc;
    for (std::vector<float>* v : {&dlnf, &dx, &dmid, &dln, &dattOut})
        v->resize(n);
    dqkv.resize(3 * n);
    dfc.resize(4 * n);

    // The products' operands as forward read them, and the arriving gradients cast.
    const bool cast = m_castLastForward && m_casts != nullptr;
    const float* w = cast ? m_castParams.data() : params;
    auto used = [cast](const std::vector<float>& value, const std::vector<float>& castCopy) {
        return cast ? castCopy.data() : value.data();
    };
    const std::size_t nc = static_cast<std::size_t>(rows) * static_cast<std::size_t>(c);
    const int head = stageCount() - 1;
    // Per-layer scaling: each stage's arriving gradient (the logits' for the head, the residual
    // stream's at each stage boundary) times the factor the casts pick for it.
    m_stageScales.assign(static_cast<std::size_t>(stageCount()), lossScale);
    double cumulative = 1.0;
    const auto arrive = [&](int stage, std::vector<float>& gradient) {
        if (cast) {
            const double k =
                m_casts->gradientScale(stage, gradient.data(), gradient.size(), cumulative);
            if (k != 1.0)
                for (float& g : gradient)
                    g *= static_cast<float>(k);
            cumulative *= k;
        }
        for (int s = stage; s >= 0; --s) // until a stage below arrives with its own
            m_stageScales[static_cast<std::size_t>(s)] = lossScale * cumulative;
    };
    arrive(head, m_dlogits);
    productBackward(head, dlnf.data(), grads, w, m_headw, m_headb, m_dlogits.data(),
                    used(m_lnf, m_lnfCast), rows, c, m_spec.vocab);
    layerNormBackward(dx.data(), grads + m_lnfw, grads + m_lnfb, dlnf.data(), m_final.data(),
                      params + m_lnfw, m_lnfMean.data(), m_lnfRstd.data(), rows, c, false);
    for (std::size_t l = m_acts.size(); l-- > 0;) {
        const BlockActivations& a = m_acts[l];
        const BlockOffsets& o = m_blockOffsets[l];
        const int attention = 2 * static_cast<int>(l), mlp = attention + 1;
        // next = mid + out(gelu(fc(ln2(mid)))): dx flows to mid directly and through the MLP.
        arrive(mlp, dx);
        productBackward(mlp, dfc.data(), grads, w, o.outw, o.outb, dx.data(),
                        used(a.gelu, a.geluCast), rows, 4 * c, c);
        geluTanhBackward(dfc.data(), dfc.data(), a.fc.data(), dfc.size());
        productBackward(mlp, dln.data(), grads, w, o.fcw, o.fcb, dfc.data(), used(a.ln2, a.ln2Cast),
                        rows, c, 4 * c);
        dmid = dx;
        layerNormBackward(dmid.data(), grads + o.ln2w, grads + o.ln2b, dln.data(), a.mid.data(),
                          params + o.ln2w, a.ln2Mean.data(), a.ln2Rstd.data(), rows, c, true);
        // mid = in + proj(attention(qkv(ln1(in)))).
        arrive(attention, dmid);
        productBackward(attention, dattOut.data(), grads, w, o.projw, o.projb, dmid.data(),
                        used(a.attOut, a.attOutCast), rows, c, c);
        AttentionCast castScoreGradients;
        if (cast) { // dO, the gradient entering att . v's backward, and the scores' gradient
            m_casts->cast(attention, GptOperand::ActivationGradients, GptSite::Product,
                          dattOut.data(), nc);
            castScoreGradients = [this, attention](float* v, std::size_t count) {
                m_casts->cast(attention, GptOperand::ActivationGradients, GptSite::ScoreGradients,
                              v, count);
            };
        }
        m_dscores.resize(a.att.size());
        attentionBackward(dqkv.data(), m_dscores.data(), dattOut.data(), a.qkv.data(), a.att.data(),
                          shape, castScoreGradients);
        productBackward(attention, dln.data(), grads, w, o.qkvw, o.qkvb, dqkv.data(),
                        used(a.ln1, a.ln1Cast), rows, c, 3 * c);
        dx = dmid;
        layerNormBackward(dx.data(), grads + o.ln1w, grads + o.ln1b, dln.data(), a.in.data(),
                          params + o.ln1w, a.ln1Mean.data(), a.ln1Rstd.data(), rows, c, true);
    }
    embeddingBackward(grads + m_tok, grads + m_pos, dx.data(), m_tokens.data(), m_batch, m_time, c);
}

} // namespace plab::transformer
