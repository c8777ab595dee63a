// The CLI's charts (compare's curves, sweep's error bars), drawn once with Cairo and written as
// PNG, SVG and PDF from that one drawing: no Qt needed on a server.
#pragma once

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
