// `quantize --format nvfp4|fp8-block128|mxfp8-e4m3|...`: stdin as one 1-D tensor through a block
// format (blocks of consecutive values; NVFP4's tensor scale from the whole input). Text mode
// prints each block's scale and each value's dequantised value, element class and error;
// --binary writes the dequantised float32 values.
#pragma once

#include "numerics/block_scheme.h"
#include "numerics/rounding.h"

#include <cstdint>
#include <vector>

namespace plab::cli {

struct BlockQuantizeArgs {
    BlockFormat format;
    Rounding rounding = Rounding::NearestEven;
    std::uint64_t seed = 0;
};

int quantizeBlocksText(const BlockQuantizeArgs& args, const std::vector<float>& values);
// Reads all of stdin (little-endian float32), then writes the dequantised values.
int quantizeBlocksBinary(const BlockQuantizeArgs& args);

} // namespace plab::cli
