// whatIf(): classify shifted histogram bins against the format's thresholds.
#include "stats/what_if.h"

#include <cmath>

namespace plab {

double shiftedBinCentreLog2(int bin, double factor) {
    return histogramBinLowerLog2(bin) + 0.5 / kHistBinsPerBinade + std::log2(factor);
}

namespace {

// Counts (whole numbers, exact in a double) to both kinds of share, each one division, so that
// ofNonzero.flushed is bit for bit QuantStats::flushedShare's underflow / (total - zero).
WhatIfFractions fromCounts(const WhatIfFractions& counts) {
    const double nonzero =
        counts.flushed + counts.subnormal + counts.normal + counts.overflow + counts.nan;
    const double total = counts.zero + nonzero;
    if (total == 0.0)
        return {};
    WhatIfFractions f;
    f.zero = counts.zero / total;
    f.flushed = counts.flushed / total;
    f.subnormal = counts.subnormal / total;
    f.normal = counts.normal / total;
    f.overflow = counts.overflow / total;
    f.nan = counts.nan / total;
    if (nonzero > 0.0)
        f.ofNonzero = {counts.flushed / nonzero, counts.subnormal / nonzero,
                       counts.normal / nonzero, counts.overflow / nonzero, counts.nan / nonzero};
    return f;
}

} // namespace

WhatIfFractions measuredFractions(const QuantStats& recorded) {
    WhatIfFractions counts;
    counts.zero = static_cast<double>(recorded.count(QuantClass::Zero));
    counts.flushed = static_cast<double>(recorded.count(QuantClass::Underflow));
    counts.subnormal = static_cast<double>(recorded.count(QuantClass::Subnormal));
    counts.normal = static_cast<double>(recorded.count(QuantClass::Normal));
    counts.overflow = static_cast<double>(recorded.count(QuantClass::Overflow));
    counts.nan = static_cast<double>(recorded.count(QuantClass::NaN));
    return fromCounts(counts);
}

WhatIfFractions whatIf(const QuantStats& recorded, const FormatSpec& format, double factor) {
    WhatIfFractions f; // counts first
    if (recorded.total() == 0 || !(factor > 0.0))
        return f;
    const double flushBelow = std::log2(format.minPositive()) - 1.0; // half the smallest value
    const double normalFrom = std::log2(format.minNormal());
    const double overflowAbove = std::log2(format.maxFinite());
    const bool hasSubnormals = format.hasZero && format.subnormals && format.mantissaBits > 0;
    for (int b = 1; b <= kHistLogBins; ++b) {
        const auto n = static_cast<double>(recorded.histogram[static_cast<std::size_t>(b)]);
        if (n == 0.0)
            continue;
        const double c = shiftedBinCentreLog2(b, factor);
        if (c > overflowAbove)
            f.overflow += n;
        else if (c < flushBelow && format.hasZero)
            f.flushed += n;
        else if (c < normalFrom && hasSubnormals)
            f.subnormal += n;
        else // without subnormals the top half below min normal rounds up to it
            f.normal += n;
    }
    f.zero = static_cast<double>(recorded.histogram[kHistZeroBin]);
    f.overflow += static_cast<double>(recorded.histogram[kHistInfBin]);
    f.nan = static_cast<double>(recorded.histogram[kHistNanBin]);
    return fromCounts(f);
}

} // namespace plab
