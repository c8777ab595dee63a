// Block schemes and the named block formats.
#include "numerics/block_scheme.h"

#include <cmath>

namespace plab {

blocks::ScaleRule makeScaleRule(const BlockScheme& scheme, const FormatSpec& element) {
    blocks::ScaleRule r;
    switch (scheme.kind) {
    case BlockScaleKind::Mx:
        r.kind = static_cast<int>(scheme.scaleRounding == ScaleRounding::Ceil
                                      ? blocks::ScaleKind::MxCeil
                                      : blocks::ScaleKind::MxFloor);
        break;
    case BlockScaleKind::Nvfp4:
        r.kind = static_cast<int>(blocks::ScaleKind::Nvfp4);
        break;
    case BlockScaleKind::Fp32:
        r.kind = static_cast<int>(blocks::ScaleKind::Fp32);
        break;
    }
    int exponent = 0;
    std::frexp(element.maxFinite(), &exponent);
    r.emaxElement = exponent - 1;
    r.maxElement = static_cast<float>(element.maxFinite());
    r.powerOfTwo = scheme.powerOfTwoScales;
    return r;
}

std::string scaleFormatName(const BlockScheme& scheme) {
    switch (scheme.kind) {
    case BlockScaleKind::Mx:
        return "e8m0";
    case BlockScaleKind::Nvfp4:
        return "e4m3 (+ fp32 per tensor)";
    case BlockScaleKind::Fp32:
        return scheme.powerOfTwoScales ? "fp32 (power of two)" : "fp32";
    }
    return "?";
}

std::string_view toString(BlockScaleKind kind) {
    switch (kind) {
    case BlockScaleKind::Mx:
        return "mx";
    case BlockScaleKind::Nvfp4:
        return "nvfp4";
    case BlockScaleKind::Fp32:
        return "fp32-blocks";
    }
    return "?";
}

std::string_view toString(ScaleRounding rounding) {
    return rounding == ScaleRounding::Ceil ? "ceil" : "floor";
}

ScaleRounding parseScaleRounding(std::string_view text) {
    if (text == "floor")
        return ScaleRounding::Floor;
    if (text == "ceil")
        return ScaleRounding::Ceil;
    throw FormatError("scale rounding \"" + std::string(text) + "\": expected floor or ceil");
}

const std::vector<BlockFormat>& blockFormats() {
    auto mx = [](const char* name, const char* element, const char* what) {
        return BlockFormat{name, parseFormat(element), {BlockScaleKind::Mx, 32}, what};
    };
    static const std::vector<BlockFormat> list = {
        {"nvfp4",
         parseFormat("fp4-e2m1"),
         {BlockScaleKind::Nvfp4, 16},
         "NVIDIA NVFP4: E2M1 in blocks of 16 with an E4M3 scale, one FP32 scale per tensor"},
        {"fp8-block128",
         parseFormat("fp8-e4m3"),
         {BlockScaleKind::Fp32, 128},
         "DeepSeek-V3 FP8: E4M3 in blocks of 128 with an FP32 scale amax/448"},
        mx("mxfp8-e4m3", "fp8-e4m3", "OCP MXFP8: E4M3 in blocks of 32 with an E8M0 scale"),
        mx("mxfp8-e5m2", "fp8-e5m2", "OCP MXFP8: E5M2 in blocks of 32 with an E8M0 scale"),
        mx("mxfp6-e3m2", "fp6-e3m2", "OCP MXFP6: E3M2 in blocks of 32 with an E8M0 scale"),
        mx("mxfp6-e2m3", "fp6-e2m3", "OCP MXFP6: E2M3 in blocks of 32 with an E8M0 scale"),
        mx("mxfp4", "fp4-e2m1", "OCP MXFP4: E2M1 in blocks of 32 with an E8M0 scale"),
    };
    return list;
}

const BlockFormat* findBlockFormat(std::string_view name) {
    for (const BlockFormat& f : blockFormats())
        if (f.name == name)
            return &f;
    return nullptr;
}

} // namespace plab
