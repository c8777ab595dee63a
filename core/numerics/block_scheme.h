// BlockScheme: how a block-scaled format groups and scales its elements (OCP MX, NVFP4, FP32
// blocks), and the named block formats the CLI and the what-if table list. The arithmetic of a
// block's scale is numerics/block_scale.h; the quantiser that applies it, block_quantizer.h.
#pragma once

#include "numerics/block_scale.h"
#include "numerics/format_spec.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

enum class BlockScaleKind { Mx, Nvfp4, Fp32 };
enum class ScaleRounding { Floor, Ceil }; // MX only: OCP's floor or Transformer Engine's ceil

struct BlockScheme {
    BlockScaleKind kind = BlockScaleKind::Mx;
    int blockSize = 32; // elements per block along a row (or tile side)
    ScaleRounding scaleRounding = ScaleRounding::Floor; // MX
    bool powerOfTwoScales = false;                      // FP32 blocks
    bool fourOverSix = false; // NVFP4: also try amax -> 4, keep the better
    bool operator==(const BlockScheme&) const = default;
};

// The flattened rule block_scale.h's functions take, for elements of `element`.
blocks::ScaleRule makeScaleRule(const BlockScheme& scheme, const FormatSpec& element);

// "e8m0", "e4m3 (+ fp32 per tensor)" or "fp32": what each block stores.
std::string scaleFormatName(const BlockScheme& scheme);
std::string_view toString(BlockScaleKind kind);    // "mx", "nvfp4", "fp32-blocks"
std::string_view toString(ScaleRounding rounding); // "floor", "ceil"
// Throw FormatError naming the text and the accepted spellings.
ScaleRounding parseScaleRounding(std::string_view text);

// A named block format: an element format and a scheme, e.g. nvfp4 = E2M1 in blocks of 16.
struct BlockFormat {
    std::string name;
    FormatSpec element;
    BlockScheme scheme;
    std::string description;
};
const std::vector<BlockFormat>& blockFormats(); // nvfp4, fp8-block128, mxfp8-e4m3, ...
// nullptr when the name is not a block format.
const BlockFormat* findBlockFormat(std::string_view name);

} // namespace plab
