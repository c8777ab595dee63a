// Folding per-block facts into the block statistics.
#include "numerics/block_stats.h"

#include "numerics/block_lanes.h"
#include "numerics/quantize_element.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace plab {

int rangeBin(float amax, float minNonzero) {
    if (!(minNonzero > 0.0f) || !std::isfinite(amax))
        return kRangeBins - 1;
    const int bins =
        histogramBinOfBits(element::bitsOf(amax)) - histogramBinOfBits(element::bitsOf(minNonzero));
    return std::clamp(bins, 0, kRangeBins - 1);
}

void BlockStats::add(const BlockInfo& b) {
    ++blocks;
    saturatedBlocks += b.saturated > 0 ? 1u : 0u;
    if (b.nonzero == 0) {
        ++zeroBlocks;
        return;
    }
    if (b.nonzeroOut == 0) {
        ++flushedBlocks;
    } else {
        flushedInLiveBlocks += b.nonzero - std::min(b.nonzero, b.nonzeroOut);
        liveElements += b.nonzero;
    }
    ++scaleHistogram[static_cast<std::size_t>(
        histogramBinOfBits(element::bitsOf(b.scale.decoded)))];
    ++rangeHistogram[static_cast<std::size_t>(rangeBin(b.finiteAmax, b.minNonzero))];
}

namespace {

// histogramBinOfBits, with float32's normal numbers (every decoded scale but MX's 2^-127, most
// amaxes) computed without its branches and loop.
inline int binOfBits(std::uint32_t bits) {
    constexpr std::uint32_t kQuarter1 = 0x1837F1u, kQuarter2 = 0x3504F4u, kQuarter3 = 0x5744FDu;
    const std::uint32_t a = bits & 0x7FFFFFFFu;
    const std::uint32_t field = a >> 23;
    if (field - 1u >= 254u) // zero, subnormal, Inf or NaN
        return histogramBinOfBits(a);
    const std::uint32_t m = a & 0x7FFFFFu;
    const int quarter = (m >= kQuarter1) + (m >= kQuarter2) + (m >= kQuarter3);
    return 1 + (static_cast<int>(field) - 127 - kHistMinExponent) * kHistBinsPerBinade + quarter;
}

} // namespace

namespace {

// The two histogram bins of a block with a nonzero input: its decoded scale's, and its dynamic
// range's (rangeBin: a block without a finite nonzero, or a non-finite amax, is in the last bin).
inline std::size_t scaleBinOf(const BlockInfo& b) {
    return static_cast<std::size_t>(binOfBits(element::bitsOf(b.scale.decoded)));
}
inline std::size_t rangeBinOf(const BlockInfo& b) {
    const std::uint32_t amaxBits = element::bitsOf(b.finiteAmax);
    const std::uint32_t minBits = element::bitsOf(b.minNonzero);
    if (minBits == 0 || amaxBits >= 0x7F800000u)
        return kRangeBins - 1;
    const int bins = binOfBits(amaxBits) - binOfBits(minBits);
    return static_cast<std::size_t>(bins < 0 ? 0 : (bins > kRangeBins - 1 ? kRangeBins - 1 : bins));
}

} // namespace

#if defined(PLAB_BLOCK_LANES)
namespace {

// binOfBits in lanes (16 or 8) for normal floats; lanes holding zero, a subnormal, Inf or NaN are
// 1 in `special` (their bin is then found by binOfBits). Comparisons are turned into 0 / 1 numbers
// at once and combined arithmetically: GCC 12 goes element by element when it combines two
// comparisons (or selects on a comparison inside another) with AVX-512 masks.
template <class I>
PLAB_LANE_INLINE I binLanes(I bits, I& special) {
    constexpr std::int32_t kQuarter1 = 0x1837F1, kQuarter2 = 0x3504F4, kQuarter3 = 0x5744FD;
    const I a = bits & 0x7FFFFFFF;
    const I field = a >> 23;
    special = -(((field + 1) & 255) < 2); // field 0 or 255
    const I m = a & 0x7FFFFF;
    const I quarter = -((m >= kQuarter1) + (m >= kQuarter2) + (m >= kQuarter3));
    return 1 + (field - 127 - kHistMinExponent) * kHistBinsPerBinade + quarter;
}

} // namespace
#endif

