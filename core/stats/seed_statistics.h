// Statistics over seeds, for sweeps: a metric's mean, standard deviation and 95% confidence
// interval over the runs of one grid point (Student's t), and its difference from a baseline's
// with Welch's interval (unequal variances, Welch-Satterthwaite degrees of freedom), said in
// words: "indistinguishable at n = 5" or "worse by 1.2 ± 0.4".
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace plab {

struct SeedSummary {
    std::size_t n = 0;   // finite values
    double mean = 0.0;   // NaN when n is 0
    double stdDev = 0.0; // sample standard deviation (n - 1); 0 when n < 2
    // Half-width of the 95% interval of the mean (t quantile x sd / sqrt(n)); NaN when n < 2.
    double ci95 = 0.0;
};
// Non-finite values (a diverged run's NaN loss) are left out and not counted.
SeedSummary summarise(const std::vector<double>& values);
// "84.60 ± 1.44" (mean and the 95% interval's half-width, both times `scale`, with `decimals`
// places), the mean alone where there is no interval (n < 2), "–" where nothing was measured:
// the one form of the sweep's tables, the CLI's and the app's.
std::string meanWithInterval(const SeedSummary& s, double scale, int decimals);

// The two-sided 95% quantile of Student's t with `df` degrees of freedom (12.706 at 1, 2.776 at
// 4, 1.960 in the limit); a fractional df uses the next lower whole one (a wider interval).
double tQuantile975(double df);

struct Difference {
    double mean = 0.0; // point minus baseline
    double ci95 = 0.0; // Welch's half-width; NaN when either side has fewer than 2 values
    double df = 0.0;
    bool distinguishable = false; // the interval excludes 0
};
Difference difference(const SeedSummary& point, const SeedSummary& baseline);

// "indistinguishable at n = 5", "better by 0.8 ± 0.5", "worse by 1.2 ± 0.4", or "n < 2: no
// interval"; `higherIsBetter` for accuracies, not for losses or flushed shares; `scale` and
// `unit` for the text (100 and " points" for a share shown in points).
std::string verdict(const Difference& d, std::size_t n, bool higherIsBetter, double scale = 1.0,
                    const std::string& unit = {});

// A curve over seeds (the loss of a grid point's runs): at each step that any run reached, the
// mean of the runs that reached it and the 95% interval of that mean (low = high = mean where
// only one run is there). Each run's curve is (step, value) pairs in increasing step order.
struct SeedBand {
    std::vector<double> steps, mean, low, high;
    std::vector<double> lowest, highest; // the runs' own smallest and largest value at each step
    std::vector<std::size_t> runs;       // how many runs each step's mean is over
    // The band to draw: the interval clipped to what the runs reached. With few seeds the
    // interval is wide (t at 1 degree of freedom is 12.7) and a loss band would dip below zero,
    // a value no run can have.
    SeedBand drawn() const;
};
SeedBand bandOverSeeds(const std::vector<std::vector<std::pair<double, double>>>& curves);

} // namespace plab
