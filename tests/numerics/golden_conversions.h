// The conversions whose NVIDIA results are kept as golden tables (tests/numerics/golden/): each
// NVIDIA host conversion we reproduce, named, with the QuantConfig that must give its codes.
// Plain C++, no CUDA header: the tables are checked on every machine; nvidia_reference.h adds
// NVIDIA's functions where the headers exist.
#pragma once

#include "numerics/rounding.h"

#include <string>
#include <vector>

namespace plab::test {

struct GoldenConversion {
    std::string name; // also the table's file name: golden/<name>.codes.z
    QuantConfig config;
    bool positiveOnly; // E8M0: NVIDIA converts |x|, Precision Lab treats negatives as out of range
};

inline QuantConfig goldenConfig(const char* format, Rounding rounding, Overflow overflow) {
    QuantConfig c = QuantConfig::forFormat(parseFormat(format), rounding);
    c.overflow = overflow;
    return c;
}

// Every format, rounding and overflow mode that both NVIDIA's host headers and Precision Lab
// offer. The headers' round-up/round-down modes (fp16, bf16) have no Precision Lab rounding to
// compare with. E8M0 round-nearest has no NVIDIA function of its own: its oracle is the nearer
// of NVIDIA's round-toward-zero and round-up codes (nvidia_reference.h), ties to the even code.
inline std::vector<GoldenConversion> goldenConversions() {
    using R = Rounding;
    using O = Overflow;
    return {
        {"fp16-rn", goldenConfig("fp16", R::NearestEven, O::Inf), false},
        {"fp16-rz", goldenConfig("fp16", R::TowardZero, O::Inf), false},
        {"bf16-rn", goldenConfig("bf16", R::NearestEven, O::Inf), false},
        {"bf16-rz", goldenConfig("bf16", R::TowardZero, O::Inf), false},
        {"e4m3-satfinite", goldenConfig("fp8-e4m3", R::NearestEven, O::Saturate), false},
        {"e4m3-nosat", goldenConfig("fp8-e4m3", R::NearestEven, O::Inf), false},
        {"e5m2-satfinite", goldenConfig("fp8-e5m2", R::NearestEven, O::Saturate), false},
        {"e5m2-nosat", goldenConfig("fp8-e5m2", R::NearestEven, O::Inf), false},
        {"e3m2-rn", goldenConfig("fp6-e3m2", R::NearestEven, O::Saturate), false},
        {"e2m3-rn", goldenConfig("fp6-e2m3", R::NearestEven, O::Saturate), false},
        {"e2m1-rn", goldenConfig("fp4-e2m1", R::NearestEven, O::Saturate), false},
        {"e8m0-rz-satfinite", goldenConfig("e8m0", R::TowardZero, O::Saturate), true},
        {"e8m0-rz-nosat", goldenConfig("e8m0", R::TowardZero, O::Inf), true},
        {"e8m0-rn-satfinite", goldenConfig("e8m0", R::NearestEven, O::Saturate), true},
        {"e8m0-rn-nosat", goldenConfig("e8m0", R::NearestEven, O::Inf), true},
    };
}

} // namespace plab::test
