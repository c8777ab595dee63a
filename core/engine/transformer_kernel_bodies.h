// The GPU engine's kernel bodies for the tiny GPT's layers (nn/transformer), per index as in
// kernel_bodies.h: one thread per output element (or per row where a row's reduction feeds its
// outputs), no atomics, sums in the CPU layers' order where that is cheap (embedding and
// LayerNorm parameter gradients, the cross-entropy), so that most of them give the CPU's bits.
// The products that the CPU hands to BLAS are plain loops here (q . k^T, att . v and their
// gradients); the linear layers use the policy's GEMM.
#pragma once

#include "engine/kernel_bodies.h"
#include "nn/gelu_tanh.h"
#include "nn/transformer/causal_attention.h"
#include "nn/transformer/layer_norm_row.h"
#include "nn/transformer/softmax_row.h"

#include <cstddef>
#include <cstdint>
#include <math.h>

namespace plab::kernels {

// The attention shape as plain ints, and where things lie in qkv (B, T, 3C), (B, T, C) and the
// (B, H, T, T) probabilities.
struct AttentionGeometry {
    int batch, time, channels, heads;
    PLAB_HOST_DEVICE int headSize() const { return channels / heads; }
    // Element d of head h's part (0 q, 1 k, 2 v) at position t of batch b.
    PLAB_HOST_DEVICE size_t qkvAt(int b, int t, int which, int h, int d) const {
        return (static_cast<size_t>(b) * time + t) * 3 * channels +
               static_cast<size_t>(which) * channels + static_cast<size_t>(h) * headSize() + d;
    }
    PLAB_HOST_DEVICE size_t squareAt(int b, int h, int i, int j) const {
        return ((static_cast<size_t>(b) * heads + h) * time + i) * time + j;
    }
    PLAB_HOST_DEVICE float scale() const { return 1.0f / sqrtf(static_cast<float>(headSize())); }
    // Row index (b, h, i) of the (B, H, T, T) squares, as the per-row bodies number them.
    struct Row {
        int b, h, i;
    };
    PLAB_HOST_DEVICE Row rowOf(size_t row) const {
        const size_t t = static_cast<size_t>(time);
        return {static_cast<int>(row / (t * heads)), static_cast<int>(row / t % heads),
                static_cast<int>(row % t)};
    }
    // Element (b, t, col) of a (B, T, width) tensor, as the per-element bodies number them.
    struct Element {
        int b, t, col;
    };
    PLAB_HOST_DEVICE Element elementOf(size_t idx, size_t width) const {
        const size_t t = static_cast<size_t>(time);
        return {static_cast<int>(idx / (width * t)), static_cast<int>(idx / width % t),
                static_cast<int>(idx % width)};
    }
};

inline AttentionGeometry geometryOf(const transformer::AttentionShape& s) {
    return {s.batch, s.time, s.channels, s.heads};
}

// out (rows, C) = tok[tokens[r]] + pos[r % T], per element.
struct EmbeddingForward {
    float* out;
    const std::uint8_t* tokens;
    const float* tok;
    const float* pos;
    int time, channels;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const size_t c = static_cast<size_t>(channels), row = i / c, k = i % c;
        out[i] = tok[tokens[row] * c + k] + pos[(row % static_cast<size_t>(time)) * c + k];
    }
};

// dtok[v][k] += dout[r][k] over the rows r whose token is v, in row order; one thread per
// element of the table.
struct EmbeddingTokenGradient {
    float* dtok;
    const float* dout;
    const std::uint8_t* tokens;
    int rows, channels;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const size_t c = static_cast<size_t>(channels), v = i / c, k = i % c;
        float sum = dtok[i];
        for (int r = 0; r < rows; ++r)
            if (tokens[r] == v)
                sum += dout[static_cast<size_t>(r) * c + k];
        dtok[i] = sum;
    }
};

// dpos[t][k] += dout[b][t][k] over the batch, in order; one thread per (t < time, k).
struct EmbeddingPositionGradient {
    float* dpos;
    const float* dout;
    int batch, time, channels;
    PLAB_HOST_DEVICE void operator()(size_t i) const {
        const size_t c = static_cast<size_t>(channels), t = i / c, k = i % c;
        float sum = dpos[i];
        for (int b = 0; b < batch; ++b)
            sum += dout[(static_cast<size_t>(b) * time + t) * c + k];
        dpos[i] = sum;
    }
};

