// What-if for the loss-scale slider: how a recorded log2 histogram would classify in a format if
// the values were multiplied by another factor, without retraining. The histogram is shifted by
// 4*log2(factor) bins and each bin is judged by its centre, so bins that straddle a format
// threshold are approximate; the next training step gives exact counts.
#pragma once

#include "numerics/format_spec.h"
#include "numerics/quant_stats.h"

namespace plab {

// The classes' shares of all elements (they add up to 1: what the histogram's bars show), and
// the same classes over the nonzero values: "flushed" wherever a share is shown means the latter
// (QuantStats::flushedShare, README: true zeros were never flushed and do not dilute it).
struct WhatIfFractions {
    double zero = 0.0;    // true zeros (unchanged by scaling)
    double flushed = 0.0; // would round to zero
    double subnormal = 0.0;
    double normal = 0.0;
    double overflow = 0.0; // past max finite, or Inf
    double nan = 0.0;
    struct OfNonzero {
        double flushed = 0.0; // equals QuantStats::flushedShare at the recorded scale
        double subnormal = 0.0;
        double normal = 0.0;
        double overflow = 0.0;
        double nan = 0.0;
    } ofNonzero;
};

// factor multiplies the values the histogram was recorded from (new scale / recorded scale).
WhatIfFractions whatIf(const QuantStats& recorded, const FormatSpec& format, double factor);
// The shares the cast itself counted (no estimate): what the views show at the recorded scale.
WhatIfFractions measuredFractions(const QuantStats& recorded);

// log2 of a log bin's centre after the shift; the bin layout is numerics/quant_stats.h's.
double shiftedBinCentreLog2(int bin, double factor);

} // namespace plab
