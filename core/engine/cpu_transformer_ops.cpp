#include "engine/cpu_transformer_ops.h"

#include "engine/tensor_ops.h"
#include "nn/activation.h"
#include "nn/matmul.h"
#include "nn/transformer/embedding.h"
#include "nn/transformer/layer_norm.h"
#include "nn/transformer/sequence_cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace plab {

void CpuTransformerOps::linearForward(Tensor out, Tensor in, Tensor w, Tensor b, int rows,
                                      int inputs, int outputs) {
    // The bias rows first and the product added onto them (beta = 1), as PyTorch's addmm does:
    // a product into zeros is a zeroing pass of its own in OpenBLAS, and the bias another.
    for (int r = 0; r < rows; ++r)
        std::copy_n(b.data, outputs, out.data + static_cast<std::ptrdiff_t>(r) * outputs);
    gemm(false, true, rows, outputs, inputs, 1.0f, in.data, inputs, w.data, inputs, 1.0f, out.data,
         outputs);
}

void CpuTransformerOps::linearBackward(Tensor din, Tensor dw, Tensor db, Tensor dout, Tensor in,
                                       Tensor w, int rows, int inputs, int outputs) {
    if (din.data != nullptr)
        gemm(false, false, rows, inputs, outputs, 1.0f, dout.data, outputs, w.data, inputs, 0.0f,
             din.data, inputs);
    gemm(true, false, outputs, inputs, rows, 1.0f, dout.data, outputs, in.data, inputs, 1.0f,
         dw.data, inputs);
    for (int r = 0; r < rows; ++r) {
        const float* d = dout.data + static_cast<std::ptrdiff_t>(r) * outputs;
        for (int j = 0; j < outputs; ++j)
            db.data[j] += d[j];
    }
}

void CpuTransformerOps::embeddingForward(Tensor out, const std::uint8_t* tokens, Tensor tok,
                                         Tensor pos, int batch, int time, int channels) {
    transformer::embeddingForward(out.data, tokens, tok.data, pos.data, batch, time, channels);
}

void CpuTransformerOps::embeddingBackward(Tensor dtok, Tensor dpos, Tensor dout,
                                          const std::uint8_t* tokens, int batch, int time,
                                          int channels) {
    transformer::embeddingBackward(dtok.data, dpos.data, dout.data, tokens, batch, time, channels);
}

void CpuTransformerOps::layerNormForward(Tensor out, Tensor mean, Tensor rstd, Tensor in,
                                         Tensor weight, Tensor bias, int rows, int channels) {
    transformer::layerNormForward(out.data, mean.data, rstd.data, in.data, weight.data, bias.data,
                                  rows, channels);
}

void CpuTransformerOps::layerNormBackward(Tensor din, Tensor dweight, Tensor dbias, Tensor dout,
                                          Tensor in, Tensor weight, Tensor mean, Tensor rstd,
                                          int rows, int channels, bool accumulate) {
    transformer::layerNormBackward(din.data, dweight.data, dbias.data, dout.data, in.data,
                                   weight.data, mean.data, rstd.data, rows, channels, accumulate);
}

void CpuTransformerOps::attentionProbabilities(Tensor att, Tensor qkv,
                                               const transformer::AttentionShape& s) {
    transformer::attentionProbabilities(att.data, qkv.data, s);
}

void CpuTransformerOps::attentionValues(Tensor out, Tensor att, Tensor qkv,
                                        const transformer::AttentionShape& s) {
    transformer::attentionValues(out.data, att.data, qkv.data, s);
}

void CpuTransformerOps::attentionScoreGradients(Tensor dscores, Tensor dout, Tensor qkv, Tensor att,
                                                const transformer::AttentionShape& s) {
    transformer::attentionScoreGradients(dscores.data, dout.data, qkv.data, att.data, s);
}

void CpuTransformerOps::attentionInputGradients(Tensor dqkv, Tensor dscores, Tensor dout,
                                                Tensor qkv, Tensor att,
                                                const transformer::AttentionShape& s) {
    transformer::attentionInputGradients(dqkv.data, dscores.data, dout.data, qkv.data, att.data, s);
}

void CpuTransformerOps::geluTanhForward(Tensor out, Tensor in) {
    plab::geluTanhForward(out.data, in.data, in.size);
}

void CpuTransformerOps::geluTanhBackward(Tensor din, Tensor dout, Tensor in) {
    plab::geluTanhBackward(din.data, dout.data, in.data, in.size);
}

void CpuTransformerOps::addInto(Tensor y, Tensor x) {
    for (std::size_t i = 0; i < y.size; ++i)
        y.data[i] += x.data[i];
}

SequenceLoss CpuTransformerOps::sequenceCrossEntropy(Tensor logits, const std::uint8_t* targets,
                                                     int rows, int vocab, Tensor dlogits) {
    SequenceLoss result;
    result.loss =
        transformer::sequenceCrossEntropy(logits.data, targets, rows, vocab, dlogits.data);
    const auto v = static_cast<std::size_t>(vocab);
    for (std::size_t row = 0; row < static_cast<std::size_t>(rows); ++row) {
        const float* z = logits.data + row * v;
        result.correct += static_cast<std::size_t>(std::max_element(z, z + v) - z) == targets[row];
    }
    return result;
}

std::vector<float> CpuTransformerOps::channelAmax(Tensor x, int rows, int channels) {
    const auto c = static_cast<std::size_t>(channels);
    std::vector<float> amax(c, 0.0f);
    const std::size_t n = static_cast<std::size_t>(rows) * c;
    for (std::size_t i = 0; i < n; ++i)
        amax[i % c] = std::max(amax[i % c], std::fabs(x.data[i]));
    return amax;
}

} // namespace plab
