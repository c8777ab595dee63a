#include "charts.h"

#if PLAB_HAVE_CAIRO
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <stdexcept>

namespace plab::cli {

void addBandSeries(std::vector<ChartSeries>& series, const std::string& name, const SeedBand& band,
                   bool edges) {
    const SeedBand drawn = band.drawn();
    ChartSeries mean{name, {}}, low{name + " -95%", {}}, high{name + " +95%", {}};
    for (std::size_t i = 0; i < drawn.steps.size(); ++i) {
        mean.points.emplace_back(drawn.steps[i], drawn.mean[i]);
        if (drawn.runs[i] >= 2) {
            low.points.emplace_back(drawn.steps[i], drawn.low[i]);
            high.points.emplace_back(drawn.steps[i], drawn.high[i]);
        }
    }
    series.push_back(std::move(mean));
    if (edges && !low.points.empty()) {
        series.push_back(std::move(low));
        series.push_back(std::move(high));
    }
}

#if !PLAB_HAVE_CAIRO
bool chartsAvailable() {
    return false;
}
void writeLineCharts(const std::string& basePath, const std::string&, const std::string&,
                     const std::string&, const std::vector<ChartSeries>&, bool) {
    throw std::runtime_error(basePath + ": this build has no Cairo to draw charts with");
}
void writeErrorBarCharts(const std::string& basePath, const std::string&, const std::string&,
                         const std::vector<ChartEstimate>&) {
    throw std::runtime_error(basePath + ": this build has no Cairo to draw charts with");
}
#else
bool chartsAvailable() {
    return true;
}

namespace {

constexpr double kWidth = 820, kHeight = 500, kLeft = 80, kRight = 190, kTop = 44, kBottom = 70;
constexpr double kColors[][3] = {{0.12, 0.47, 0.71}, {0.84, 0.15, 0.16}, {0.17, 0.63, 0.17},
                                 {1.00, 0.50, 0.05}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
                                 {0.89, 0.47, 0.76}, {0.09, 0.75, 0.81}, {0.50, 0.50, 0.50},
                                 {0.74, 0.74, 0.13}};

struct Axis {
    double lo = 0.0, hi = 1.0;
    bool log = false;
    double map(double v) const { return log ? std::log10(v) : v; }
    double unmap(double v) const { return log ? std::pow(10.0, v) : v; }
    void include(double v) {
        if (!std::isfinite(v) || (log && v <= 0.0))
            return;
        lo = std::min(lo, map(v));
        hi = std::max(hi, map(v));
    }
    void settle() {
        if (lo > hi)
            lo = 0.0, hi = 1.0;
        if (hi - lo < 1e-12)
            hi = lo + 1.0;
    }
};

std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", v);
    return text;
}

// The frame, the title, axis labels and five ticks per axis (y from the axis, x as given).
void drawFrame(cairo_t* cr, const std::string& title, const std::string& xLabel,
               const std::string& yLabel, const Axis& y,
               const std::function<std::string(int)>& xTick, int xTicks) {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 16);
    cairo_move_to(cr, kLeft, 28);
    cairo_show_text(cr, title.c_str());
    cairo_set_font_size(cr, 11);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, kLeft, kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom);
    cairo_stroke(cr);
    const double plotH = kHeight - kTop - kBottom, plotW = kWidth - kLeft - kRight;
    for (int i = 0; i <= 4; ++i) {
        const double at = y.lo + (y.hi - y.lo) * i / 4.0;
        const double py = kHeight - kBottom - plotH * i / 4.0;
        cairo_move_to(cr, kLeft - 4, py);
        cairo_line_to(cr, kLeft, py);
        cairo_stroke(cr);
        const std::string text = number(y.unmap(at));
        cairo_text_extents_t e;
        cairo_text_extents(cr, text.c_str(), &e);
        cairo_move_to(cr, kLeft - 8 - e.width, py + 4);
        cairo_show_text(cr, text.c_str());
    }
    for (int i = 0; i < xTicks; ++i) {
        const double px = xTicks == 1 ? kLeft + plotW / 2 : kLeft + plotW * i / (xTicks - 1.0);
        const std::string text = xTick(i);
        cairo_text_extents_t e;
        cairo_text_extents(cr, text.c_str(), &e);
        cairo_move_to(cr, px - e.width / 2, kHeight - kBottom + 16);
        cairo_show_text(cr, text.c_str());
    }
    cairo_move_to(cr, kLeft + plotW / 2 - 20, kHeight - 18);
    cairo_show_text(cr, xLabel.c_str());
    cairo_save(cr);
    cairo_move_to(cr, 18, kTop + plotH / 2 + 30);
    cairo_rotate(cr, -M_PI / 2);
    cairo_show_text(cr, (yLabel + (y.log ? " (log)" : "")).c_str());
    cairo_restore(cr);
}

