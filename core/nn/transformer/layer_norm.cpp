#include "nn/transformer/layer_norm.h"

#include "util/vector_clones.h"

#include <cmath>
#include <cstddef>

namespace plab::transformer {

// Cloned for AVX2 / AVX-512; the file is compiled without fused multiply-adds (the same bits on
// every CPU).
PLAB_VECTOR_CLONES
void layerNormForward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                      const float* bias, int rows, int channels) {
    const auto c = static_cast<std::size_t>(channels);
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r)
        layerNormRow(out + r * c, in + r * c, weight, bias, c, mean + r, rstd + r);
}

// The input gradient by layer_norm_row.h; dweight += norm * dout, dbias += dout.
PLAB_VECTOR_CLONES
void layerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                       const float* weight, const float* mean, const float* rstd, int rows,
                       int channels, bool accumulate) {
    const auto c = static_cast<std::size_t>(channels);
    for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
        const float* x = in + r * c;
        const float* d = dout + r * c;
        const float m = mean[r], s = rstd[r];
        for (std::size_t i = 0; i < c; ++i) {
            dbias[i] += d[i];
            dweight[i] += (x[i] - m) * s * d[i];
        }
        layerNormInputGradientRow(din + r * c, d, x, weight, m, s, c, accumulate);
    }
}

} // namespace plab::transformer
