// TransformerOps: the tiny GPT's layers (nn/transformer) as operations on an engine's tensors,
// so that transformer::GptModel is written once and runs on the CPU (cpu_transformer_ops.cpp:
// the layer functions themselves) or a GPU (kernel_transformer_ops.h: kernel bodies). Each is
// one layer's forward or backward; the attention passes come in two halves each, between which
// a precision recipe casts the probabilities or the scores' gradient.
//
// Shapes: rows = B * T; tokens and targets are bytes in the engine's memory
// (TensorOps::allocateLabels). Gradients of parameters accumulate (+=); gradients of inputs are
// overwritten unless said.
#pragma once

#include "nn/transformer/causal_attention.h" // AttentionShape

#include <cstddef>
#include <cstdint>
#include <vector>

namespace plab {

struct Tensor;

struct SequenceLoss {
    double loss = 0.0; // mean over the rows, nats
    int correct = 0;   // rows whose largest logit (the first, on ties) is the target
};

class TransformerOps {
public:
    virtual ~TransformerOps() = default;

    // out (rows, O) = in (rows, I) . W^T (O, I) + b (O).
    virtual void linearForward(Tensor out, Tensor in, Tensor w, Tensor b, int rows, int inputs,
                               int outputs) = 0;
    // din (rows, I) = dout . W (skipped when din.data is null); dW += dout^T . in;
    // db += dout's column sums.
    virtual void linearBackward(Tensor din, Tensor dw, Tensor db, Tensor dout, Tensor in, Tensor w,
                                int rows, int inputs, int outputs) = 0;
    // out (rows, C) = tok[tokens[r]] (V, C) + pos[r % T] (context, C).
    virtual void embeddingForward(Tensor out, const std::uint8_t* tokens, Tensor tok, Tensor pos,
                                  int batch, int time, int channels) = 0;
    virtual void embeddingBackward(Tensor dtok, Tensor dpos, Tensor dout,
                                   const std::uint8_t* tokens, int batch, int time,
                                   int channels) = 0;
    // LayerNorm over the last dimension (nn/transformer/layer_norm.h); mean, rstd (rows) kept.
    virtual void layerNormForward(Tensor out, Tensor mean, Tensor rstd, Tensor in, Tensor weight,
                                  Tensor bias, int rows, int channels) = 0;
    // din = the input gradient (+= when accumulate: the residual stream's).
    virtual void layerNormBackward(Tensor din, Tensor dweight, Tensor dbias, Tensor dout, Tensor in,
                                   Tensor weight, Tensor mean, Tensor rstd, int rows, int channels,
                                   bool accumulate) = 0;
    // The attention halves of nn/transformer/causal_attention.h.
    virtual void attentionProbabilities(Tensor att, Tensor qkv,
                                        const transformer::AttentionShape& s) = 0;
    virtual void attentionValues(Tensor out, Tensor att, Tensor qkv,
                                 const transformer::AttentionShape& s) = 0;
    virtual void attentionScoreGradients(Tensor dscores, Tensor dout, Tensor qkv, Tensor att,
                                         const transformer::AttentionShape& s) = 0;
    virtual void attentionInputGradients(Tensor dqkv, Tensor dscores, Tensor dout, Tensor qkv,
                                         Tensor att, const transformer::AttentionShape& s) = 0;
    // GELU (tanh), element-wise; din may be dout.
    virtual void geluTanhForward(Tensor out, Tensor in) = 0;
    virtual void geluTanhBackward(Tensor din, Tensor dout, Tensor in) = 0;
    virtual void addInto(Tensor y, Tensor x) = 0; // y += x (a residual sum)
    // The mean next-byte cross-entropy of logits (rows, V) against targets; dlogits (rows, V) =
    // (softmax - onehot) / rows.
    virtual SequenceLoss sequenceCrossEntropy(Tensor logits, const std::uint8_t* targets, int rows,
                                              int vocab, Tensor dlogits) = 0;
    // Per channel, the largest |x| over the rows of x (rows, C), on the host.
    virtual std::vector<float> channelAmax(Tensor x, int rows, int channels) = 0;
};

} // namespace plab
