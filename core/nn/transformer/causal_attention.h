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

// att is kept for backward; castProbabilities, when set, casts att before att . v (and the cast
// att is what backward sees).
void attentionForward(float* out, float* att, const float* qkv, const AttentionShape& s,
                      const AttentionCast& castProbabilities = {});
// dqkv (B, T, 3C) from dout (B, T, C), the forward's qkv and att (overwritten, not accumulated).
// dscores (B, H, T, T) is scratch; castScoreGradients, when set, casts the scores' gradient
// before the products that take it back to q and k.
void attentionBackward(float* dqkv, float* dscores, const float* dout, const float* qkv,
                       const float* att, const AttentionShape& s,
                       const AttentionCast& castScoreGradients = {});

} // namespace plab::transformer
