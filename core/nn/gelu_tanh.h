// GELU's tanh approximation (GPT-2; PyTorch's gelu(approximate='tanh')), written once for the
// CPU layers and the GPU engine's kernel bodies (plain C++, __host__ __device__ under nvcc):
//   out = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3);
//   d out/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
#pragma once

#include "numerics/philox.h" // PLAB_HOST_DEVICE

#include <math.h>

namespace plab {

inline constexpr float kGeluTanhScale = 0.7978845608028654f; // sqrt(2 / pi)
inline constexpr float kGeluTanhCube = 0.044715f;

inline PLAB_HOST_DEVICE float geluTanh(float x) {
    return 0.5f * x * (1.0f + tanhf(kGeluTanhScale * (x + kGeluTanhCube * x * x * x)));
}

inline PLAB_HOST_DEVICE float geluTanhDerivative(float x) {
    const float t = tanhf(kGeluTanhScale * (x + kGeluTanhCube * x * x * x));
    const float du = kGeluTanhScale * (1.0f + 3.0f * kGeluTanhCube * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

} // namespace plab
