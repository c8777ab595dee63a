// perLayerScale(): Zhao et al.'s formulas, with NUMERICS.md's caps.
#include "recipe/per_layer_scaling.h"

#include <algorithm>
#include <cmath>

namespace plab {

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