// One row of LayerNorm forward: mean, biased variance, out = (x - mean) rstd w + b.
struct LayerNormRow {
    float* out;
    float* mean;
    float* rstd;
    const float* in;
    const float* weight;
    const float* bias;
    int channels;
    PLAB_HOST_DEVICE void operator()(size_t r) const {
        const size_t c = static_cast<size_t>(channels);
        transformer::layerNormRow(out + r * c, in + r * c, weight, bias, c, mean + r, rstd + r);
    }
};

// One row of LayerNorm's input gradient: din = rstd (dnorm - mean(dnorm) - norm mean(dnorm
// norm)), dnorm = dout w (+= when accumulate).
struct LayerNormInputGradientRow {
    float* din;
    const float* dout;
    const float* in;
    const float* weight;
    const float* mean;
    const float* rstd;
    int channels;
    bool accumulate;
    PLAB_HOST_DEVICE void operator()(size_t r) const {
        const size_t c = static_cast<size_t>(channels);
        transformer::layerNormInputGradientRow(din + r * c, dout + r * c, in + r * c, weight,
                                               mean[r], rstd[r], c, accumulate);
    }
};

// dweight[k] += sum_r norm[r][k] dout[r][k], dbias[k] += sum_r dout[r][k], rows in order; one
// thread per channel.
struct LayerNormParameterGradient {
    float* dweight;
    float* dbias;
    const float* dout;
    const float* in;
    const float* mean;
    const float* rstd;
    int rows, channels;
    PLAB_HOST_DEVICE void operator()(size_t k) const {
        const size_t c = static_cast<size_t>(channels);
        float w = dweight[k], b = dbias[k];
        for (int r = 0; r < rows; ++r) {
            const size_t at = static_cast<size_t>(r) * c + k;
            b += dout[at];
            w += (in[at] - mean[r]) * rstd[r] * dout[at];
        }
        dweight[k] = w;
        dbias[k] = b;
    }
};

// One row (b, h, i) of the causal softmax of q . k^T / sqrt(hs); zeros past the diagonal.
struct AttentionProbabilityRow {
    float* att;
    const float* qkv;
    AttentionGeometry g;
    PLAB_HOST_DEVICE void operator()(size_t row) const {
        const auto [b, h, i] = g.rowOf(row);
        const int hs = g.headSize();
        float* p = att + g.squareAt(b, h, i, 0);
        const float* q = qkv + g.qkvAt(b, i, 0, h, 0);
        for (int j = 0; j <= i; ++j) {
            const float* k = qkv + g.qkvAt(b, j, 1, h, 0);
            float dot = 0.0f;
            for (int d = 0; d < hs; ++d)
                dot += q[d] * k[d];
            p[j] = dot * g.scale();
        }
        transformer::causalSoftmaxRow(p, i + 1, g.time);
    }
};

// out (B, T, C) = att . v, per element (b, t, h * hs + d).
struct AttentionValuesElement {
    float* out;
    const float* att;
    const float* qkv;
    AttentionGeometry g;
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const auto [b, t, col] = g.elementOf(idx, static_cast<size_t>(g.channels));
        const int h = col / g.headSize(), d = col % g.headSize();
        const float* p = att + g.squareAt(b, h, t, 0);
        float sum = 0.0f;
        for (int j = 0; j <= t; ++j)
            sum += p[j] * qkv[g.qkvAt(b, j, 2, h, d)];
        out[idx] = sum;
    }
};

