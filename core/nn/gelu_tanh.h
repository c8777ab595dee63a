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

// e^x for x in [-87, 87] from +, *, and the float's bits, so that loops over it vectorise (the C
// library's tanhf and expf are calls per element, most of the GPT's time): x = n ln2 + r with
// |r| <= ln2 / 2, e^r by its Taylor series to r^7 (relative error below 1e-7), times 2^n.
inline PLAB_HOST_DEVICE float expPolynomial(float x) {
    const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f; // round(x / ln2)
    const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;   // ln2 in two parts
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int bits;
    const int exponent = static_cast<int>(n) + 127;
    bits = exponent << 23;
    float scale;
    __builtin_memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// tanh(u) = sign(u) (1 - 2 / (e^{2|u|} + 1)), |u| capped at 9 (tanh is 1 in float beyond):
// absolute error about 1e-7, which is what GELU's 1 + tanh(u) needs.
// The cap and the sign are taken on the bits (integer min, sign bit copied): a float compare
// would be a branch GCC keeps (it may trap), and the loop would not vectorise.
inline PLAB_HOST_DEVICE float tanhPolynomial(float u) {
    unsigned int bits;
    __builtin_memcpy(&bits, &u, sizeof bits);
    const unsigned int sign = bits & 0x80000000u, magnitude = bits & 0x7FFFFFFFu;
    const unsigned int capped = magnitude < 0x41100000u ? magnitude : 0x41100000u; // 9.0f
    float a;
    __builtin_memcpy(&a, &capped, sizeof a);
    const float t = 1.0f - 2.0f / (expPolynomial(2.0f * a) + 1.0f);
    unsigned int tBits;
    __builtin_memcpy(&tBits, &t, sizeof tBits);
    tBits |= sign;
    float result;
    __builtin_memcpy(&result, &tBits, sizeof result);
    return result;
}

inline PLAB_HOST_DEVICE float geluTanh(float x) {
    return 0.5f * x * (1.0f + tanhPolynomial(kGeluTanhScale * (x + kGeluTanhCube * x * x * x)));
}

inline PLAB_HOST_DEVICE float geluTanhDerivative(float x) {
    const float t = tanhPolynomial(kGeluTanhScale * (x + kGeluTanhCube * x * x * x));
    const float du = kGeluTanhScale * (1.0f + 3.0f * kGeluTanhCube * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

} // namespace plab
