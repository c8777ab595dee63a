#include "nn/transformer/layer_norm.h"

#include "util/vector_clones.h"

#include <cmath>
#include <cstddef>

namespace plab::transformer {

namespace {

// Sum of v[0, n) in 8 fixed partial sums (element i into sum i % 8), so that the loop
// vectorises; the same order on every CPU.
inline float laneSum(const float* v, std::size_t n) {
    float lanes[8] = {};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (std::size_t l = 0; l < 8; ++l)
            lanes[l] += v[i + l];
    for (std::size_t l = 0; i < n; ++i, ++l)
        lanes[l] += v[i];
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

} // namespace

// Cloned for AVX2 / AVX-512; the file is compiled without fused multiply-adds (the same bits on
// every CPU).
PLAB_VECTOR_CLONES
void layerNormForward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                      const float* bias, int rows, int channels) {
    const auto c = static_cast<std::size_t>(channels);
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
        const float* x = in + r * c;
        float* o = out + r * c;
        const float m = laneSum(x, c) / static_cast<float>(c);
        for (std::size_t i = 0; i < c; ++i)
            o[i] = (x[i] - m) * (x[i] - m);
        const float v = laneSum(o, c) / static_cast<float>(c); // biased, as PyTorch normalises
        const float s = 1.0f / std::sqrt(v + kLayerNormEps);
        for (std::size_t i = 0; i < c; ++i)
            o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[r] = m;
        rstd[r] = s;
    }
}

// With norm = (x - mean) * rstd and dnorm = dout * weight:
//   din = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)).
PLAB_VECTOR_CLONES
void layerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                       const float* weight, const float* mean, const float* rstd, int rows,
                       int channels, bool accumulate) {
    const auto c = static_cast<std::size_t>(channels);
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
        const float* x = in + r * c;
        const float* d = dout + r * c;
        const float m = mean[r], s = rstd[r];
        float dnormMean = 0.0f, dnormNormMean = 0.0f;
        for (std::size_t i = 0; i < c; ++i) {
            const float norm = (x[i] - m) * s, dnorm = d[i] * weight[i];
            dnormMean += dnorm;
            dnormNormMean += dnorm * norm;
        }
        dnormMean /= static_cast<float>(c);
        dnormNormMean /= static_cast<float>(c);
        float* g = din + r * c;
        for (std::size_t i = 0; i < c; ++i) {
            const float norm = (x[i] - m) * s, dnorm = d[i] * weight[i];
            dbias[i] += d[i];
            dweight[i] += norm * d[i];
            const float v = s * (dnorm - dnormMean - norm * dnormNormMean);
            g[i] = accumulate ? g[i] + v : v;
        }
    }
}

} // namespace plab::transformer
