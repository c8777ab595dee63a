// Line charts for `compare` on machines without a GUI toolkit: as PNG (zlib only: axes,
// polylines, a legend and labels in a built-in 5x7 font) and as SVG, from one data range.
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

// The data's extent; y as log10 when logY. Degenerate ranges are widened to a unit.
struct ChartRange {
    double x0, x1, y0, y1;
    bool logY;
    double y(double value) const;          // value on the (possibly log) y axis
    double yLabel(double axisValue) const; // back from the axis to a value, for tick labels
};
ChartRange chartRange(const std::vector<ChartSeries>& series, bool logY);

// Both throw std::runtime_error naming the path if it cannot be written.
void writeLineChartSvg(const std::string& path, const std::string& title, const std::string& yLabel,
                       const std::vector<ChartSeries>& series, bool logY);
void writeLineChartPng(const std::string& path, const std::string& title, const std::string& yLabel,
                       const std::vector<ChartSeries>& series, bool logY);

} // namespace plab::cli
