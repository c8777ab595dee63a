#include "nn/transformer/layer_norm.h"

#include <cmath>
#include <cstddef>

namespace plab::transformer {

void layerNormForward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                      const float* bias, int rows, int channels) {
    const auto c = static_cast<std::size_t>(channels);
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
        const float* x = in + r * c;
        float m = 0.0f;
        for (std::size_t i = 0; i < c; ++i)
            m += x[i];
        m /= static_cast<float>(c);
        float v = 0.0f; // biased variance, as PyTorch normalises
        for (std::size_t i = 0; i < c; ++i)
            v += (x[i] - m) * (x[i] - m);
        v /= static_cast<float>(c);
        const float s = 1.0f / std::sqrt(v + kLayerNormEps);
        float* o = out + r * c;
        for (std::size_t i = 0; i < c; ++i)
            o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[r] = m;
        rstd[r] = s;
    }
}

// With norm = (x - mean) * rstd and dnorm = dout * weight:
//   din = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)).
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