// One row (b, h, i) of the scores' gradient: dP = dO_i . v_j, dS = P (dP - sum P dP) / sqrt(hs).
struct AttentionScoreGradientRow {
    float* dscores;
    const float* dout;
    const float* qkv;
    const float* att;
    AttentionGeometry g;
    PLAB_HOST_DEVICE void operator()(size_t row) const {
        const auto [b, h, i] = g.rowOf(row);
        const int hs = g.headSize();
        const float* p = att + g.squareAt(b, h, i, 0);
        float* ds = dscores + g.squareAt(b, h, i, 0);
        const float* dO =
            dout + (static_cast<size_t>(b) * g.time + i) * g.channels + static_cast<size_t>(h) * hs;
        for (int j = 0; j <= i; ++j) {
            const float* v = qkv + g.qkvAt(b, j, 2, h, 0);
            float dp = 0.0f;
            for (int d = 0; d < hs; ++d)
                dp += dO[d] * v[d];
            ds[j] = dp;
        }
        transformer::causalSoftmaxBackwardRow(ds, p, i + 1, g.time, g.scale());
    }
};

// dqkv (B, T, 3C), per element: dq_t = sum_j dS[t][j] k_j, dk_t = sum_i dS[i][t] q_i,
// dv_t = sum_i P[i][t] dO_i (the causal terms only: the others are 0).
struct AttentionInputGradientElement {
    float* dqkv;
    const float* dscores;
    const float* dout;
    const float* qkv;
    const float* att;
    AttentionGeometry g;
    PLAB_HOST_DEVICE void operator()(size_t idx) const {
        const auto [b, t, col] = g.elementOf(idx, 3 * static_cast<size_t>(g.channels));
        const int which = col / g.channels, h = col % g.channels / g.headSize(),
                  d = col % g.headSize();
        float sum = 0.0f;
        if (which == 0) {
            for (int j = 0; j <= t; ++j)
                sum += dscores[g.squareAt(b, h, t, j)] * qkv[g.qkvAt(b, j, 1, h, d)];
        } else if (which == 1) {
            for (int i = t; i < g.time; ++i)
                sum += dscores[g.squareAt(b, h, i, t)] * qkv[g.qkvAt(b, i, 0, h, d)];
        } else {
            for (int i = t; i < g.time; ++i)
                sum += att[g.squareAt(b, h, i, t)] *
                       dout[(static_cast<size_t>(b) * g.time + i) * g.channels +
                            static_cast<size_t>(h) * g.headSize() + d];
        }
        dqkv[idx] = sum;
    }
};

struct AddInto {
    float* y;
    const float* x;
    PLAB_HOST_DEVICE void operator()(size_t i) const { y[i] += x[i]; }
};

// One row of the next-byte cross-entropy, as nn/transformer/sequence_cross_entropy.cpp (its
// polynomial e^x): sum = the row's loss, sumSq = 1 when the first largest logit is the target;
// dlogits = (softmax - onehot) / rows.
struct SequenceCrossEntropyRow {
    float* dlogits;
    const float* logits;
    const std::uint8_t* targets;
    int rows, vocab;
    PLAB_HOST_DEVICE Reduction operator()(size_t r) const {
        const float* z = logits + r * static_cast<size_t>(vocab);
        float* d = dlogits + r * static_cast<size_t>(vocab);
        int argmax = 0;
        float top = z[0];
        for (int c = 1; c < vocab; ++c)
            if (z[c] > top) {
                top = z[c];
                argmax = c;
            }
        float sum = 0.0f;
        for (int c = 0; c < vocab; ++c) {
            d[c] = expPolynomial(z[c] - top);
            sum += d[c];
        }
        const int target = targets[r];
        Reduction result;
        result.sum = static_cast<double>(logf(sum)) + top - z[target];
        result.sumSq = argmax == target ? 1.0 : 0.0;
        const float perRow = 1.0f / static_cast<float>(rows);
        const float factor = perRow / sum;
        for (int c = 0; c < vocab; ++c)
            d[c] *= factor;
        d[target] -= perRow;
        return result;
    }
};

// amax[k] = the largest |x[r][k]| over the rows; one thread per channel.
struct ChannelAmax {
    float* amax;
    const float* x;
    int rows, channels;
    PLAB_HOST_DEVICE void operator()(size_t k) const {
        float m = 0.0f;
        for (int r = 0; r < rows; ++r) {
            const float a = fabsf(x[static_cast<size_t>(r) * channels + k]);
            m = a > m ? a : m;
        }
        amax[k] = m;
    }
};

} // namespace plab::kernels
