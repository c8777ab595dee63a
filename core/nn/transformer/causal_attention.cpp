#include "nn/transformer/causal_attention.h"

#include "nn/matmul.h"
#include "nn/transformer/softmax_row.h"
#include "util/vector_clones.h"

#include <cmath>
#include <cstddef>

namespace plab::transformer {
namespace {

// Where head h's q, k or v (part 0, 1, 2) of batch b starts in qkv (B, T, 3C), row stride 3C.
const float* part(const float* qkv, const AttentionShape& s, int b, int h, int which) {
    return qkv + static_cast<std::ptrdiff_t>(b) * s.time * 3 * s.channels +
           static_cast<std::ptrdiff_t>(which) * s.channels + h * s.headSize();
}
float* part(float* qkv, const AttentionShape& s, int b, int h, int which) {
    return const_cast<float*>(part(static_cast<const float*>(qkv), s, b, h, which));
}
// Head h of batch b in a (B, T, C) tensor, row stride C.
template <class T>
T* headOf(T* x, const AttentionShape& s, int b, int h) {
    return x + static_cast<std::ptrdiff_t>(b) * s.time * s.channels + h * s.headSize();
}
// The (T, T) square of (batch b, head h) in a (B, H, T, T) tensor.
template <class T>
T* square(T* x, const AttentionShape& s, int b, int h) {
    return x + (static_cast<std::ptrdiff_t>(b) * s.heads + h) * s.time * s.time;
}

// The row's softmax (softmax_row.h), cloned for AVX2 / AVX-512 (the file is compiled without
// fused multiply-adds: every copy gives the same bits).
PLAB_VECTOR_CLONES
void softmaxRow(float* p, int live, int time) {
    causalSoftmaxRow(p, live, time);
}
PLAB_VECTOR_CLONES
void softmaxBackwardRow(float* ds, const float* p, int live, int time, float scale) {
    causalSoftmaxBackwardRow(ds, p, live, time, scale);
}

} // namespace

void attentionProbabilities(float* att, const float* qkv, const AttentionShape& s) {
    const int t = s.time, c = s.channels, hs = s.headSize();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads; ++h) {
            // (t, t) scores q . k^T / sqrt(hs) (the product's alpha), then probabilities
            float* p = square(att, s, b, h);
            gemm(false, true, t, t, hs, scale, part(qkv, s, b, h, 0), 3 * c, part(qkv, s, b, h, 1),
                 3 * c, 0.0f, p, t);
            for (int i = 0; i < t; ++i)
                softmaxRow(p + static_cast<std::ptrdiff_t>(i) * t, i + 1, t);
        }
}

void attentionValues(float* out, const float* att, const float* qkv, const AttentionShape& s) {
    const int t = s.time, c = s.channels, hs = s.headSize();
    for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads; ++h)
            gemm(false, false, t, hs, t, 1.0f, square(att, s, b, h), t, part(qkv, s, b, h, 2),
                 3 * c, 0.0f, headOf(out, s, b, h), c); // att . v
}

// Per (batch, head), with P = att, dO = dout's head: dP = dO . v^T, then each row through the
// softmax's backward (softmax_row.h).
void attentionScoreGradients(float* dscores, const float* dout, const float* qkv, const float* att,
                             const AttentionShape& s) {
    const int t = s.time, c = s.channels, hs = s.headSize();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads; ++h) {
            const float* p = square(att, s, b, h);
            float* dp = square(dscores, s, b, h);
            gemm(false, true, t, t, hs, 1.0f, headOf(dout, s, b, h), c, part(qkv, s, b, h, 2),
                 3 * c, 0.0f, dp, t); // dO . v^T
            for (int i = 0; i < t; ++i)
                softmaxBackwardRow(dp + static_cast<std::ptrdiff_t>(i) * t,
                                   p + static_cast<std::ptrdiff_t>(i) * t, i + 1, t, scale);
        }
}

void attentionInputGradients(float* dqkv, const float* dscores, const float* dout, const float* qkv,
                             const float* att, const AttentionShape& s) {
    const int t = s.time, c = s.channels, hs = s.headSize();
    for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads; ++h) {
            const float* dp = square(dscores, s, b, h);
            gemm(true, false, t, hs, t, 1.0f, square(att, s, b, h), t, headOf(dout, s, b, h), c,
                 0.0f, part(dqkv, s, b, h, 2), 3 * c); // dv = P^T . dO
            gemm(false, false, t, hs, t, 1.0f, dp, t, part(qkv, s, b, h, 1), 3 * c, 0.0f,
                 part(dqkv, s, b, h, 0), 3 * c); // dq = dS . k
            gemm(true, false, t, hs, t, 1.0f, dp, t, part(qkv, s, b, h, 0), 3 * c, 0.0f,
                 part(dqkv, s, b, h, 1), 3 * c); // dk = dS^T . q
        }
}

void attentionForward(float* out, float* att, const float* qkv, const AttentionShape& s,
                      const AttentionCast& castProbabilities) {
    attentionProbabilities(att, qkv, s);
    if (castProbabilities)
        castProbabilities(att, static_cast<std::size_t>(s.batch) * s.heads * s.time * s.time);
    attentionValues(out, att, qkv, s);
}

void attentionBackward(float* dqkv, float* dscores, const float* dout, const float* qkv,
                       const float* att, const AttentionShape& s,
                       const AttentionCast& castScoreGradients) {
    attentionScoreGradients(dscores, dout, qkv, att, s);
    if (castScoreGradients)
        castScoreGradients(dscores, static_cast<std::size_t>(s.batch) * s.heads * s.time * s.time);
    attentionInputGradients(dqkv, dscores, dout, qkv, att, s);
}

} // namespace plab::transformer
