// Folding per-block facts into the block statistics.
#include "numerics/block_stats.h"

#include "numerics/quantize_element.h"

#include <algorithm>
#include <cmath>
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

void BlockStats::addRange(const BlockInfo* list, std::size_t count) {
    // The counters in one loop and the histograms in another: together they need more
    // registers than there are, and a counter kept in memory is a chain through every block.
    std::uint64_t zero = 0, flushed = 0, saturated = 0, flushedInLive = 0, live = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const BlockInfo& b = list[i];
        const bool hasInput = b.nonzero != 0, kept = b.nonzeroOut != 0;
        saturated += b.saturated > 0 ? 1u : 0u;
        zero += hasInput ? 0u : 1u;
        flushed += (hasInput && !kept) ? 1u : 0u;
        const std::uint32_t lost =
            b.nonzero - (b.nonzeroOut < b.nonzero ? b.nonzeroOut : b.nonzero);
        flushedInLive += (hasInput && kept) ? lost : 0u;
        live += (hasInput && kept) ? b.nonzero : 0u;
    }
    blocks += count;
    zeroBlocks += zero;
    flushedBlocks += flushed;
    saturatedBlocks += saturated;
    flushedInLiveBlocks += flushedInLive;
    liveElements += live;

    // Neighbouring blocks' scales and ranges fall in the same few bins, and increments of one
    // counter wait for each other (store to load): block i counts into copy i % 4 of each
    // histogram, folded in at the end. Short ranges add to the arrays directly.
    constexpr std::size_t kCopiedMin = 1024;
    if (count < kCopiedMin || count >= (std::size_t{1} << 32)) {
        for (std::size_t i = 0; i < count; ++i) {
            if (list[i].nonzero == 0)
                continue;
            ++scaleHistogram[scaleBinOf(list[i])];
            ++rangeHistogram[rangeBinOf(list[i])];
        }
        return;
    }
    struct Copies {
        std::uint32_t scale[4][kHistBinCount];
        std::uint32_t range[4][kRangeBins];
    };
    Copies copies;
    std::memset(&copies, 0, sizeof copies);
    for (std::size_t i = 0; i < count; ++i) {
        if (list[i].nonzero == 0)
            continue;
        ++copies.scale[i & 3][scaleBinOf(list[i])];
        ++copies.range[i & 3][rangeBinOf(list[i])];
    }
    for (std::size_t bin = 0; bin < scaleHistogram.size(); ++bin)
        scaleHistogram[bin] += std::uint64_t{copies.scale[0][bin]} + copies.scale[1][bin] +
                               copies.scale[2][bin] + copies.scale[3][bin];
    for (std::size_t bin = 0; bin < rangeHistogram.size(); ++bin)
        rangeHistogram[bin] += std::uint64_t{copies.range[0][bin]} + copies.range[1][bin] +
                               copies.range[2][bin] + copies.range[3][bin];
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
