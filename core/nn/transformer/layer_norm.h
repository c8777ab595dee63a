// LayerNorm over the last dimension, a forward/backward pair (PyTorch's nn.LayerNorm, eps 1e-5):
//   out (N, C) = (x - mean) * rstd * weight (C) + bias (C), mean and rstd (N) kept for backward.
#pragma once

#include "nn/transformer/layer_norm_row.h" // kLayerNormEps, the row arithmetic

namespace plab::transformer {

void layerNormForward(float* out, float* mean, float* rstd, const float* in, const float* weight,
                      const float* bias, int rows, int channels);
// din (N, C) = the input gradient (+= when accumulate: the residual stream's gradient);
// dweight and dbias accumulate (+=).
void layerNormBackward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                       const float* weight, const float* mean, const float* rstd, int rows,
                       int channels, bool accumulate);

} // namespace plab::transformer
