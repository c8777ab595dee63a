// What a block-scaled cast counts per block, on statistics steps: the distribution of the
// decoded block scales, blocks that flush or saturate wholly or in part, and the dynamic range
// inside blocks (what a block's elements must span against what the element format can).
#pragma once

#include "numerics/block_scale.h"
#include "numerics/quant_stats.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace plab {

// One block's facts from the quantise passes (filled by the CPU quantiser and by the GPU's
// kernel bodies alike, then folded into BlockStats on the host).
struct BlockInfo {
    float amax = 0.0f;            // largest non-NaN |x| (Inf included)
    float finiteAmax = 0.0f;      // largest finite |x|
    float minNonzero = 0.0f;      // smallest finite nonzero |x|; 0 when there is none
    blocks::BlockScale scale;     // the block's scale as the cast used it
    std::uint32_t nonzero = 0;    // nonzero, non-NaN inputs
    std::uint32_t nonzeroOut = 0; // nonzero, non-NaN outputs
    std::uint32_t saturated = 0;  // elements the cast rounded past the element max (clipped)
};

// The CPU's lane passes take 16 BlockInfos as 8-word records and turn them into one vector per
// word (blocks::lanes::wordsOfRecords): the words, in this order.
enum BlockInfoWord : int {
    kWordAmax,
    kWordFiniteAmax,
    kWordMinNonzero,
    kWordToElement,
    kWordDecoded,
    kWordNonzero,
    kWordNonzeroOut,
    kWordSaturated,
};
static_assert(sizeof(BlockInfo) == 32 && offsetof(BlockInfo, finiteAmax) == 4 * kWordFiniteAmax &&
                  offsetof(BlockInfo, minNonzero) == 4 * kWordMinNonzero &&
                  offsetof(BlockInfo, scale) == 4 * kWordToElement &&
                  offsetof(BlockInfo, nonzero) == 4 * kWordNonzero &&
                  offsetof(BlockInfo, nonzeroOut) == 4 * kWordNonzeroOut &&
                  offsetof(BlockInfo, saturated) == 4 * kWordSaturated,
              "BlockInfo is 8 words in BlockInfoWord's order");

// Dynamic-range histogram: log2(amax_b / smallest nonzero |x| in the block) in quarter binades,
// as the distance between the two values' log2 bins (quant_stats.h's layout: exact for powers of
// two, within one bin otherwise); the last bin holds kRangeMaxBinades binades and more.
inline constexpr int kRangeBinsPerBinade = 4;
inline constexpr int kRangeMaxBinades = 64;
inline constexpr int kRangeBins = kRangeMaxBinades * kRangeBinsPerBinade + 1;
int rangeBin(float amax, float minNonzero);

struct BlockStats {
    std::uint64_t blocks = 0;
    std::uint64_t zeroBlocks = 0;          // every input zero (or NaN): nothing to lose
    std::uint64_t flushedBlocks = 0;       // nonzero inputs, every output zero
    std::uint64_t saturatedBlocks = 0;     // at least one element clipped to the element max
    std::uint64_t flushedInLiveBlocks = 0; // elements flushed in blocks that kept something
    std::uint64_t liveElements = 0;        // nonzero inputs of the blocks that kept something
    // Decoded scales of the blocks with a nonzero input, in QuantStats' log2 bin layout.
    std::array<std::uint64_t, kHistBinCount> scaleHistogram{};
    std::array<std::uint64_t, kRangeBins> rangeHistogram{}; // blocks with a nonzero input

    // One block, written as the definitions read (the reference addRange is tested against).
    void add(const BlockInfo& block);
    // add() for each block, in one loop without branches on the blocks' facts (16-element blocks
    // make this per-block work a sixth of a cast's time otherwise). Returns the nonzero inputs
    // of the blocks whose decoded scale is 0 (NVFP4's zero scale flushes them), found in the
    // same loop for the element counts (foldBlockStats).
    std::uint64_t addRange(const BlockInfo* blocks, std::size_t count);
    void merge(const BlockStats& other);
    bool empty() const { return blocks == 0; }
    double flushedBlockShare() const;   // of blocks with a nonzero input
    double saturatedBlockShare() const; // of all blocks
    double flushedInLiveShare() const;  // of the live blocks' nonzero inputs
};

} // namespace plab
