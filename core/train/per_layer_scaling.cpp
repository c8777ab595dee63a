// perLayerScale(): Zhao et al.'s formulas, with NUMERICS.md's caps.
#include "train/per_layer_scaling.h"

#include <algorithm>
#include <cmath>

namespace plab {

TensorMoments moments(std::span<const float> values) {
    TensorMoments m;
    if (values.empty())
        return m;
    // Sixteen float lanes per block (vectorisable), blocks summed in double: ample precision for
    // a scale that is rounded to a power of two.
    constexpr std::size_t kLanes = 16, kBlock = 4096;
    double sum = 0.0, sumSq = 0.0;
    float maxAbs = 0.0f;
    for (std::size_t start = 0; start < values.size(); start += kBlock) {
        const std::size_t end = std::min(values.size(), start + kBlock);
        float s[kLanes] = {}, q[kLanes] = {}, mx[kLanes] = {};
        std::size_t i = start;
        for (; i + kLanes <= end; i += kLanes)
            for (std::size_t j = 0; j < kLanes; ++j) {
                const float v = values[i + j];
                s[j] += v;
                q[j] += v * v;
                const float a = std::fabs(v);
                mx[j] = a > mx[j] ? a : mx[j];
            }
        for (; i < end; ++i) {
            s[0] += values[i];
            q[0] += values[i] * values[i];
            mx[0] = std::max(mx[0], std::fabs(values[i]));
        }
        for (std::size_t j = 0; j < kLanes; ++j) {
            sum += s[j];
            sumSq += q[j];
            maxAbs = std::max(maxAbs, mx[j]);
        }
    }
    const auto n = static_cast<double>(values.size());
    m.mean = sum / n;
    m.stdDev = std::sqrt(std::max(0.0, sumSq / n - m.mean * m.mean));
    m.maxAbs = maxAbs;
    return m;
}

double perLayerScale(const TensorMoments& g, const TensorMoments& w, std::size_t fanIn,
                     const FormatSpec& format, double cumulativeSoFar,
                     const PerLayerScaleLimits& limits) {
    // T = sqrt(2) * erfinv(1e-3): for small p, erfinv(p) = sqrt(pi)/2 * (p + pi p^3 / 12 + ...).
    constexpr double kPi = 3.14159265358979323846;
    constexpr double p = 1e-3;
    const double T = std::sqrt(2.0) * std::sqrt(kPi) / 2.0 * (p + kPi * p * p * p / 12.0);
    const double sigmaOut = std::sqrt((g.stdDev * g.stdDev + g.mean * g.mean) *
                                      (w.stdDev * w.stdDev + w.mean * w.mean));
    double underflowScale =
        sigmaOut > 0.0 ? format.minPositive() / (T * sigmaOut) : limits.perLayerCap;
    underflowScale = std::max(1.0, underflowScale);
    const double product = g.maxAbs * w.maxAbs;
    const double overflowScale =
        product > 0.0
            ? (format.maxFinite() / static_cast<double>(std::max<std::size_t>(fanIn, 1))) / product
            : underflowScale;
    double scale = std::min(underflowScale, overflowScale);
    scale = std::min(scale, limits.perLayerCap);
    scale = std::min(scale, limits.cumulativeCap / std::max(cumulativeSoFar, 1e-300));
    if (!(scale > 0.0))
        return 1.0;
    return std::exp2(std::floor(std::log2(scale))); // a power of two: exact to apply and undo
}

} // namespace plab
