// Causal multi-head self-attention on a fused QKV projection, a forward/backward pair:
//   qkv (B, T, 3C) = [q | k | v], each (B, T, C) as H heads of hs = C / H channels;
//   att (B, H, T, T) = softmax over t2 <= t of q_t . k_t2 / sqrt(hs) (0 above the diagonal);
//   out (B, T, C) = att . v, heads side by side.
// The two products (q.k^T and att.v) are matrix products per (batch, head), as in PyTorch.
#pragma once

namespace plab::transformer {

struct AttentionShape {
    int batch = 1, time = 1, channels = 1, heads = 1;
    int headSize() const { return channels / heads; }
};

// att is kept for backward.
void attentionForward(float* out, float* att, const float* qkv, const AttentionShape& s);
// dqkv (B, T, 3C) from dout (B, T, C), the forward's qkv and att (overwritten, not accumulated).
void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                       const AttentionShape& s);

} // namespace plab::transformer
