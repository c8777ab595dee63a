// NVIDIA's host-side conversions (cuda_fp16.h ... cuda_fp4.h) wrapped as "float -> code" functions
// beside the QuantConfig that should reproduce them. Header-only use: no GPU, no CUDA libraries.
#pragma once

#include "numerics/rounding.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace plab::test {

struct NvidiaConversion {
    std::string name;
    QuantConfig config;
    std::uint32_t (*convert)(float);
    bool positiveOnly; // E8M0: NVIDIA converts |x|, Precision Lab treats negatives as out of range
};

inline std::uint32_t halfBits(__half h) {
    std::uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
}
inline std::uint32_t bf16Bits(__nv_bfloat16 h) {
    std::uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
}

inline QuantConfig config(const char* format, Rounding rounding, Overflow overflow) {
    QuantConfig c = QuantConfig::forFormat(parseFormat(format), rounding);
    c.overflow = overflow;
    return c;
}

inline std::vector<NvidiaConversion> nvidiaConversions() {
    using R = Rounding;
    using O = Overflow;
    return {
        {"fp16 rn", config("fp16", R::NearestEven, O::Inf),
         [](float x) { return halfBits(__float2half_rn(x)); }, false},
        {"fp16 rz", config("fp16", R::TowardZero, O::Inf),
         [](float x) { return halfBits(__float2half_rz(x)); }, false},
        {"bf16 rn", config("bf16", R::NearestEven, O::Inf),
         [](float x) { return bf16Bits(__float2bfloat16_rn(x)); }, false},
        {"bf16 rz", config("bf16", R::TowardZero, O::Inf),
         [](float x) { return bf16Bits(__float2bfloat16_rz(x)); }, false},
        {"e4m3 satfinite", config("fp8-e4m3", R::NearestEven, O::Saturate),
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
         },
         false},
        {"e4m3 nosat", config("fp8-e4m3", R::NearestEven, O::Inf),
         [](float x) -> std::uint32_t { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3); },
         false},
        {"e5m2 satfinite", config("fp8-e5m2", R::NearestEven, O::Saturate),
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
         },
         false},
        {"e5m2 nosat", config("fp8-e5m2", R::NearestEven, O::Inf),
         [](float x) -> std::uint32_t { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2); },
         false},
        {"e3m2 rn", config("fp6-e3m2", R::NearestEven, O::Saturate),
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest);
         },
         false},
        {"e2m3 rn", config("fp6-e2m3", R::NearestEven, O::Saturate),
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest);
         },
         false},
        {"e2m1 rn", config("fp4-e2m1", R::NearestEven, O::Saturate),
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
         },
         false},
        {"e8m0 rz satfinite", config("e8m0", R::TowardZero, O::Saturate),
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero);
         },
         true},
        {"e8m0 rz nosat", config("e8m0", R::TowardZero, O::Inf),
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_e8m0(x, __NV_NOSAT, cudaRoundZero);
         },
         true},
    };
}

} // namespace plab::test
