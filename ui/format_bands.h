// Where a format's bands lie on a log2 axis, for every view that draws them (the gradient view,
// the all-layers overview): one definition, so that two views never disagree about a format.
#pragma once

#include "numerics/format_spec.h"

#include <cmath>

namespace plab {

struct FormatBands {
    double flushBelow = 0.0;   // below: rounds to zero (under half the smallest positive value)
    double normalFrom = 0.0;   // [flushBelow, normalFrom): subnormal results
    double overflowFrom = 0.0; // [normalFrom, overflowFrom): normal; above: overflow
};

inline FormatBands formatBands(const FormatSpec& f) {
    FormatBands b;
    b.flushBelow = std::log2(f.minPositive()) - 1.0;
    // Without subnormals the values between half the smallest normal and it round up to it:
    // normal results, no subnormal band (e5m2:nosub has none to draw).
    b.normalFrom = f.subnormals ? std::log2(f.minNormal()) : b.flushBelow;
    b.overflowFrom = std::log2(f.maxFinite());
    return b;
}

} // namespace plab
