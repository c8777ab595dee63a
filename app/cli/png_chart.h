// A small raster line chart written as PNG (zlib only, no Qt): axes, polylines, a legend and
// labels in a built-in 5x7 font. For `compare` on machines without a GUI toolkit.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace plab::cli {

struct ChartSeries {
    std::string name;
    std::vector<std::pair<double, double>> points; // (x, y)
};

// Throws std::runtime_error naming the path if it cannot be written.
void writeLineChartPng(const std::string& path, const std::string& title, const std::string& yLabel,
                       const std::vector<ChartSeries>& series, bool logY);

} // namespace plab::cli