namespace block_groups {

struct CounterSums {
    std::uint64_t zero = 0, flushed = 0, saturated = 0, flushedInLive = 0, live = 0;
    std::uint64_t zeroScaleInputs = 0; // nonzero inputs of blocks whose decoded scale is 0
};

// Blocks [0, count) W at a time (16 in AVX-512 lanes, 8 in AVX2 ones) into the counters and
// into histogram copies of kHistBinCount + 1 and kRangeBins + 1 bins (the last: blocks without
// an input); returns how many it took (the rest is the caller's: fewer than W, or all where the
// CPU runs neither). The 32-bit lane counts are flushed every 1024 groups: at most 1024 blocks
// of at most 128 x 128 elements each per lane.
#if defined(PLAB_BLOCK_LANES)
template <int W>
PLAB_LANE_INLINE std::size_t countGroupsOf(const BlockInfo* list, std::size_t count,
                                           CounterSums& sums,
                                           std::uint32_t (*scaleCopies)[kHistBinCount + 1],
                                           std::uint32_t (*rangeCopies)[kRangeBins + 1]) {
    using I = typename blocks::lanes::Lanes<W>::I;
    // Lane l holds the record recordOf(l): wordsOfRecords' order for 16 lanes (two records per
    // loaded vector), the records' own for 8 (one per vector: a plain transpose).
    auto recordOf = [](std::size_t l) { return W == 16 ? blocks::lanes::recordOfLane(l) : l; };
    std::size_t i = 0;
    I zero{}, flushed{}, saturated{}, lost{}, live{}, zeroScale{};
    auto flush = [&]() __attribute__((always_inline)) { // a lambda has no target attribute
        for (int l = 0; l < W; ++l) {
            sums.zero += static_cast<std::uint32_t>(zero[l]);
            sums.flushed += static_cast<std::uint32_t>(flushed[l]);
            sums.saturated += static_cast<std::uint32_t>(saturated[l]);
            sums.flushedInLive += static_cast<std::uint32_t>(lost[l]);
            sums.live += static_cast<std::uint32_t>(live[l]);
            sums.zeroScaleInputs += static_cast<std::uint32_t>(zeroScale[l]);
        }
        zero = flushed = saturated = lost = live = zeroScale = I{};
    };
    std::size_t groups = 0;
    for (; i + W <= count; i += W) {
        I v[8]; // W records of 8 words
        blocks::lanes::loadRecords(list + i, v);
        blocks::lanes::wordsOfRecords(v); // one vector per word
        const I nonzero = v[kWordNonzero], nonzeroOut = v[kWordNonzeroOut];
        // Counts are below 2^31: signed lanes order them as unsigned ones would. 0 / 1 numbers
        // (see binLanes) for: an input, an output, a saturated element.
        const I hasInput = -(nonzero != 0), hasOutput = -(nonzeroOut != 0);
        const I keeps = hasInput & hasOutput;
        saturated -= v[kWordSaturated] != 0;
        zero += 1 - hasInput;
        flushed += hasInput - keeps;
        const I keptIn = nonzeroOut < nonzero ? nonzeroOut : nonzero;
        lost += (nonzero - keptIn) & -keeps;
        live += nonzero & -keeps;
        zeroScale += v[kWordDecoded] == 0 ? nonzero : 0; // scales are >= 0: +0 bits

        I scaleSpecial, amaxSpecial, minSpecial;
        I scaleBin = binLanes(v[kWordDecoded], scaleSpecial);
        const I amaxBin = binLanes(v[kWordFiniteAmax], amaxSpecial);
        const I minBin = binLanes(v[kWordMinNonzero], minSpecial);
        I range = amaxBin - minBin;
        range = range < 0 ? I{} : range;
        range = range > kRangeBins - 1 ? I{} + (kRangeBins - 1) : range;
        // A block without an input counts in neither histogram: the spare last bins.
        scaleBin = nonzero == 0 ? I{} + kHistBinCount : scaleBin;
        range = nonzero == 0 ? I{} + kRangeBins : range;
        const I special = (scaleSpecial + amaxSpecial + minSpecial) & -hasInput;
        alignas(64) std::int32_t scaleBins[W], rangeBins[W], specials[W];
        std::memcpy(scaleBins, &scaleBin, sizeof scaleBins);
        std::memcpy(rangeBins, &range, sizeof rangeBins);
        if (blocks::lanes::sumAcross(special) != 0) { // rare: found one lane at a time
            std::memcpy(specials, &special, sizeof specials);
            for (std::size_t l = 0; l < W; ++l)
                if (specials[l] != 0) {
                    const BlockInfo& b = list[i + recordOf(l)];
                    scaleBins[l] = static_cast<std::int32_t>(scaleBinOf(b));
                    rangeBins[l] = static_cast<std::int32_t>(rangeBinOf(b));
                }
        }
        for (std::size_t l = 0; l < W; ++l) {
            ++scaleCopies[l & 3][scaleBins[l]];
            ++rangeCopies[l & 3][rangeBins[l]];
        }
        if (++groups % 1024 == 0)
            flush();
    }
    flush();
    return i;
}

PLAB_LANES_TARGET
std::size_t countGroups16(const BlockInfo* list, std::size_t count, CounterSums& sums,
                          std::uint32_t (*scaleCopies)[kHistBinCount + 1],
                          std::uint32_t (*rangeCopies)[kRangeBins + 1]) {
    return countGroupsOf<16>(list, count, sums, scaleCopies, rangeCopies);
}
PLAB_LANES8_TARGET
std::size_t countGroups8(const BlockInfo* list, std::size_t count, CounterSums& sums,
                         std::uint32_t (*scaleCopies)[kHistBinCount + 1],
                         std::uint32_t (*rangeCopies)[kRangeBins + 1]) {
    return countGroupsOf<8>(list, count, sums, scaleCopies, rangeCopies);
}
#endif

std::size_t count(const BlockInfo* list, std::size_t count, CounterSums& sums,
                  std::uint32_t (*scaleCopies)[kHistBinCount + 1],
                  std::uint32_t (*rangeCopies)[kRangeBins + 1]) {
#if defined(PLAB_BLOCK_LANES)
    switch (blocks::blockPassKernel()) {
    case CpuKernel::Avx512:
        return countGroups16(list, count, sums, scaleCopies, rangeCopies);
    case CpuKernel::Avx2:
        return countGroups8(list, count, sums, scaleCopies, rangeCopies);
    default:
        break;
    }
#endif
    (void)list;
    (void)count;
    (void)sums;
    (void)scaleCopies;
    (void)rangeCopies;
    return 0;
}

} // namespace block_groups

