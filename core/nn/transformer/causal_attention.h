// Causal multi-head self-attention on a fused QKV projection, a forward/backward pair:
//   qkv (B, T, 3C) = [q | k | v], each (B, T, C) as H heads of hs = C / H channels;
//   att (B, H, T, T) = softmax over t2 <= t of q_t . k_t2 / sqrt(hs) (0 above the diagonal);
//   out (B, T, C) = att . v, heads side by side.
// The two products (q.k^T and att.v) are matrix products per (batch, head), as in PyTorch.
#pragma once

#include <cstddef>
#include <functional>

namespace plab::transformer {

struct AttentionShape {
    int batch = 1, time = 1, channels = 1, heads = 1;
    int headSize() const { return channels / heads; }
};

// Casts a whole (B, H, T, T) operand of the second or first product in place: the precision
// recipe's hook (empty: FP32).
using AttentionCast = std::function<void(float* values, std::size_t count)>;

// The two halves of each pass, between which a recipe casts (the engines' operations,
// engine/transformer_ops.h, call them one by one):
// att (B, H, T, T) = the causal softmax of q . k^T / sqrt(hs).
void attentionProbabilities(float* att, const float* qkv, const AttentionShape& s);
// out (B, T, C) = att . v.
void attentionValues(float* out, const float* att, const float* qkv, const AttentionShape& s);
// dscores (B, H, T, T) = the gradient of the scores q . k^T (the softmax's Jacobian applied to
// dout . v^T, times 1 / sqrt(hs)).
void attentionScoreGradients(float* dscores, const float* dout, const float* qkv, const float* att,
                             const AttentionShape& s);
// dqkv (B, T, 3C) (overwritten): dq = dS . k, dk = dS^T . q, dv = att^T . dout.
void attentionInputGradients(float* dqkv, const float* dscores, const float* dout, const float* qkv,
                             const float* att, const AttentionShape& s);

// Both halves with the cast between. att is kept for backward; castProbabilities, when set, casts
// att before att . v (and the cast att is what backward sees).
void attentionForward(float* out, float* att, const float* qkv, const AttentionShape& s,
                      const AttentionCast& castProbabilities = {});
// dqkv (B, T, 3C) from dout (B, T, C), the forward's qkv and att (overwritten, not accumulated).
// dscores (B, H, T, T) is scratch; castScoreGradients, when set, casts the scores' gradient
// before the products that take it back to q and k.
void attentionBackward(float* dqkv, float* dscores, const float* dout, const float* qkv,
                       const float* att, const AttentionShape& s,
                       const AttentionCast& castScoreGradients = {});

} // namespace plab::transformer
