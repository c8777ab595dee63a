// NVIDIA's host-side conversions (cuda_fp16.h ... cuda_fp4.h) as "float -> code" functions, one
// for each golden conversion (golden_conversions.h). Header-only use: no GPU, no CUDA libraries.
#pragma once

#include "golden_conversions.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace plab::test {

using NvidiaConvert = std::uint32_t (*)(float);

struct NvidiaConversion : GoldenConversion {
    NvidiaConvert convert;
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

// E8M0 round-to-nearest from NVIDIA's two directed conversions: |x| lies between the
// round-toward-zero code and the round-up one (equal when x is a power of two or clamped at an
// end); the nearer wins, a tie goes to the even code. The round-up code past 2^127 is NaN's 0xFF
// (no saturation), whose place in the rounding is 2^128.
inline std::uint32_t e8m0Nearest(float x, __nv_saturation_t saturation) {
    const std::uint32_t down = __nv_cvt_float_to_e8m0(x, saturation, cudaRoundZero);
    const std::uint32_t up = __nv_cvt_float_to_e8m0(x, saturation, cudaRoundPosInf);
    if (down == up || std::isnan(x))
        return down;
    const double magnitude = std::fabs(static_cast<double>(x));
    const double below = magnitude - std::ldexp(1.0, static_cast<int>(down) - 127);
    const double above = std::ldexp(1.0, static_cast<int>(down) + 1 - 127) - magnitude;
    if (below != above)
        return below < above ? down : up;
    return down % 2 == 0 ? down : up;
}

inline NvidiaConvert nvidiaConverter(std::string_view name) {
    struct Entry {
        std::string_view name;
        NvidiaConvert convert;
    };
    static const Entry kEntries[] = {
        {"fp16-rn", [](float x) { return halfBits(__float2half_rn(x)); }},
        {"fp16-rz", [](float x) { return halfBits(__float2half_rz(x)); }},
        {"bf16-rn", [](float x) { return bf16Bits(__float2bfloat16_rn(x)); }},
        {"bf16-rz", [](float x) { return bf16Bits(__float2bfloat16_rz(x)); }},
        {"e4m3-satfinite",
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
         }},
        {"e4m3-nosat",
         [](float x) -> std::uint32_t { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3); }},
        {"e5m2-satfinite",
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
         }},
        {"e5m2-nosat",
         [](float x) -> std::uint32_t { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2); }},
        {"e3m2-rn",
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp6(x, __NV_E3M2, cudaRoundNearest);
         }},
        {"e2m3-rn",
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp6(x, __NV_E2M3, cudaRoundNearest);
         }},
        {"e2m1-rn",
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
         }},
        {"e8m0-rz-satfinite",
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero);
         }},
        {"e8m0-rz-nosat",
         [](float x) -> std::uint32_t {
             return __nv_cvt_float_to_e8m0(x, __NV_NOSAT, cudaRoundZero);
         }},
        {"e8m0-rn-satfinite", [](float x) { return e8m0Nearest(x, __NV_SATFINITE); }},
        {"e8m0-rn-nosat", [](float x) { return e8m0Nearest(x, __NV_NOSAT); }},
    };
    for (const Entry& e : kEntries)
        if (e.name == name)
            return e.convert;
    throw std::invalid_argument("no NVIDIA conversion named " + std::string(name));
}

inline std::vector<NvidiaConversion> nvidiaConversions() {
    std::vector<NvidiaConversion> all;
    for (const GoldenConversion& g : goldenConversions())
        all.push_back({g, nvidiaConverter(g.name)});
    return all;
}

} // namespace plab::test
