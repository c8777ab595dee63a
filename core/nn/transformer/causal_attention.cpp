#include "nn/transformer/causal_attention.h"

#include "nn/matmul.h"

#include <cmath>
#include <cstddef>
#include <limits>

namespace plab::transformer {
namespace {

// One head's slice of a (B, T, width) tensor at column `column`: a (T, hs) matrix with the
// row stride of the tensor.
using HeadMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
using MutableHeadMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;

HeadMap head(const float* tensor, int width, int time, int hs, int b, int column) {
    return {tensor + static_cast<std::ptrdiff_t>(b) * time * width + column, time, hs,
            Eigen::OuterStride<>(width)};
}
MutableHeadMap head(float* tensor, int width, int time, int hs, int b, int column) {
    return {tensor + static_cast<std::ptrdiff_t>(b) * time * width + column, time, hs,
            Eigen::OuterStride<>(width)};
}

} // namespace

void attentionForward(float* out, float* att, const float* qkv, const AttentionShape& s) {
    const int t = s.time, c = s.channels, hs = s.headSize();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    RowMatrix scores(t, t);
    for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads; ++h) {
            const HeadMap q = head(qkv, 3 * c, t, hs, b, h * hs);
            const HeadMap k = head(qkv, 3 * c, t, hs, b, c + h * hs);
            const HeadMap v = head(qkv, 3 * c, t, hs, b, 2 * c + h * hs);
            scores.noalias() = q * k.transpose();
            // (t, t) probabilities of this (batch, head)
            float* p = att + (static_cast<std::ptrdiff_t>(b) * s.heads + h) * t * t;
            for (int i = 0; i < t; ++i) {
                float* row = p + static_cast<std::ptrdiff_t>(i) * t;
                float maxScore = -std::numeric_limits<float>::infinity();
                for (int j = 0; j <= i; ++j) {
                    row[j] = scores(i, j) * scale;
                    maxScore = row[j] > maxScore ? row[j] : maxScore;
                }
                float sum = 0.0f;
                for (int j = 0; j <= i; ++j) {
                    row[j] = std::exp(row[j] - maxScore);
                    sum += row[j];
                }
                const float inv = 1.0f / sum;
                for (int j = 0; j <= i; ++j)
                    row[j] *= inv;
                for (int j = i + 1; j < t; ++j)
                    row[j] = 0.0f; // masked: the future
            }
            const Eigen::Map<const RowMatrix> probs(p, t, t);
            head(out, c, t, hs, b, h * hs).noalias() = probs * v;
        }
}

// Per (batch, head), with P = att, dO = dout's head:
//   dP = dO . v^T; dv = P^T . dO; dS = P * (dP - rowsum(P * dP)) (the softmax's Jacobian; 0
//   above the diagonal, where P is 0); dq = dS . k * scale; dk = dS^T . q * scale.
void attentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                       const AttentionShape& s) {
    const int t = s.time, c = s.channels, hs = s.headSize();
    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    RowMatrix dp(t, t);
    for (int b = 0; b < s.batch; ++b)
        for (int h = 0; h < s.heads; ++h) {
            const HeadMap q = head(qkv, 3 * c, t, hs, b, h * hs);
            const HeadMap k = head(qkv, 3 * c, t, hs, b, c + h * hs);
            const HeadMap v = head(qkv, 3 * c, t, hs, b, 2 * c + h * hs);
            const HeadMap dO = head(dout, c, t, hs, b, h * hs);
            const Eigen::Map<const RowMatrix> p(
                att + (static_cast<std::ptrdiff_t>(b) * s.heads + h) * t * t, t, t);
            dp.noalias() = dO * v.transpose();
            head(dqkv, 3 * c, t, hs, b, 2 * c + h * hs).noalias() = p.transpose() * dO;
            for (int i = 0; i < t; ++i) {
                float dot = 0.0f;
                for (int j = 0; j <= i; ++j)
                    dot += p(i, j) * dp(i, j);
                for (int j = 0; j <= i; ++j)
                    dp(i, j) = p(i, j) * (dp(i, j) - dot) * scale;
                for (int j = i + 1; j < t; ++j)
                    dp(i, j) = 0.0f;
            }
            head(dqkv, 3 * c, t, hs, b, h * hs).noalias() = dp * k;
            head(dqkv, 3 * c, t, hs, b, c + h * hs).noalias() = dp.transpose() * q;
        }
}

} // namespace plab::transformer
