// Block-scaled quantisation on the CPU: each block's scale from its amax (block_scale.h), the
// elements scaled into the element format's range, one fused quantise pass over the whole tensor
// (counted as the element format sees the scaled values, as for per-element casts), and the
// dequantisation. On request, per-block statistics (block_stats.h).
#pragma once

#include "numerics/block_kernels.h"
#include "numerics/block_scheme.h"
#include "numerics/block_stats.h"
#include "numerics/quantizer.h"

#include <cstddef>
#include <span>
#include <vector>

namespace plab {

// How a tensor's elements form blocks. The tensor is row-major (rows, cols); blocks run along a
// row (the reduction dimension of the product that reads the tensor), a row's trailing partial
// block being a block of its own; with tiles, square blockSize x blockSize tiles (weights, so
// that forward and the transposed backward read the same quantised values), partial at the
// right and bottom edges.
struct BlockLayout {
    std::size_t rows = 1;
    std::size_t cols = 0; // 0: one row of all the elements (a 1-D tensor)
    bool tiles = false;
};

// The number of blocks of a tensor of n elements.
std::size_t blockCount(const BlockLayout& layout, std::size_t n, int blockSize);

struct BlockQuantizeResult {
    float tensorScale = 1.0f; // NVFP4's s_enc; 1 for the others
    // NVFP4: the input's largest non-NaN |x| (Inf included) that s_enc came from; -1 for the
    // others, which take no tensor amax.
    float inputAmax = -1.0f;
};

// What quantizeBlocks leaves in blocksOut.
enum class BlockRecords {
    All,        // every block's facts, counts included
    ScalesOnly, // without statistics only: the amaxes and scales, counts 0 (nothing counted)
    // Nothing the caller reads (the engine's casts): blocksOut is working memory, and where the
    // passes allow (blocks::fusesFactsAndScale) each task's blocks stay in a cache-sized buffer
    // of the thread's own, so that a tensor larger than the caches sends no block facts through
    // memory. Without statistics nothing is counted, as with ScalesOnly.
    Scratch,
};

// out <- the block-scaled cast of in (out may be in). The element quantiser should saturate (a
// scale chosen to fill the range must clip, not overflow). blockStats, when given, gets every
// block added. blocksOut receives each block's facts (scales included) as `records` says. The
// values are the same whatever it says. Throws std::invalid_argument when the sizes or the
// layout do not fit, or for ScalesOnly with statistics.
BlockQuantizeResult quantizeBlocks(const Quantizer& element, const BlockScheme& scheme,
                                   std::span<const float> in, std::span<float> out,
                                   const BlockLayout& layout, QuantStats* stats,
                                   BlockStats* blockStats, const QuantizeOptions& options,
                                   std::vector<BlockInfo>& blocksOut,
                                   BlockRecords records = BlockRecords::All);

// The pieces quantizeBlocks is made of, for the GPU engine to run the same passes: the blocks
// of a layout (throws std::invalid_argument as quantizeBlocks does), the scale pass's body, and
// the blocks' facts folded into the statistics.
blocks::Geometry blockGeometry(const BlockLayout& layout, std::size_t n, int blockSize);
blocks::ScaleBlocks scaleBlocksBody(const Quantizer& element, const BlockScheme& scheme,
                                    const float* in, float* out, BlockInfo* info,
                                    const blocks::Geometry& geometry, float tensorScale,
                                    const QuantizeOptions& options);
void foldBlockFacts(std::span<const BlockInfo> blocks, const BlockScheme& scheme, QuantStats* stats,
                    BlockStats* blockStats);
// foldBlockFacts in two parts, for callers that fold blocks a chunk at a time: the blocks into
// blockStats (when given), returning the nonzero inputs of NVFP4 blocks whose scale was 0 (cast
// as zeros: flushed, though the element cast counted them as zeros); and that count moved from
// stats' zeros to its underflows.
std::uint64_t foldBlockStats(std::span<const BlockInfo> blocks, const BlockScheme& scheme,
                             BlockStats* blockStats);
void countZeroScaleFlushes(QuantStats* stats, std::uint64_t flushed);

} // namespace plab
