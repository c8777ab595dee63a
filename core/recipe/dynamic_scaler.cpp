// DynamicScaler::update: the decision for one step, and why.
#include "recipe/dynamic_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace plab {
namespace {

std::string pow2(double v) {
    char buf[48];
    const double k = std::log2(v);
    if (k == std::floor(k))
        std::snprintf(buf, sizeof buf, "2^%d", static_cast<int>(k));
    else
        std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

} // namespace

DynamicScaler::DynamicScaler(const DynamicScalerSettings& settings)
    : m_settings(settings), m_scale(0.0), m_hysteresisLeft(std::max(1, settings.hysteresis)) {
    m_scale = clamp(settings.initialScale);
}

double DynamicScaler::floor() const {
    if (!m_settings.enhanced)
        return 0.0;
    const double periods =
        static_cast<double>(m_steps / std::max<std::int64_t>(1, m_settings.floorInterval));
    return std::min(m_settings.floorMax,
                    m_settings.floorInitial * std::pow(m_settings.floorGrowth, periods));
}

double DynamicScaler::clamp(double scale) const {
    double s = std::max({scale, m_settings.minScale, floor()});
    if (m_settings.maxScale > 0.0)
        s = std::min(s, m_settings.maxScale);
    return std::clamp(s, kLowestLossScale, kHighestLossScale);
}

void DynamicScaler::setState(const State& s) {
    m_steps = std::max<std::int64_t>(0, s.steps);
    m_cleanSteps = std::max<std::int64_t>(0, s.cleanSteps);
    m_hysteresisLeft = std::clamp(s.hysteresisLeft, 1, std::max(1, m_settings.hysteresis));
    m_scale = clamp(s.scale);
}

void DynamicScaler::setScale(double scale) {
    m_scale = clamp(scale);
    m_cleanSteps = 0;
}

ScaleDecision DynamicScaler::update(bool overflow) {
    ++m_steps;
    const double before = m_scale;
    ScaleDecision d;
    m_overflowAtLowest = overflow && before <= kLowestLossScale;
    if (overflow) {
        d.skipStep = true;
        m_cleanSteps = 0;
        if (--m_hysteresisLeft > 0) {
            d.reason = "Inf/NaN in gradients: step skipped, scale kept at " + pow2(m_scale) + " (" +
                       std::to_string(m_hysteresisLeft) + " more overflow(s) before backing off)";
            return d;
        }
        m_hysteresisLeft = std::max(1, m_settings.hysteresis);
        m_scale = clamp(m_scale * m_settings.backoffFactor);
        d.reason =
            "Inf/NaN in gradients: step skipped, scale " + pow2(before) + " -> " + pow2(m_scale);
        if (m_scale == before)
            d.reason += m_scale == kLowestLossScale ? " (held at the lowest scale a float holds)"
                        : m_settings.enhanced       ? " (held at the enhanced floor)"
                                                    : " (held at the minimum)";
        return d;
    }
    if (++m_cleanSteps >= m_settings.growthInterval) {
        m_cleanSteps = 0;
        m_hysteresisLeft = std::max(1, m_settings.hysteresis);
        m_scale = clamp(m_scale * m_settings.growthFactor);
        if (m_scale != before)
            d.reason = std::to_string(m_settings.growthInterval) + " clean steps: scale " +
                       pow2(before) + " -> " + pow2(m_scale);
        return d;
    }
    const double raised = clamp(m_scale); // the enhanced floor may have risen under the scale
    if (raised != m_scale) {
        m_scale = raised;
        d.reason = "enhanced floor rose: scale " + pow2(before) + " -> " + pow2(m_scale);
    }
    return d;
}

} // namespace plab
