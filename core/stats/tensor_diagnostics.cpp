// Kurtosis, block-scale spread, gradient-to-noise ratio.
#include "stats/tensor_diagnostics.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace plab {

namespace {

// Whether a float is finite, from its exponent bits (no library call, no branch): what lets
// the loops below run as vector code.
inline bool finiteBits(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return (bits & 0x7F800000u) != 0x7F800000u;
}

} // namespace

TensorDiagnostics tensorDiagnostics(std::span<const float> values) {
    // Two passes (the mean, then the central moments): one pass's raw moments lose everything
    // to cancellation on a tensor with a large mean. Four running sums (element i into sum
    // i % 4, added in order at the end) keep the additions from waiting on each other, in an
    // order fixed by the data alone (the same result on every machine).
    constexpr std::size_t kLanes = 4;
    const std::size_t size = values.size();
    const std::size_t whole = size - size % kLanes;
    const float* x = values.data();
    double sum[kLanes] = {};
    std::uint64_t count[kLanes] = {};
    auto add = [&](std::size_t i, std::size_t lane) {
        const float v = x[i];
        const bool finite = finiteBits(v);
        sum[lane] += finite ? static_cast<double>(v) : 0.0;
        count[lane] += finite ? 1u : 0u;
    };
    for (std::size_t i = 0; i < whole; i += kLanes)
        for (std::size_t l = 0; l < kLanes; ++l)
            add(i + l, l);
    for (std::size_t i = whole; i < size; ++i)
        add(i, i % kLanes);
    TensorDiagnostics d;
    d.values = count[0] + count[1] + count[2] + count[3];
    if (d.values < 2) {
        d.kurtosis = std::numeric_limits<double>::quiet_NaN();
        return d;
    }
    const double mean = (sum[0] + sum[1] + sum[2] + sum[3]) / static_cast<double>(d.values);
    double m2[kLanes] = {}, m4[kLanes] = {};
    for (std::size_t i = 0; i < whole; i += kLanes)
        for (std::size_t l = 0; l < kLanes; ++l) {
            const float v = x[i + l];
            const double c = finiteBits(v) ? static_cast<double>(v) - mean : 0.0;
            const double c2 = c * c;
            m2[l] += c2;
            m4[l] += c2 * c2;
        }
    for (std::size_t i = whole; i < size; ++i) { // the tail, into the lanes it belongs to
        const float v = x[i];
        const double c = finiteBits(v) ? static_cast<double>(v) - mean : 0.0;
        const double c2 = c * c;
        m2[i % kLanes] += c2;
        m4[i % kLanes] += c2 * c2;
    }
    const double n = static_cast<double>(d.values);
    const double s2 = (m2[0] + m2[1] + m2[2] + m2[3]) / n;
    const double s4 = (m4[0] + m4[1] + m4[2] + m4[3]) / n;
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
