// The scale of one block of a block-scaled format, written once for the CPU quantiser and the
// GPU engine's kernel bodies (plain C++, __host__ __device__ under nvcc). Three rules:
//
//   MX (OCP Microscaling), E8M0 scale 2^X, elements x * 2^-X, dequantised x_q * 2^X:
//     floor (OCP):  X = floor(log2 amax_b) - emax_elem, clamped to [-127, 127];
//     ceil (Transformer Engine's MXFP8 cast): y = amax_b * (1.0f / max_elem) in FP32; the E8M0
//       code is y's exponent field, plus one when any significand bit is set (a subnormal y of
//       at most 2^-127 keeps code 0), at most 254: y rounded up to a power of two, so no element
//       saturates. X = code - 127.
//     amax_b is the block's largest finite |x| (an Inf element saturates and is counted).
//   NVFP4 (Transformer Engine, core_nvfp4.cuh), E4M3 block scale q_b and one FP32 tensor scale:
//     s_enc = min(448 * max_elem / amax_t, FLT_MAX), or 1 when amax_t is 0 or s_enc is 0;
//     q_b = e4m3_rne_saturate(amax_b * (s_enc * (1.0f / max_elem)));
//     r_b = min(1 / (float(q_b) * (1 / s_enc)), FLT_MAX); elements x * r_b;
//     dequantised (x_q * float(q_b)) / s_enc. A block whose q_b is 0 is cast from x * 0: its
//     elements are the format's zero, of x's sign where the format has a -0, +0 in an fnuz
//     format. (Transformer Engine's r_b = FLT_MAX gives the same zeros for E2M1; for an fnuz
//     format it would give -max * 0 = -0, a zero the element format does not have.)
//     amax_t and amax_b are over non-NaN |x| (Inf included). max_elem is 6 for E2M1.
//     "4/6" (optional): the block is also tried with max_elem 4 in q_b's formula, and the
//     candidate whose dequantised block has the smaller squared error is kept (6 on a tie).
//   FP32 blocks (DeepSeek-V3 / Transformer Engine's blockwise FP8): scale = max_elem / amax_b in
//     FP32 (1 when amax_b is 0; FLT_MAX when the quotient overflows; at least 2^-127, whose
//     inverse is still finite, when it underflows past that), optionally rounded down to
//     a power of two (so the stored scale_inv = 1 / scale is amax_b / max_elem rounded up);
//     elements x * scale, dequantised x_q * scale_inv. amax_b is the block's largest finite |x|.
//
// Every rule is written as: elements x * toElement, then the element cast, then
// (x_q * decoded) / tensorScale, with tensorScale = s_enc for NVFP4 and 1 otherwise (dividing by
// 1 is exact, so MX and FP32 blocks lose nothing to the common form).
#pragma once

#include "numerics/quantize_element.h"

#include <cfloat>
#include <cstdint>

