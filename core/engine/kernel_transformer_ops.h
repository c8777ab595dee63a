// KernelTransformerOps: TransformerOps over transformer_kernel_bodies.h and a KernelOps
// execution policy (kernel_ops.h describes it): the CUDA engine's GPT layers, and their host
// emulation that the parity tests run on machines without a GPU.
#pragma once

#include "engine/gemm_call.h"
#include "engine/tensor_ops.h"
#include "engine/transformer_kernel_bodies.h"
#include "engine/transformer_ops.h"

#include <cstddef>
#include <vector>

namespace plab {

template <class Policy>
class KernelTransformerOps final : public TransformerOps {
public:
    explicit KernelTransformerOps(Policy& policy) : m_policy(policy) {}

    void linearForward(Tensor out, Tensor in, Tensor w, Tensor b, int rows, int inputs,
                       int outputs) override {
        const auto i = static_cast<std::size_t>(inputs), o = static_cast<std::size_t>(outputs);
        m_policy.gemm({out.data, in.data, w.data, rows, outputs, inputs, i, 1, 1, i, false});
        m_policy.forEach(static_cast<std::size_t>(rows) * o,
                         kernels::AddRowBias{out.data, b.data, o});
    }
    void linearBackward(Tensor din, Tensor dw, Tensor db, Tensor dout, Tensor in, Tensor w,
                        int rows, int inputs, int outputs) override {
        const auto i = static_cast<std::size_t>(inputs), o = static_cast<std::size_t>(outputs);
        if (din.data != nullptr) // din = dout . W
            m_policy.gemm({din.data, dout.data, w.data, rows, inputs, outputs, o, 1, i, 1, false});
        // dW += dout^T . in
        m_policy.gemm({dw.data, dout.data, in.data, outputs, inputs, rows, 1, o, i, 1, true});
        m_policy.forEach(
            o, kernels::ColumnSumInto{db.data, dout.data, static_cast<std::size_t>(rows), o});
    }
    void embeddingForward(Tensor out, const std::uint8_t* tokens, Tensor tok, Tensor pos, int batch,
                          int time, int channels) override {
        m_policy.forEach(
            static_cast<std::size_t>(batch) * time * channels,
            kernels::EmbeddingForward{out.data, tokens, tok.data, pos.data, time, channels});
    }
    void embeddingBackward(Tensor dtok, Tensor dpos, Tensor dout, const std::uint8_t* tokens,
                           int batch, int time, int channels) override {
        m_policy.forEach(dtok.size, kernels::EmbeddingTokenGradient{dtok.data, dout.data, tokens,
                                                                    batch * time, channels});
        m_policy.forEach(
            static_cast<std::size_t>(time) * channels,
            kernels::EmbeddingPositionGradient{dpos.data, dout.data, batch, time, channels});
    }
    void layerNormForward(Tensor out, Tensor mean, Tensor rstd, Tensor in, Tensor weight,
                          Tensor bias, int rows, int channels) override {
        m_policy.forEach(static_cast<std::size_t>(rows),
                         kernels::LayerNormRow{out.data, mean.data, rstd.data, in.data, weight.data,
                                               bias.data, channels});
    }
    void layerNormBackward(Tensor din, Tensor dweight, Tensor dbias, Tensor dout, Tensor in,
                           Tensor weight, Tensor mean, Tensor rstd, int rows, int channels,
                           bool accumulate) override {
        m_policy.forEach(static_cast<std::size_t>(channels),
                         kernels::LayerNormParameterGradient{dweight.data, dbias.data, dout.data,
                                                             in.data, mean.data, rstd.data, rows,
                                                             channels});
        m_policy.forEach(static_cast<std::size_t>(rows),
                         kernels::LayerNormInputGradientRow{din.data, dout.data, in.data,
                                                            weight.data, mean.data, rstd.data,
                                                            channels, accumulate});
    }
    void attentionProbabilities(Tensor att, Tensor qkv,
                                const transformer::AttentionShape& s) override {
        m_policy.forEach(rowsOf(s), kernels::AttentionProbabilityRow{att.data, qkv.data,
                                                                     kernels::geometryOf(s)});
    }
    void attentionValues(Tensor out, Tensor att, Tensor qkv,
                         const transformer::AttentionShape& s) override {
        m_policy.forEach(
            static_cast<std::size_t>(s.batch) * s.time * s.channels,
            kernels::AttentionValuesElement{out.data, att.data, qkv.data, kernels::geometryOf(s)});
    }
    void attentionScoreGradients(Tensor dscores, Tensor dout, Tensor qkv, Tensor att,
                                 const transformer::AttentionShape& s) override {
        m_policy.forEach(rowsOf(s),
                         kernels::AttentionScoreGradientRow{dscores.data, dout.data, qkv.data,
                                                            att.data, kernels::geometryOf(s)});
    }
    void attentionInputGradients(Tensor dqkv, Tensor dscores, Tensor dout, Tensor qkv, Tensor att,
                                 const transformer::AttentionShape& s) override {
        m_policy.forEach(static_cast<std::size_t>(s.batch) * s.time * 3 * s.channels,
                         kernels::AttentionInputGradientElement{dqkv.data, dscores.data, dout.data,
                                                                qkv.data, att.data,
                                                                kernels::geometryOf(s)});
    }
    void geluTanhForward(Tensor out, Tensor in) override {
        m_policy.forEach(in.size, kernels::ActivationForward{out.data, in.data,
                                                             kernels::ActivationOp::GeluTanh});
    }
    void geluTanhBackward(Tensor din, Tensor dout, Tensor in) override {
        m_policy.forEach(in.size, kernels::ActivationBackward{din.data, dout.data, in.data, nullptr,
                                                              kernels::ActivationOp::GeluTanh});
    }
    void addInto(Tensor y, Tensor x) override {
        m_policy.forEach(y.size, kernels::AddInto{y.data, x.data});
    }
    SequenceLoss sequenceCrossEntropy(Tensor logits, const std::uint8_t* targets, int rows,
                                      int vocab, Tensor dlogits) override {
        const kernels::Reduction r = m_policy.reduce(
            static_cast<std::size_t>(rows),
            kernels::SequenceCrossEntropyRow{dlogits.data, logits.data, targets, rows, vocab});
        return {r.sum / rows, static_cast<int>(r.sumSq)};
    }
    std::vector<float> channelAmax(Tensor x, int rows, int channels) override {
        const auto c = static_cast<std::size_t>(channels);
        if (m_amaxCapacity < c) {
            m_amax = static_cast<float*>(m_policy.allocate(c * sizeof(float)));
            m_amaxCapacity = c;
        }
        m_policy.forEach(c, kernels::ChannelAmax{m_amax, x.data, rows, channels});
        std::vector<float> host(c);
        m_policy.toHost(host.data(), m_amax, c * sizeof(float));
        return host;
    }

private:
    static std::size_t rowsOf(const transformer::AttentionShape& s) {
        return static_cast<std::size_t>(s.batch) * s.heads * s.time;
    }

    Policy& m_policy;
    float* m_amax = nullptr; // channelAmax's answer in the device's memory
    std::size_t m_amaxCapacity = 0;
};

} // namespace plab