// Draws into a PNG, an SVG and a PDF surface in turn and checks every write.
void writeAll(const std::string& basePath, const std::function<void(cairo_t*)>& draw) {
    const auto check = [](cairo_status_t status, const std::string& path) {
        if (status != CAIRO_STATUS_SUCCESS)
            throw std::runtime_error(path + ": cannot write the chart (" +
                                     cairo_status_to_string(status) + ")");
    };
    const auto render = [&](cairo_surface_t* surface, const std::string& path) {
        check(cairo_surface_status(surface), path);
        cairo_t* cr = cairo_create(surface);
        draw(cr);
        const cairo_status_t drawn = cairo_status(cr);
        cairo_destroy(cr);
        check(drawn, path);
    };
    const std::string png = basePath + ".png", svg = basePath + ".svg", pdf = basePath + ".pdf";
    cairo_surface_t* image = cairo_image_surface_create(
        CAIRO_FORMAT_RGB24, static_cast<int>(kWidth), static_cast<int>(kHeight));
    try {
        render(image, png);
        check(cairo_surface_write_to_png(image, png.c_str()), png);
    } catch (...) {
        cairo_surface_destroy(image);
        throw;
    }
    cairo_surface_destroy(image);
    for (const auto& [path, make] :
         {std::pair<std::string, cairo_surface_t* (*)(const char*, double, double)>{
              svg, cairo_svg_surface_create},
          {pdf, cairo_pdf_surface_create}}) {
        cairo_surface_t* surface = make(path.c_str(), kWidth, kHeight);
        try {
            render(surface, path);
            cairo_surface_finish(surface); // the file is written here
            check(cairo_surface_status(surface), path);
        } catch (...) {
            cairo_surface_destroy(surface);
            throw;
        }
        cairo_surface_destroy(surface);
    }
}

void legendEntry(cairo_t* cr, int i, const std::string& name) {
    const double* c = kColors[i % std::size(kColors)];
    const double y = kTop + 14 + 16 * i;
    cairo_set_source_rgb(cr, c[0], c[1], c[2]);
    cairo_rectangle(cr, kWidth - kRight + 14, y - 8, 10, 10);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, kWidth - kRight + 30, y + 1);
    cairo_show_text(cr, name.substr(0, 26).c_str());
}

} // namespace

void writeLineCharts(const std::string& basePath, const std::string& title,
                     const std::string& xLabel, const std::string& yLabel,
                     const std::vector<ChartSeries>& series, bool logY) {
    Axis x, y;
    x.lo = y.lo = std::numeric_limits<double>::infinity();
    x.hi = y.hi = -std::numeric_limits<double>::infinity();
    y.log = logY;
    for (const ChartSeries& s : series)
        for (const auto& [px, py] : s.points)
            if (std::isfinite(py) && (!logY || py > 0.0)) {
                x.include(px);
                y.include(py);
            }
    x.settle();
    y.settle();
    writeAll(basePath, [&](cairo_t* cr) {
        drawFrame(
            cr, title, xLabel, yLabel, y,
            [&](int i) { return number(x.lo + (x.hi - x.lo) * i / 4.0); }, 5);
        const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kTop - kBottom;
        cairo_set_line_width(cr, 1.5);
        for (std::size_t s = 0; s < series.size(); ++s) {
            const double* c = kColors[s % std::size(kColors)];
            cairo_set_source_rgb(cr, c[0], c[1], c[2]);
            bool drawing = false;
            for (const auto& [px, py] : series[s].points) {
                if (!std::isfinite(py) || (logY && py <= 0.0)) {
                    drawing = false; // a gap where there is no value
                    continue;
                }
                const double u = kLeft + (px - x.lo) / (x.hi - x.lo) * plotW;
                const double v = kHeight - kBottom - (y.map(py) - y.lo) / (y.hi - y.lo) * plotH;
                drawing ? cairo_line_to(cr, u, v) : cairo_move_to(cr, u, v);
                drawing = true;
            }
            cairo_stroke(cr);
            legendEntry(cr, static_cast<int>(s), series[s].name);
        }
    });
}

void writeErrorBarCharts(const std::string& basePath, const std::string& title,
                         const std::string& yLabel, const std::vector<ChartEstimate>& estimates) {
    Axis y;
    y.lo = std::numeric_limits<double>::infinity();
    y.hi = -std::numeric_limits<double>::infinity();
    for (const ChartEstimate& e : estimates) {
        const double half = std::isfinite(e.half) ? e.half : 0.0;
        y.include(e.mean - half);
        y.include(e.mean + half);
    }
    y.settle();
    const double pad = (y.hi - y.lo) * 0.08;
    y.lo -= pad;
    y.hi += pad;
    const int n = static_cast<int>(estimates.size());
    writeAll(basePath, [&](cairo_t* cr) {
        drawFrame(
            cr, title, "", yLabel, y, [](int) { return std::string(); }, 0);
        const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kTop - kBottom;
        const auto yOf = [&](double v) {
            return kHeight - kBottom - (v - y.lo) / (y.hi - y.lo) * plotH;
        };
        cairo_set_line_width(cr, 1.5);
        for (int i = 0; i < n; ++i) {
            const ChartEstimate& e = estimates[static_cast<std::size_t>(i)];
            const double u = kLeft + plotW * (i + 0.5) / n;
            const double* c = kColors[i % std::size(kColors)];
            cairo_set_source_rgb(cr, c[0], c[1], c[2]);
            if (std::isfinite(e.mean)) {
                if (std::isfinite(e.half)) { // the interval, with caps
                    cairo_move_to(cr, u, yOf(e.mean - e.half));
                    cairo_line_to(cr, u, yOf(e.mean + e.half));
                    for (const double end : {e.mean - e.half, e.mean + e.half}) {
                        cairo_move_to(cr, u - 6, yOf(end));
                        cairo_line_to(cr, u + 6, yOf(end));
                    }
                    cairo_stroke(cr);
                }
                cairo_arc(cr, u, yOf(e.mean), 4, 0, 2 * M_PI);
                cairo_fill(cr);
            }
            legendEntry(cr, i, e.label);
        }
    });
}

#endif // PLAB_HAVE_CAIRO

} // namespace plab::cli
