#include "stats/seed_statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace plab {

SeedSummary summarise(const std::vector<double>& values) {
    SeedSummary s;
    double sum = 0.0;
    for (const double v : values)
        if (std::isfinite(v)) {
            sum += v;
            ++s.n;
        }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (s.n == 0) {
        s.mean = s.ci95 = nan;
        return s;
    }
    s.mean = sum / static_cast<double>(s.n);
    double squares = 0.0;
    for (const double v : values)
        if (std::isfinite(v))
            squares += (v - s.mean) * (v - s.mean);
    if (s.n < 2) {
        s.ci95 = nan;
        return s;
    }
    s.stdDev = std::sqrt(squares / static_cast<double>(s.n - 1));
    s.ci95 =
        tQuantile975(static_cast<double>(s.n - 1)) * s.stdDev / std::sqrt(static_cast<double>(s.n));
    return s;
}

double tQuantile975(double df) {
    // Exact to three decimals for 1..30 degrees of freedom (any statistics table); beyond, the
    // Cornish-Fisher expansion about the normal quantile, within 0.001 there.
    static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                        2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                        2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                        2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (!(df >= 1.0))
        return std::numeric_limits<double>::quiet_NaN();
    const double whole = std::floor(df);
    if (whole <= 30.0)
        return kTable[static_cast<int>(whole) - 1];
    const double z = 1.959963984540054, z3 = z * z * z, z5 = z3 * z * z;
    return z + (z3 + z) / (4.0 * whole) + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * whole * whole);
}

Difference difference(const SeedSummary& point, const SeedSummary& baseline) {
    Difference d;
    d.mean = point.mean - baseline.mean;
    if (point.n < 2 || baseline.n < 2) {
        d.ci95 = d.df = std::numeric_limits<double>::quiet_NaN();
        return d;
    }
    const double a = point.stdDev * point.stdDev / static_cast<double>(point.n);
    const double b = baseline.stdDev * baseline.stdDev / static_cast<double>(baseline.n);
    const double se = std::sqrt(a + b);
    if (se == 0.0) { // identical runs on both sides (deterministic metrics)
        d.df = static_cast<double>(point.n + baseline.n - 2);
        d.ci95 = 0.0;
        d.distinguishable = d.mean != 0.0;
        return d;
    }
    d.df = (a + b) * (a + b) /
           (a * a / static_cast<double>(point.n - 1) + b * b / static_cast<double>(baseline.n - 1));
    d.ci95 = tQuantile975(d.df) * se;
    d.distinguishable = std::fabs(d.mean) > d.ci95;
    return d;
}

std::string verdict(const Difference& d, std::size_t n, bool higherIsBetter, double scale,
                    const std::string& unit) {
    if (std::isnan(d.ci95))
        return "n < 2: no interval";
    if (!d.distinguishable)
        return "indistinguishable at n = " + std::to_string(n);
    const bool better = higherIsBetter ? d.mean > 0.0 : d.mean < 0.0;
    char text[96];
    std::snprintf(text, sizeof text, "%s by %.3g ± %.2g%s", better ? "better" : "worse",
                  std::fabs(d.mean) * scale, d.ci95 * scale, unit.c_str());
    return text;
}

SeedBand bandOverSeeds(const std::vector<std::vector<std::pair<double, double>>>& curves) {
    std::map<double, std::vector<double>> byStep;
    for (const auto& curve : curves)
        for (const auto& [step, value] : curve)
            byStep[step].push_back(value);
    SeedBand band;
    for (const auto& [step, values] : byStep) {
        const SeedSummary s = summarise(values);
        if (s.n == 0)
            continue; // every run's value there is NaN (diverged): no point to draw
        const double half = std::isfinite(s.ci95) ? s.ci95 : 0.0;
        band.steps.push_back(step);
        band.mean.push_back(s.mean);
        band.low.push_back(s.mean - half);
        band.high.push_back(s.mean + half);
        band.runs.push_back(s.n);
        double lowest = s.mean, highest = s.mean;
        for (double v : values)
            if (std::isfinite(v)) {
                lowest = std::min(lowest, v);
                highest = std::max(highest, v);
            }
        band.lowest.push_back(lowest);
        band.highest.push_back(highest);
    }
    return band;
}

SeedBand SeedBand::drawn() const {
    SeedBand d = *this;
    for (std::size_t i = 0; i < d.steps.size(); ++i) {
        d.low[i] = std::max(d.low[i], d.lowest[i]);
        d.high[i] = std::min(d.high[i], d.highest[i]);
    }
    return d;
}

std::string meanWithInterval(const SeedSummary& s, double scale, int decimals) {
    if (s.n == 0 || !std::isfinite(s.mean))
        return "–";
    char text[96];
    if (std::isfinite(s.ci95))
        std::snprintf(text, sizeof text, "%.*f ± %.*f", decimals, s.mean * scale, decimals,
                      s.ci95 * scale);
    else
        std::snprintf(text, sizeof text, "%.*f", decimals, s.mean * scale);
    return text;
}

} // namespace plab
