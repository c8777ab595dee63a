// The CPU engine's TransformerOps: the nn/transformer layer functions on host memory (OpenBLAS
// products, the vectorised LayerNorm, GELU and cross-entropy).
#pragma once

#include "engine/transformer_ops.h"

namespace plab {

class CpuTransformerOps final : public TransformerOps {
public:
    void linearForward(Tensor out, Tensor in, Tensor w, Tensor b, int rows, int inputs,
                       int outputs) override;
    void linearBackward(Tensor din, Tensor dw, Tensor db, Tensor dout, Tensor in, Tensor w,
                        int rows, int inputs, int outputs) override;
    void embeddingForward(Tensor out, const std::uint8_t* tokens, Tensor tok, Tensor pos, int batch,
                          int time, int channels) override;
    void embeddingBackward(Tensor dtok, Tensor dpos, Tensor dout, const std::uint8_t* tokens,
                           int batch, int time, int channels) override;
    void layerNormForward(Tensor out, Tensor mean, Tensor rstd, Tensor in, Tensor weight,
                          Tensor bias, int rows, int channels) override;
    void layerNormBackward(Tensor din, Tensor dweight, Tensor dbias, Tensor dout, Tensor in,
                           Tensor weight, Tensor mean, Tensor rstd, int rows, int channels,
                           bool accumulate) override;
    void attentionProbabilities(Tensor att, Tensor qkv,
                                const transformer::AttentionShape& s) override;
    void attentionValues(Tensor out, Tensor att, Tensor qkv,
                         const transformer::AttentionShape& s) override;
    void attentionScoreGradients(Tensor dscores, Tensor dout, Tensor qkv, Tensor att,
                                 const transformer::AttentionShape& s) override;
    void attentionInputGradients(Tensor dqkv, Tensor dscores, Tensor dout, Tensor qkv, Tensor att,
                                 const transformer::AttentionShape& s) override;
    void geluTanhForward(Tensor out, Tensor in) override;
    void geluTanhBackward(Tensor din, Tensor dout, Tensor in) override;
    void addInto(Tensor y, Tensor x) override;
    SequenceLoss sequenceCrossEntropy(Tensor logits, const std::uint8_t* targets, int rows,
                                      int vocab, Tensor dlogits) override;
    std::vector<float> channelAmax(Tensor x, int rows, int channels) override;
};

} // namespace plab
