// The CLI's charts (compare's curves, sweep's error bars), drawn once with Cairo and written as
// PNG, SVG and PDF from that one drawing: no Qt needed on a server.
#pragma once

#include "stats/seed_statistics.h"

#include <string>
#include <utility>
#include <vector>

namespace plab::cli {

struct ChartSeries {
    std::string name;
    std::vector<std::pair<double, double>> points; // (x, y)
};

// One estimate with its interval: a bar of mean +- half (half NaN: a point alone).
struct ChartEstimate {
    std::string label;
    double mean = 0.0, half = 0.0;
};

// A curve over runs as chart series: its mean, and with `edges` the two edges of its 95% band
// (clipped to what the runs reached: SeedBand::drawn) where two or more runs are there.
void addBandSeries(std::vector<ChartSeries>& series, const std::string& name, const SeedBand& band,
                   bool edges);

// False in a build without Cairo (machines with only a compiler): callers skip the charts and
// say so.
bool chartsAvailable();

// basePath + ".png", ".svg", ".pdf". Both throw std::runtime_error naming the file that could
// not be written.
void writeLineCharts(const std::string& basePath, const std::string& title,
                     const std::string& xLabel, const std::string& yLabel,
                     const std::vector<ChartSeries>& series, bool logY);
void writeErrorBarCharts(const std::string& basePath, const std::string& title,
                         const std::string& yLabel, const std::vector<ChartEstimate>& estimates);

} // namespace plab::cli
