#include "gpt/gpt_model.h"

#include "engine/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace plab::transformer {

GptModel::GptModel(const GptSpec& spec) : GptModel(spec, std::make_unique<CpuOps>()) {}

GptModel::GptModel(const GptSpec& spec, std::unique_ptr<TensorOps> own) : GptModel(spec, *own) {
    m_ownOps = std::move(own); // a throw above leaves `own` to free it
}

GptModel::~GptModel() = default;

GptModel::GptModel(const GptSpec& spec, TensorOps& ops) : m_ops(&ops), m_spec(spec) {
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

Tensor GptModel::operand(int stage, TensorRole role, Tensor values, Tensor copy, std::size_t width,
                         GptSite site) {
    if (m_casts == nullptr)
        return values;
    copy.size = values.size;
    m_ops->copy(copy, values);
    m_casts->cast(stage, role, site, copy, {values.size / width, width, false});
    return copy;
}

namespace {

Tensor atLeast(Tensor& t, std::size_t n, TensorOps& ops) {
    if (t.size < n)
        t = ops.allocate(n);
    return t.slice(0, n);
}

} // namespace

void GptModel::productBackward(int stage, Tensor din, Tensor grads, Tensor w, std::size_t weight,
                               std::size_t bias, Tensor dout, const ProductInput& input, int rows,
                               int inputs, int outputs) {
    const auto outputCount = static_cast<std::size_t>(outputs);
    const auto inputCount = static_cast<std::size_t>(inputs);
    const auto rowCount = static_cast<std::size_t>(rows);
    const std::size_t weights = outputCount * inputCount;
    const Tensor dy =
        operand(stage, TensorRole::ActivationGradients, dout, m_gradCast, outputCount);
    const bool transformed = m_casts != nullptr && m_casts->hadamard(stage);
    // Under the transform the plain dW is not the gradient: the product writes it aside.
    Tensor dw = grads.slice(weight, weights);
    if (transformed) {
        dw = atLeast(m_rhtDiscard, weights, *m_ops);
        m_ops->fill(dw, 0.0f);
    }
    m_ops->transformer().linearBackward(din, dw, grads.slice(bias, outputCount), dy, input.read,
                                        w.slice(weight, weights), rows, inputs, outputs);
    if (m_casts == nullptr)
        return;
    if (transformed) { // NVIDIA's NVFP4 recipe: dW = T(dy)^T T(x), both cast along the rows
        const Tensor work =
            atLeast(m_rhtWork, rowCount * std::max(inputCount, outputCount), *m_ops);
        const Tensor dyT = atLeast(m_rhtGrad, rowCount * outputCount, *m_ops);
        const Tensor xT = atLeast(m_rhtInput, rowCount * inputCount, *m_ops);
        m_casts->castAlongRows(stage, TensorRole::ActivationGradients, GptSite::Product, dout,
                               rowCount, outputCount, dyT, work);
        m_casts->castAlongRows(stage, TensorRole::Activations, input.site, input.raw, rowCount,
                               inputCount, xT, work);
        m_ops->addWeightGradientTransposed(grads.data + weight, dyT.data, xT.data, outputs, inputs,
                                           rows, {});
    }
    m_casts->cast(stage, TensorRole::WeightGradients, GptSite::Product,
                  grads.slice(weight, weights), {outputCount, inputCount, false});
    m_casts->cast(stage, TensorRole::WeightGradients, GptSite::Product,
                  grads.slice(bias, outputCount), {});
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
    const Tensor x = stage == stageCount() - 1 ? m_lnf
                     : stage % 2 == 0          ? m_acts[static_cast<std::size_t>(stage / 2)].ln1
                                               : m_acts[static_cast<std::size_t>(stage / 2)].ln2;
    return m_ops->transformer().channelAmax(x, m_batch * m_time, m_spec.width);
}

std::vector<float> GptModel::logits(int row) const {
    const auto vocab = static_cast<std::size_t>(m_spec.vocab);
    const Tensor all = view(m_logits, vocab);
    const Tensor part = row < 0 ? all : all.slice(static_cast<std::size_t>(row) * vocab, vocab);
    std::vector<float> host(part.size);
    m_ops->download(host.data(), part);
    return host;
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

std::size_t GptModel::bytesToReserve(int batch) const {
    const auto rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(m_spec.context);
    const auto c = static_cast<std::size_t>(m_spec.width);
    const auto vocab = static_cast<std::size_t>(m_spec.vocab);
    const auto att =
        rows * static_cast<std::size_t>(m_spec.heads) * static_cast<std::size_t>(m_spec.context);
    const std::size_t perBlock = 8 * rows * c + 4 * rows + 3 * rows * c + att + 3 * rows * 4 * c;
    const std::size_t floats = static_cast<std::size_t>(m_spec.blocks) * perBlock + 8 * rows * c +
                               2 * rows + 2 * rows * vocab + 3 * rows * c + 4 * rows * c + att +
                               rows * std::max(vocab, 4 * c) + m_count;
    return floats * sizeof(float) + 2 * rows; // and the tokens and targets, a byte each
}

void GptModel::reserve(int batch) {
    if (batch <= m_capacity)
        return;
    m_capacity = batch;
    TensorOps& ops = *m_ops;
    const auto rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(m_spec.context);
    const auto c = static_cast<std::size_t>(m_spec.width);
    const auto att =
        rows * static_cast<std::size_t>(m_spec.heads) * static_cast<std::size_t>(m_spec.context);
    m_acts.assign(static_cast<std::size_t>(m_spec.blocks), {});
    for (BlockActivations& a : m_acts) {
        for (Tensor* t :
             {&a.in, &a.ln1, &a.attOut, &a.mid, &a.ln2, &a.ln1Cast, &a.attOutCast, &a.ln2Cast})
            *t = ops.allocate(rows * c);
        for (Tensor* t : {&a.ln1Mean, &a.ln1Rstd, &a.ln2Mean, &a.ln2Rstd})
            *t = ops.allocate(rows);
        a.qkv = ops.allocate(rows * 3 * c);
        a.att = ops.allocate(att);
        for (Tensor* t : {&a.fc, &a.gelu, &a.geluCast})
            *t = ops.allocate(rows * 4 * c);
    }
    for (Tensor* t : {&m_final, &m_lnf, &m_lnfCast, &m_dlnf, &m_dx, &m_dmid, &m_dln, &m_dattOut})
        *t = ops.allocate(rows * c);
    m_lnfMean = ops.allocate(rows);
    m_lnfRstd = ops.allocate(rows);
    const auto vocab = static_cast<std::size_t>(m_spec.vocab);
    m_logits = ops.allocate(rows * vocab);
    m_dlogits = ops.allocate(rows * vocab);
    m_dqkv = ops.allocate(rows * 3 * c);
    m_dfc = ops.allocate(rows * 4 * c);
    m_dscores = ops.allocate(att);
    m_gradCast = ops.allocate(rows * std::max(vocab, 4 * c)); // the widest arriving gradient
    // The cast copy of the parameters too (used whenever casts are attached): every allocation
    // of a run happens here, where an engine out of memory can still hand over to the CPU.
    if (m_castParams.size < m_count)
        m_castParams = ops.allocate(m_count);
    m_tokens = ops.allocateLabels(rows);
    m_targets = ops.allocateLabels(rows);
}

Tensor GptModel::view(Tensor buffer, std::size_t perRow) const {
    const auto rows = static_cast<std::size_t>(m_batch) * static_cast<std::size_t>(m_time);
    if (perRow == 0)
        return {buffer.data,
                rows * static_cast<std::size_t>(m_spec.heads) * static_cast<std::size_t>(m_time)};
    return {buffer.data, rows * perRow};
}

double GptModel::forward(Tensor params, const std::uint8_t* tokens, const std::uint8_t* targets,
                         int batch, int time) {
    if (batch < 1 || time < 1 || time > m_spec.context)
        throw std::invalid_argument("gpt forward: batch >= 1 and time in 1.." +
                                    std::to_string(m_spec.context) + " expected");
    const int rows = batch * time, c = m_spec.width;
    const auto n = static_cast<std::size_t>(rows);
    for (std::size_t i = 0; i < n; ++i)
        if (tokens[i] >= m_spec.vocab || targets[i] >= m_spec.vocab)
            throw std::invalid_argument("gpt forward: a byte past the vocabulary");
    reserve(batch);
    m_batch = batch;
    m_time = time;
    TensorOps& ops = *m_ops;
    TransformerOps& layers = ops.transformer();
    ops.uploadLabels(m_tokens, tokens, n);
    ops.uploadLabels(m_targets, targets, n);

    const AttentionShape shape{batch, time, c, m_spec.heads};
    const auto cw = static_cast<std::size_t>(c);
    // With casts the products read cast weights (matrices only; biases are added in FP32).
    m_castLastForward = m_casts != nullptr;
    Tensor w = params;
    if (m_casts != nullptr) {
        if (m_castParams.size < m_count)
            m_castParams = ops.allocate(m_count);
        ops.copy(m_castParams, params);
        for (std::size_t i = 0; i < m_tensors.size(); ++i) {
            const Tensor values = m_castParams.slice(m_tensors[i].offset, m_tensors[i].size());
            // (outputs, inputs), the rows a weight's blocks and tiles run along.
            const BlockLayout layout{m_tensors[i].rows, m_tensors[i].cols, true};
            if (const int stage = stageOfTensor(i); stage >= 0 && m_tensors[i].matrix())
                m_casts->cast(stage, TensorRole::Weights, GptSite::Product, values, layout);
            else if (m_tensors[i].offset == m_tok || m_tensors[i].offset == m_pos)
                m_casts->cast(0, TensorRole::Weights, GptSite::Embedding, values, layout);
        }
        w = m_castParams;
    }
    const auto v = static_cast<std::size_t>(m_spec.vocab);
    layers.embeddingForward(view(m_acts[0].in, cw), m_tokens, w.slice(m_tok, v * cw),
                            w.slice(m_pos, static_cast<std::size_t>(m_spec.context) * cw), batch,
                            time, c);
    for (std::size_t l = 0; l < m_acts.size(); ++l) {
        BlockActivations& a = m_acts[l];
        const BlockOffsets& o = m_blockOffsets[l];
        const int attention = 2 * static_cast<int>(l), mlp = attention + 1;
        const Tensor in = view(a.in, cw), ln1 = view(a.ln1, cw), qkv = view(a.qkv, 3 * cw),
                     att = view(a.att, 0), attOut = view(a.attOut, cw), mid = view(a.mid, cw),
                     ln2 = view(a.ln2, cw), fc = view(a.fc, 4 * cw), gelu = view(a.gelu, 4 * cw);
        layers.layerNormForward(ln1, a.ln1Mean, a.ln1Rstd, in, params.slice(o.ln1w, cw),
                                params.slice(o.ln1b, cw), rows, c);
        layers.linearForward(
            qkv,
            operand(attention, TensorRole::Activations, ln1, a.ln1Cast, cw, GptSite::NormOutput),
            w.slice(o.qkvw, 3 * cw * cw), w.slice(o.qkvb, 3 * cw), rows, c, 3 * c);
        // q, k and v (rows of 3C, each q . k^T and att . v reads a head's part of): the
        // attention products' operands; the probabilities in rows of T.
        const auto t = static_cast<std::size_t>(time);
        if (m_casts != nullptr)
            m_casts->cast(attention, TensorRole::Activations, GptSite::Product, qkv,
                          {qkv.size / (3 * cw), 3 * cw, false});
        layers.attentionProbabilities(att, qkv, shape);
        if (m_casts != nullptr)
            m_casts->cast(attention, TensorRole::Activations, GptSite::Probabilities, att,
                          {att.size / t, t, false});
        layers.attentionValues(attOut, att, qkv, shape);
        layers.linearForward(mid,
                             operand(attention, TensorRole::Activations, attOut, a.attOutCast, cw),
                             w.slice(o.projw, cw * cw), w.slice(o.projb, cw), rows, c, c);
        layers.addInto(mid, in); // residual
        layers.layerNormForward(ln2, a.ln2Mean, a.ln2Rstd, mid, params.slice(o.ln2w, cw),
                                params.slice(o.ln2b, cw), rows, c);
        layers.linearForward(
            fc, operand(mlp, TensorRole::Activations, ln2, a.ln2Cast, cw, GptSite::NormOutput),
            w.slice(o.fcw, 4 * cw * cw), w.slice(o.fcb, 4 * cw), rows, c, 4 * c);
        layers.geluTanhForward(gelu, fc);
        const Tensor next = view(l + 1 < m_acts.size() ? m_acts[l + 1].in : m_final, cw);
        layers.linearForward(next, operand(mlp, TensorRole::Activations, gelu, a.geluCast, 4 * cw),
                             w.slice(o.outw, 4 * cw * cw), w.slice(o.outb, cw), rows, 4 * c, c);
        layers.addInto(next, mid); // residual
    }
    const Tensor lnf = view(m_lnf, cw);
    layers.layerNormForward(lnf, m_lnfMean, m_lnfRstd, view(m_final, cw), params.slice(m_lnfw, cw),
                            params.slice(m_lnfb, cw), rows, c);
    const int head = stageCount() - 1;
    layers.linearForward(
        view(m_logits, v),
        operand(head, TensorRole::Activations, lnf, m_lnfCast, cw, GptSite::NormOutput),
        w.slice(m_headw, v * cw), w.slice(m_headb, v), rows, c, m_spec.vocab);
    const SequenceLoss loss = layers.sequenceCrossEntropy(view(m_logits, v), m_targets, rows,
                                                          m_spec.vocab, view(m_dlogits, v));
    m_correct = loss.correct;
    return loss.loss;
}

void GptModel::backward(Tensor params, Tensor grads, float lossScale) {
    if (m_batch == 0)
        throw std::logic_error("gpt backward before forward");
    TensorOps& ops = *m_ops;
    TransformerOps& layers = ops.transformer();
    const auto v = static_cast<std::size_t>(m_spec.vocab);
    const Tensor dlogits = view(m_dlogits, v);
    if (lossScale != 1.0f) // forward writes dlogits afresh each time
        ops.scale(dlogits, lossScale);
    ops.fill(grads.slice(0, m_count), 0.0f);
    const int rows = m_batch * m_time, c = m_spec.width;
    const auto cw = static_cast<std::size_t>(c);
    const AttentionShape shape{m_batch, m_time, c, m_spec.heads};
    const Tensor dlnf = view(m_dlnf, cw), dx = view(m_dx, cw), dmid = view(m_dmid, cw),
                 dln = view(m_dln, cw), dattOut = view(m_dattOut, cw), dqkv = view(m_dqkv, 3 * cw),
                 dfc = view(m_dfc, 4 * cw), dscores = view(m_dscores, 0);

    // The products' operands as forward read them, and the arriving gradients cast.
    const bool cast = m_castLastForward && m_casts != nullptr;
    const Tensor w = cast ? m_castParams : params;
    auto used = [&](Tensor value, Tensor castCopy, std::size_t perRow,
                    GptSite site = GptSite::Product) {
        return ProductInput{view(cast ? castCopy : value, perRow), view(value, perRow), site};
    };
    const int head = stageCount() - 1;
    // Per-layer scaling: each stage's arriving gradient (the logits' for the head, the residual
    // stream's at each stage boundary) times the factor the casts pick for it.
    m_stageScales.assign(static_cast<std::size_t>(stageCount()), lossScale);
    double cumulative = 1.0;
    const auto arrive = [&](int stage, Tensor gradient) {
        if (cast) {
            const double k = m_casts->gradientScale(stage, gradient, cumulative);
            if (k != 1.0)
                ops.scale(gradient, static_cast<float>(k));
            cumulative *= k;
        }
        for (int s = stage; s >= 0; --s) // until a stage below arrives with its own
            m_stageScales[static_cast<std::size_t>(s)] = lossScale * cumulative;
    };
    arrive(head, dlogits);
    productBackward(head, dlnf, grads, w, m_headw, m_headb, dlogits,
                    used(m_lnf, m_lnfCast, cw, GptSite::NormOutput), rows, c, m_spec.vocab);
    layers.layerNormBackward(dx, grads.slice(m_lnfw, cw), grads.slice(m_lnfb, cw), dlnf,
                             view(m_final, cw), params.slice(m_lnfw, cw), m_lnfMean, m_lnfRstd,
                             rows, c, false);
    for (std::size_t l = m_acts.size(); l-- > 0;) {
        const BlockActivations& a = m_acts[l];
        const BlockOffsets& o = m_blockOffsets[l];
        const int attention = 2 * static_cast<int>(l), mlp = attention + 1;
        // next = mid + out(gelu(fc(ln2(mid)))): dx flows to mid directly and through the MLP.
        arrive(mlp, dx);
        productBackward(mlp, dfc, grads, w, o.outw, o.outb, dx, used(a.gelu, a.geluCast, 4 * cw),
                        rows, 4 * c, c);
        layers.geluTanhBackward(dfc, dfc, view(a.fc, 4 * cw));
        productBackward(mlp, dln, grads, w, o.fcw, o.fcb, dfc,
                        used(a.ln2, a.ln2Cast, cw, GptSite::NormOutput), rows, c, 4 * c);
        ops.copy(dmid, dx);
        layers.layerNormBackward(dmid, grads.slice(o.ln2w, cw), grads.slice(o.ln2b, cw), dln,
                                 view(a.mid, cw), params.slice(o.ln2w, cw), a.ln2Mean, a.ln2Rstd,
                                 rows, c, true);
        // mid = in + proj(attention(qkv(ln1(in)))).
        arrive(attention, dmid);
        productBackward(attention, dattOut, grads, w, o.projw, o.projb, dmid,
                        used(a.attOut, a.attOutCast, cw), rows, c, c);
        if (cast) // dO, the gradient entering att . v's backward
            m_casts->cast(attention, TensorRole::ActivationGradients, GptSite::Product, dattOut,
                          {dattOut.size / cw, cw, false});
        layers.attentionScoreGradients(dscores, dattOut, view(a.qkv, 3 * cw), view(a.att, 0),
                                       shape);
        if (cast) // the scores' gradient, before the products that take it back to q and k
            m_casts->cast(attention, TensorRole::ActivationGradients, GptSite::ScoreGradients,
                          dscores,
                          {dscores.size / static_cast<std::size_t>(m_time),
                           static_cast<std::size_t>(m_time), false});
        layers.attentionInputGradients(dqkv, dscores, dattOut, view(a.qkv, 3 * cw), view(a.att, 0),
                                       shape);
        productBackward(attention, dln, grads, w, o.qkvw, o.qkvb, dqkv,
                        used(a.ln1, a.ln1Cast, cw, GptSite::NormOutput), rows, c, 3 * c);
        ops.copy(dx, dmid);
        layers.layerNormBackward(dx, grads.slice(o.ln1w, cw), grads.slice(o.ln1b, cw), dln,
                                 view(a.in, cw), params.slice(o.ln1w, cw), a.ln1Mean, a.ln1Rstd,
                                 rows, c, true);
    }
    layers.embeddingBackward(grads.slice(m_tok, v * cw),
                             grads.slice(m_pos, static_cast<std::size_t>(m_spec.context) * cw), dx,
                             m_tokens, m_batch, m_time, c);
}

} // namespace plab::transformer
