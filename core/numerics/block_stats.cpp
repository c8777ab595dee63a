// Folding per-block facts into the block statistics.
#include "numerics/block_stats.h"

#include "numerics/quantize_element.h"

#include <algorithm>
#include <cmath>

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
