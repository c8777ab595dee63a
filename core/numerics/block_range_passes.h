// The CPU's block passes over a range of blocks [first, last): the per-block bodies of
// block_kernels.h in order; on a CPU with AVX-512, 16 blocks at a time where blocks are whole
// 1-D runs of a multiple of 16 elements (their folds done together, block_lanes.h), with AVX2
// alone 8 at a time in the fused pass and the dequantising. The GPU
// engine runs the same bodies one thread per block; results are the same bits.
#pragma once

#include "numerics/block_kernels.h"

#include <cstddef>
#include <cstdint>

namespace plab::blocks {

// Each block's amaxes, smallest nonzero and nonzero count into info (findFacts).
void findFactsRange(const ScaleBlocks& body, std::size_t first, std::size_t last);
// Each block's scale (chooseScale; facts first), then its elements scaled into out and the
// clipped ones counted (applyScale).
void scaleRange(const ScaleBlocks& body, std::size_t first, std::size_t last);
// Whether factsAndScaleRange fuses the two passes: the CPU runs the 16- or 8-block groups, whole
// 1-D blocks of a multiple of 16 elements, no per-block trial (4/6), saturated elements counted
// without random words.
bool fusesFactsAndScale(const ScaleBlocks& body);
// findFactsRange then scaleRange, in one pass over each group of 16 (or 8) blocks where
// fusesFactsAndScale (the same results).
void factsAndScaleRange(const ScaleBlocks& body, std::size_t first, std::size_t last);
// Largest non-NaN |x| of in[0, n) as float bits (Inf included): NVFP4's tensor amax, which
// the blocks' facts would give too.
std::uint32_t nonNanAmaxBits(const float* in, std::size_t n);
// Each block dequantised in place, its nonzero outputs counted.
void dequantizeRange(const DequantizeBlocks& body, std::size_t first, std::size_t last);

} // namespace plab::blocks
