// Kurtosis, block-scale spread, gradient-to-noise ratio.
#include "stats/tensor_diagnostics.h"

#include <cmath>
#include <limits>

namespace plab {

TensorDiagnostics tensorDiagnostics(std::span<const float> values) {
    // Two passes (the mean, then the central moments): one pass's raw moments lose everything
    // to cancellation on a tensor with a large mean. Four running sums (element i into sum
    // i % 4, added in order at the end) keep the additions from waiting on each other, in an
    // order fixed by the data alone.
    constexpr std::size_t kLanes = 4;
    double sum[kLanes] = {};
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float v = values[i];
        const bool finite = std::isfinite(v);
        sum[i % kLanes] += finite ? v : 0.0;
        n += finite ? 1 : 0;
    }
    TensorDiagnostics d;
    d.values = n;
    if (n < 2) {
        d.kurtosis = std::numeric_limits<double>::quiet_NaN();
        return d;
    }
    const double mean = (sum[0] + sum[1] + sum[2] + sum[3]) / static_cast<double>(n);
    double m2[kLanes] = {}, m4[kLanes] = {};
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float v = values[i];
        const double c = std::isfinite(v) ? static_cast<double>(v) - mean : 0.0;
        const double c2 = c * c;
        m2[i % kLanes] += c2;
        m4[i % kLanes] += c2 * c2;
    }
    const double s2 = (m2[0] + m2[1] + m2[2] + m2[3]) / static_cast<double>(n);
    const double s4 = (m4[0] + m4[1] + m4[2] + m4[3]) / static_cast<double>(n);
    d.kurtosis = s2 > 0.0 ? s4 / (s2 * s2) : std::numeric_limits<double>::quiet_NaN();
    return d;
}

BlockScaleSpread blockScaleSpread(const std::vector<BlockInfo>& blocks) {
    BlockScaleSpread s;
    double sum = 0.0;
    std::uint64_t scaled = 0;
    for (const BlockInfo& b : blocks) {
        if (b.nonzero == 0)
            continue;
        ++s.liveBlocks;
        if (!(b.scale.decoded > 0.0f)) {
            ++s.zeroScaleBlocks;
            continue;
        }
        sum += std::log2(static_cast<double>(b.scale.decoded));
        ++scaled;
    }
    if (scaled < 2) {
        s.log2StdDev = std::numeric_limits<double>::quiet_NaN();
        return s;
    }
    const double mean = sum / static_cast<double>(scaled);
    double m2 = 0.0;
    for (const BlockInfo& b : blocks)
        if (b.nonzero != 0 && b.scale.decoded > 0.0f) {
            const double c = std::log2(static_cast<double>(b.scale.decoded)) - mean;
            m2 += c * c;
        }
    s.log2StdDev = std::sqrt(m2 / static_cast<double>(scaled));
    return s;
}

double signalToNoiseRatio(const QuantError& error) {
    if (!error.measured())
        return std::numeric_limits<double>::quiet_NaN();
    if (error.errorSq == 0.0)
        return std::numeric_limits<double>::infinity();
    return std::sqrt(error.signalSq / error.errorSq);
}

} // namespace plab