namespace plab::blocks {

enum class ScaleKind : int { MxFloor = 0, MxCeil = 1, Nvfp4 = 2, Fp32 = 3 };

// What a block's scale needs, flattened so that a kernel takes it by value.
struct ScaleRule {
    int kind = 0;            // static_cast<int>(ScaleKind)
    int emaxElement = 0;     // MX floor: floor(log2(element max))
    float maxElement = 0;    // the element format's max finite
    bool powerOfTwo = false; // FP32 blocks: scale rounded down to a power of two
};

struct BlockScale {
    float toElement = 1.0f; // x -> x * toElement before the element cast
    float decoded = 1.0f;   // the block scale as stored: 2^X, E4M3 q_b, or FP32 scale_inv
};

inline PLAB_HOST_DEVICE float nvfp4TensorScale(float amaxTensor, float maxElement) {
    float s = 448.0f * maxElement / amaxTensor;
    s = s < FLT_MAX ? s : FLT_MAX;
    return (amaxTensor == 0.0f || s == 0.0f) ? 1.0f : s;
}

// v (>= 0, not NaN) to OCP E4M3, nearest-even, saturating, on the bits: NVFP4's block scale
// (a test holds it to the reference quantiser over a sweep of float32 values).
inline PLAB_HOST_DEVICE float e4m3SaturatingNearestEven(float v) {
    if (v >= 448.0f) // 448 and past it (464, the midpoint to 480, ties to 448's even code)
        return 448.0f;
    if (v >= 0.015625f) { // normal, 2^-6 and up: keep 3 mantissa bits, the carry runs up
        const std::uint32_t u = element::bitsOf(v);
        return element::floatOf((u + 0x7FFFFu + ((u >> 20) & 1u)) & 0xFFF00000u);
    }
    // Subnormal: multiples of 2^-9, rounded to nearest-even by the float adder (v * 512 < 8).
    const float k = (v * 512.0f + 12582912.0f) - 12582912.0f; // 12582912 = 1.5 * 2^23
    return k * 0.001953125f;
}

inline PLAB_HOST_DEVICE BlockScale nvfp4BlockScale(float amaxBlock, float tensorScale,
                                                   float target) {
    const float q = e4m3SaturatingNearestEven(amaxBlock * (tensorScale * (1.0f / target)));
    float r = 1.0f / (q * (1.0f / tensorScale));
    r = r < FLT_MAX ? r : FLT_MAX;
    return {q == 0.0f ? 0.0f : r, q}; // q_b = 0: the elements are cast from x * 0 (above)
}

// 2^x as a float, x in [-149, 127], from the bits (ldexpf is a library call per block).
inline PLAB_HOST_DEVICE float pow2f(int x) {
    return x >= -126 ? element::floatOf(static_cast<std::uint32_t>(x + 127) << 23)
                     : element::floatOf(1u << (x + 149));
}

// floor(log2 v) of a finite v > 0, from the bits (subnormals included).
inline PLAB_HOST_DEVICE int floorLog2(float v) {
    const std::uint32_t bits = element::bitsOf(v);
    const int field = static_cast<int>(bits >> 23);
    if (field > 0)
        return field - 127;
    int top = 22; // a subnormal: the highest set significand bit
    while (((bits >> top) & 1u) == 0u)
        --top;
    return top - 149;
}

// The E8M0 exponent X of a block (see above); finiteAmax is the block's largest finite |x|.
inline PLAB_HOST_DEVICE int mxExponent(const ScaleRule& rule, float finiteAmax) {
    if (rule.kind == static_cast<int>(ScaleKind::MxCeil)) {
        const float y = finiteAmax * (1.0f / rule.maxElement);
        const std::uint32_t bits = element::bitsOf(y);
        const int field = static_cast<int>((bits >> 23) & 0xFFu);
        const bool fraction = (bits & 0x7FFFFFu) != 0;
        // 0x00400000: 2^-127, a subnormal
        int code = field == 0 ? (bits > 0x00400000u ? 1 : 0) : field + (fraction ? 1 : 0);
        code = code > 254 ? 254 : code;
        return code - 127;
    }
    if (!(finiteAmax > 0.0f))
        return -127;
    const int e = floorLog2(finiteAmax) - rule.emaxElement;
    return e < -127 ? -127 : (e > 127 ? 127 : e);
}

// The smallest FP32 block scale: its inverse 2^127 is still a finite float32. A block whose
// max_elem / amax_b falls below it (an element format with a tiny max against values near
// float32's max) is scaled by it and saturates, counted, instead of dequantising by Inf.
inline constexpr float kMinFp32BlockScale = 0x1p-127f;

inline PLAB_HOST_DEVICE BlockScale fp32BlockScale(const ScaleRule& rule, float finiteAmax) {
    float scale = 1.0f;
    if (finiteAmax > 0.0f) {
        scale = rule.maxElement / finiteAmax;
        scale = scale < FLT_MAX ? scale : FLT_MAX;
        scale = scale > kMinFp32BlockScale ? scale : kMinFp32BlockScale;
        // Rounded down to a power of two on the bits: clearing the significand of a normal
        // scale; [2^-127, 2^-126) is subnormal, and its power of two below is 2^-127.
        if (rule.powerOfTwo)
            scale = scale >= 0x1p-126f ? element::floatOf(element::bitsOf(scale) & 0xFF800000u)
                                       : kMinFp32BlockScale;
    }
    return {scale, 1.0f / scale};
}

// The scale of a block from its amaxes: amax over non-NaN |x| (NVFP4) and over finite |x|
// (MX, FP32). tensorScale is NVFP4's s_enc (ignored by the others); target its max_elem.
inline PLAB_HOST_DEVICE BlockScale blockScale(const ScaleRule& rule, float amax, float finiteAmax,
                                              float tensorScale, float target) {
    switch (rule.kind) {
    case static_cast<int>(ScaleKind::Nvfp4):
        return nvfp4BlockScale(amax, tensorScale, target);
    case static_cast<int>(ScaleKind::Fp32):
        return fp32BlockScale(rule, finiteAmax);
    default: {
        const int x = mxExponent(rule, finiteAmax);
        return {pow2f(-x), pow2f(x)};
    }
    }
}

inline PLAB_HOST_DEVICE float dequantize(float elementValue, const BlockScale& s,
                                         float tensorScale) {
    return (elementValue * s.decoded) / tensorScale;
}

} // namespace plab::blocks