std::uint64_t BlockStats::addRange(const BlockInfo* list, std::size_t count) {
    block_groups::CounterSums sums;
    // Neighbouring blocks' scales and ranges fall in the same few bins, and increments of one
    // counter wait for each other (store to load): block i counts into copy i % 4 of each
    // histogram, folded in at the end. Long ranges go 16 (AVX-512) or 8 (AVX2) blocks at a time in
    // vector lanes (block_groups::count); short ones, and the rest, one block at a time straight
    // into the arrays.
    constexpr std::size_t kCopiedMin = 1024;
    std::size_t done = 0;
    if (count >= kCopiedMin && count < (std::size_t{1} << 32)) {
        struct Copies {
            std::uint32_t scale[4][kHistBinCount + 1];
            std::uint32_t range[4][kRangeBins + 1];
        };
        Copies copies;
        std::memset(&copies, 0, sizeof copies);
        done = block_groups::count(list, count, sums, copies.scale, copies.range);
        auto fold = [](const auto& fourCopies, auto& histogram) { // the spare last bin left out
            for (std::size_t bin = 0; bin < histogram.size(); ++bin)
                histogram[bin] += std::uint64_t{fourCopies[0][bin]} + fourCopies[1][bin] +
                                  fourCopies[2][bin] + fourCopies[3][bin];
        };
        fold(copies.scale, scaleHistogram);
        fold(copies.range, rangeHistogram);
    }
    // The counters in one loop and the histograms in another: together they need more
    // registers than there are, and a counter kept in memory is a chain through every block.
    for (std::size_t i = done; i < count; ++i) {
        const BlockInfo& b = list[i];
        const bool hasInput = b.nonzero != 0, kept = b.nonzeroOut != 0;
        sums.saturated += b.saturated > 0 ? 1u : 0u;
        sums.zero += hasInput ? 0u : 1u;
        sums.flushed += (hasInput && !kept) ? 1u : 0u;
        const std::uint32_t lost =
            b.nonzero - (b.nonzeroOut < b.nonzero ? b.nonzeroOut : b.nonzero);
        sums.flushedInLive += (hasInput && kept) ? lost : 0u;
        sums.live += (hasInput && kept) ? b.nonzero : 0u;
        sums.zeroScaleInputs += b.scale.decoded == 0.0f ? b.nonzero : 0u;
    }
    for (std::size_t i = done; i < count; ++i) {
        if (list[i].nonzero == 0)
            continue;
        ++scaleHistogram[scaleBinOf(list[i])];
        ++rangeHistogram[rangeBinOf(list[i])];
    }
    blocks += count;
    zeroBlocks += sums.zero;
    flushedBlocks += sums.flushed;
    saturatedBlocks += sums.saturated;
    flushedInLiveBlocks += sums.flushedInLive;
    liveElements += sums.live;
    return sums.zeroScaleInputs;
}

void BlockStats::merge(const BlockStats& o) {
    blocks += o.blocks;
    zeroBlocks += o.zeroBlocks;
    flushedBlocks += o.flushedBlocks;
    saturatedBlocks += o.saturatedBlocks;
    flushedInLiveBlocks += o.flushedInLiveBlocks;
    liveElements += o.liveElements;
    for (std::size_t i = 0; i < scaleHistogram.size(); ++i)
        scaleHistogram[i] += o.scaleHistogram[i];
    for (std::size_t i = 0; i < rangeHistogram.size(); ++i)
        rangeHistogram[i] += o.rangeHistogram[i];
}

namespace {
double share(std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}
} // namespace

double BlockStats::flushedBlockShare() const {
    return share(flushedBlocks, blocks - zeroBlocks);
}
double BlockStats::saturatedBlockShare() const {
    return share(saturatedBlocks, blocks);
}
double BlockStats::flushedInLiveShare() const {
    return share(flushedInLiveBlocks, liveElements);
}

} // namespace plab
