// whatIf(): classify shifted histogram bins against the format's thresholds.
#include "stats/what_if.h"

#include <cmath>

namespace plab {

double shiftedBinCentreLog2(int bin, double factor) {
    return histogramBinLowerLog2(bin) + 0.5 / kHistBinsPerBinade + std::log2(factor);
}

WhatIfFractions measuredFractions(const QuantStats& recorded) {
    WhatIfFractions f;
    f.zero = recorded.fraction(QuantClass::Zero);
    f.flushed = recorded.fraction(QuantClass::Underflow);
    f.subnormal = recorded.fraction(QuantClass::Subnormal);
    f.normal = recorded.fraction(QuantClass::Normal);
    f.overflow = recorded.fraction(QuantClass::Overflow);
    f.nan = recorded.fraction(QuantClass::NaN);
    return f;
}

WhatIfFractions whatIf(const QuantStats& recorded, const FormatSpec& format, double factor) {
    WhatIfFractions f;
    const double total = static_cast<double>(recorded.total());
    if (total == 0.0 || !(factor > 0.0))
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
    for (double* v : {&f.zero, &f.flushed, &f.subnormal, &f.normal, &f.overflow, &f.nan})
        *v /= total;
    return f;
}

} // namespace plab
