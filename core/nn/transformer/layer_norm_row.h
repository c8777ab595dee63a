// One row of LayerNorm, written once for the CPU layer (layer_norm.cpp, which clones it for AVX2
// / AVX-512) and the GPU engine's kernel bodies (plain C++, __host__ __device__ under nvcc): the
// same sums in the same order on both.
#pragma once

#include "nn/lane_sum.h"
#include "numerics/philox.h" // PLAB_HOST_DEVICE

#include <cstddef>
#include <math.h>

namespace plab::transformer {

inline constexpr float kLayerNormEps = 1e-5f;

// o = (x - mean) * rstd * weight + bias over c channels (mean and the biased variance of x);
// *mean and *rstd set.
inline PLAB_HOST_DEVICE void layerNormRow(float* o, const float* x, const float* weight,
                                          const float* bias, std::size_t c, float* mean,
                                          float* rstd) {
    const float m = laneSum(x, c) / static_cast<float>(c);
    for (std::size_t i = 0; i < c; ++i)
        o[i] = (x[i] - m) * (x[i] - m);
    const float v = laneSum(o, c) / static_cast<float>(c); // biased, as PyTorch normalises
    const float s = 1.0f / sqrtf(v + kLayerNormEps);
    for (std::size_t i = 0; i < c; ++i)
        o[i] = (x[i] - m) * s * weight[i] + bias[i];
    *mean = m;
    *rstd = s;
}

// With norm = (x - mean) * rstd and dnorm = d * weight:
//   g = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) (+= when accumulate).
inline PLAB_HOST_DEVICE void layerNormInputGradientRow(float* g, const float* d, const float* x,
                                                       const float* weight, float m, float s,
                                                       std::size_t c, bool accumulate) {
    float dnormMean = 0.0f, dnormNormMean = 0.0f;
    for (std::size_t i = 0; i < c; ++i) {
        const float norm = (x[i] - m) * s, dnorm = d[i] * weight[i];
        dnormMean += dnorm;
        dnormNormMean += dnorm * norm;
    }
    dnormMean /= static_cast<float>(c);
    dnormNormMean /= static_cast<float>(c);
    for (std::size_t i = 0; i < c; ++i) {
        const float norm = (x[i] - m) * s, dnorm = d[i] * weight[i];
        const float v = s * (dnorm - dnormMean - norm * dnormNormMean);
        g[i] = accumulate ? g[i] + v : v;
    }
}

} // namespace plab::transformer
