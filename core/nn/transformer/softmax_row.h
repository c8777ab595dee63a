// One row of the causal attention's softmax, written once for the CPU layer (causal_attention.cpp,
// which clones it for AVX2 / AVX-512) and the GPU engine's kernel body: the same arithmetic, so
// the engines' probabilities differ only by their scores' summation order.
#pragma once

#include "nn/gelu_tanh.h" // expPolynomial
#include "nn/lane_sum.h"
#include "numerics/philox.h" // PLAB_HOST_DEVICE

namespace plab::transformer {

// p[0, live): scaled scores in, probabilities out (e^(s - max s) over their sum, the sum in
// laneSum's fixed order); p[live, time): the masked future, zeros.
inline PLAB_HOST_DEVICE void causalSoftmaxRow(float* p, int live, int time) {
    float top = p[0];
    for (int j = 1; j < live; ++j)
        top = p[j] > top ? p[j] : top;
    for (int j = 0; j < live; ++j)
        p[j] = expPolynomial(p[j] - top);
    const float inv = 1.0f / laneSum(p, static_cast<std::size_t>(live));
    for (int j = 0; j < live; ++j)
        p[j] *= inv;
    for (int j = live; j < time; ++j)
        p[j] = 0.0f;
}

// Its backward for one row: ds[0, live) holds dP = dO . v^T and becomes dS = P (dP - sum P dP)
// * scale (the softmax's Jacobian and the scores' 1 / sqrt(hs)), the sum in laneDot's order;
// ds[live, time): zeros (P is 0 there).
inline PLAB_HOST_DEVICE void causalSoftmaxBackwardRow(float* ds, const float* p, int live, int time,
                                                      float scale) {
    const float dot = laneDot(p, ds, static_cast<std::size_t>(live));
    for (int j = 0; j < live; ++j)
        ds[j] = p[j] * (ds[j] - dot) * scale;
    for (int j = live; j < time; ++j)
        ds[j] = 0.0f;
}

} // namespace plab::transformer
