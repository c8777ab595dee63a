// Line charts: the shared data range; SVG as text; PNG through an RGB canvas, simple lines, a
// 5x7 bitmap font, and PNG chunks with zlib's deflate and CRC-32.
#include "line_chart.h"

#if PLAB_HAVE_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace plab::cli {
namespace {

// The PNG's zlib stream: zlib's deflate where the build has zlib; otherwise stored (uncompressed)
// deflate blocks, still a valid PNG, so that the CLI builds on machines with only a compiler.
std::vector<std::uint8_t> zlibStream(const std::vector<std::uint8_t>& raw,
                                     const std::string& path) {
#if PLAB_HAVE_ZLIB
    uLongf size = compressBound(static_cast<uLong>(raw.size()));
    std::vector<std::uint8_t> z(size);
    if (compress2(z.data(), &size, raw.data(), static_cast<uLong>(raw.size()), 9) != Z_OK)
        throw std::runtime_error(path + ": compression failed");
    z.resize(size);
    return z;
#else
    (void)path;
    std::vector<std::uint8_t> z = {0x78, 0x01};
    std::uint32_t a = 1, b = 0; // Adler-32
    for (std::size_t at = 0; at < raw.size() || at == 0; at += 65535) {
        const std::size_t len = std::min<std::size_t>(65535, raw.size() - at);
        const bool last = at + len >= raw.size();
        z.insert(z.end(), {static_cast<std::uint8_t>(last ? 1 : 0), static_cast<std::uint8_t>(len),
                           static_cast<std::uint8_t>(len >> 8), static_cast<std::uint8_t>(~len),
                           static_cast<std::uint8_t>(~len >> 8)});
        z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(at),
                 raw.begin() + static_cast<std::ptrdiff_t>(at + len));
        for (std::size_t i = at; i < at + len; ++i) {
            a = (a + raw[i]) % 65521;
            b = (b + a) % 65521;
        }
        if (last)
            break;
    }
    const std::uint32_t adler = (b << 16) | a;
    z.insert(z.end(),
             {static_cast<std::uint8_t>(adler >> 24), static_cast<std::uint8_t>(adler >> 16),
              static_cast<std::uint8_t>(adler >> 8), static_cast<std::uint8_t>(adler)});
    return z;
#endif
}

std::uint32_t crc32Of(const std::uint8_t* data, std::size_t n) {
#if PLAB_HAVE_ZLIB
    return static_cast<std::uint32_t>(crc32(crc32(0L, nullptr, 0), data, static_cast<uInt>(n)));
#else
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= data[i];
        for (int k = 0; k < 8; ++k)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
#endif
}

struct Rgb {
    std::uint8_t r, g, b;
};

// 5x7 glyphs, one byte per row, bit 4 = leftmost pixel. Lower case draws as upper case.
const std::uint8_t* glyph(char c) {
    static const std::uint8_t kDigits[10][7] = {
        {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}, {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},
        {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}, {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},
        {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}, {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},
        {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},
        {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}, {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}};
    static const std::uint8_t kLetters[26][7] = {
        {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}, {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E},
        {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}, {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C},
        {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}, {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10},
        {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}, {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11},
        {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}, {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C},
        {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F},
        {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}, {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11},
        {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10},
        {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}, {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11},
        {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}, {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},
        {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04},
        {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}, {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11},
        {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}};
    static const std::uint8_t kMinus[7] = {0, 0, 0, 0x1F, 0, 0, 0};
    static const std::uint8_t kDot[7] = {0, 0, 0, 0, 0, 0x0C, 0x0C};
    static const std::uint8_t kPlus[7] = {0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0};
    static const std::uint8_t kOpen[7] = {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02};
    static const std::uint8_t kClose[7] = {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08};
    static const std::uint8_t kSlash[7] = {0, 0x01, 0x02, 0x04, 0x08, 0x10, 0};
    static const std::uint8_t kUnderscore[7] = {0, 0, 0, 0, 0, 0, 0x1F};
    static const std::uint8_t kBlank[7] = {0, 0, 0, 0, 0, 0, 0};
    if (c >= '0' && c <= '9')
        return kDigits[c - '0'];
    if (std::isalpha(static_cast<unsigned char>(c)))
        return kLetters[std::toupper(static_cast<unsigned char>(c)) - 'A'];
    switch (c) {
    case '-':
        return kMinus;
    case '.':
        return kDot;
    case '+':
        return kPlus;
    case '(':
        return kOpen;
    case ')':
        return kClose;
    case '/':
        return kSlash;
    case '_':
        return kUnderscore;
    default:
        return kBlank;
    }
}

class Canvas {
public:
    Canvas(int w, int h)
        : m_w(w), m_h(h), m_px(static_cast<std::size_t>(w * h), Rgb{255, 255, 255}) {}
    void dot(int x, int y, Rgb c) {
        if (x >= 0 && y >= 0 && x < m_w && y < m_h)
            m_px[static_cast<std::size_t>(y * m_w + x)] = c;
    }
    void line(double x0, double y0, double x1, double y1, Rgb c, int thick = 1) {
        const int steps = static_cast<int>(std::max(std::fabs(x1 - x0), std::fabs(y1 - y0))) + 1;
        for (int i = 0; i <= steps; ++i) {
            const double t = static_cast<double>(i) / steps;
            const int x = static_cast<int>(std::lround(x0 + (x1 - x0) * t));
            const int y = static_cast<int>(std::lround(y0 + (y1 - y0) * t));
            for (int dx = 0; dx < thick; ++dx)
                for (int dy = 0; dy < thick; ++dy)
                    dot(x + dx, y + dy, c);
        }
    }
    void text(int x, int y, const std::string& s, Rgb c, int scale = 2) {
        for (char ch : s) {
            const std::uint8_t* g = glyph(ch);
            for (int row = 0; row < 7; ++row)
                for (int col = 0; col < 5; ++col)
                    if (g[row] & (0x10 >> col))
                        for (int a = 0; a < scale; ++a)
                            for (int b = 0; b < scale; ++b)
                                dot(x + col * scale + a, y + row * scale + b, c);
            x += 6 * scale;
        }
    }
    static int textWidth(const std::string& s, int scale = 2) {
        return static_cast<int>(s.size()) * 6 * scale;
    }
    void savePng(const std::string& path) const {
        std::vector<std::uint8_t> raw;
        raw.reserve(static_cast<std::size_t>(m_h * (1 + 3 * m_w)));
        for (int y = 0; y < m_h; ++y) {
            raw.push_back(0); // filter: none
            for (int x = 0; x < m_w; ++x) {
                const Rgb& p = m_px[static_cast<std::size_t>(y * m_w + x)];
                raw.insert(raw.end(), {p.r, p.g, p.b});
            }
        }
        const std::vector<std::uint8_t> z = zlibStream(raw, path);
        std::ofstream f(path, std::ios::binary);
        if (!f)
            throw std::runtime_error(path + ": cannot write");
        const std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
        f.write(reinterpret_cast<const char*>(signature), 8);
        auto be32 = [](std::vector<std::uint8_t>& v, std::uint32_t x) {
            v.insert(v.end(),
                     {static_cast<std::uint8_t>(x >> 24), static_cast<std::uint8_t>(x >> 16),
                      static_cast<std::uint8_t>(x >> 8), static_cast<std::uint8_t>(x)});
        };
        auto chunk = [&](const char* type, const std::vector<std::uint8_t>& data) {
            std::vector<std::uint8_t> out;
            be32(out, static_cast<std::uint32_t>(data.size()));
            out.insert(out.end(), type, type + 4);
            out.insert(out.end(), data.begin(), data.end());
            be32(out, crc32Of(out.data() + 4, out.size() - 4));
            f.write(reinterpret_cast<const char*>(out.data()),
                    static_cast<std::streamsize>(out.size()));
        };
        std::vector<std::uint8_t> header;
        be32(header, static_cast<std::uint32_t>(m_w));
        be32(header, static_cast<std::uint32_t>(m_h));
        header.insert(header.end(), {8, 2, 0, 0, 0}); // 8-bit RGB, no interlace
        chunk("IHDR", header);
        chunk("IDAT", z);
        chunk("IEND", {});
        if (!f)
            throw std::runtime_error(path + ": write failed");
    }

private:
    int m_w, m_h;
    std::vector<Rgb> m_px;
};

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

} // namespace

double ChartRange::y(double value) const {
    return logY ? std::log10(std::max(value, 1e-6)) : value;
}

double ChartRange::yLabel(double axisValue) const {
    return logY ? std::pow(10.0, axisValue) : axisValue;
}

ChartRange chartRange(const std::vector<ChartSeries>& series, bool logY) {
    ChartRange r{1e300, -1e300, 1e300, -1e300, logY};
    for (const ChartSeries& s : series)
        for (const auto& [x, y] : s.points)
            if (std::isfinite(y)) {
                r.x0 = std::min(r.x0, x);
                r.x1 = std::max(r.x1, x);
                r.y0 = std::min(r.y0, r.y(y));
                r.y1 = std::max(r.y1, r.y(y));
            }
    if (r.x0 > r.x1)
        r = {0.0, 1.0, 0.0, 1.0, logY};
    if (r.y1 - r.y0 < 1e-9)
        r.y1 = r.y0 + 1;
    if (r.x1 - r.x0 < 1e-9)
        r.x1 = r.x0 + 1;
    return r;
}

// A line chart as SVG: one polyline per run, axes with min/max labels and a legend.
void writeLineChartSvg(const std::string& path, const std::string& title, const std::string& yLabel,
                       const std::vector<ChartSeries>& series, bool logY) {
    constexpr double W = 800, H = 480, L = 70, R = 180, T = 40, B = 50;
    const ChartRange range = chartRange(series, logY);
    const double x0 = range.x0, x1 = range.x1, y0 = range.y0, y1 = range.y1;
    auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    auto py = [&](double y) { return H - B - (range.y(y) - y0) / (y1 - y0) * (H - T - B); };
    const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                            "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
    std::ofstream f(path);
    if (!f)
        throw std::runtime_error(path + ": cannot write");
    f << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
         "fill='white'/>\n"
      << "<text x='" << W / 2 << "' y='22' text-anchor='middle' font-size='15'>" << title
      << "</text>\n"
      << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B
      << "' stroke='black'/>\n"
      << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B
      << "' stroke='black'/>\n"
      << "<text x='" << (L + W - R) / 2 << "' y='" << H - 12
      << "' text-anchor='middle'>step</text>\n"
      << "<text x='16' y='" << (T + H - B) / 2 << "' transform='rotate(-90 16 " << (T + H - B) / 2
      << ")' text-anchor='middle'>" << yLabel << (logY ? " (log scale)" : "") << "</text>\n";
    auto label = [&](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", range.yLabel(v));
        return std::string(buf);
    };
    f << "<text x='" << L - 6 << "' y='" << H - B << "' text-anchor='end'>" << label(y0)
      << "</text>\n"
      << "<text x='" << L - 6 << "' y='" << T + 10 << "' text-anchor='end'>" << label(y1)
      << "</text>\n"
      << "<text x='" << L << "' y='" << H - B + 16 << "' text-anchor='middle'>" << x0 << "</text>\n"
      << "<text x='" << W - R << "' y='" << H - B + 16 << "' text-anchor='middle'>" << x1
      << "</text>\n";
    int i = 0;
    for (const ChartSeries& s : series) {
        const char* color = colors[i % 10];
        f << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
        for (const auto& [x, y] : s.points)
            if (std::isfinite(y))
                f << px(x) << ',' << py(y) << ' ';
        f << "'/>\n<text x='" << W - R + 10 << "' y='" << T + 16 * i + 10 << "' fill='" << color
          << "'>" << s.name << "</text>\n";
        ++i;
    }
    f << "</svg>\n";
}

void writeLineChartPng(const std::string& path, const std::string& title, const std::string& yLabel,
                       const std::vector<ChartSeries>& series, bool logY) {
    constexpr int W = 1080, H = 560, L = 90, R = 300, T = 50, B = 60;
    const ChartRange range = chartRange(series, logY);
    const double x0 = range.x0, x1 = range.x1, y0 = range.y0, y1 = range.y1;
    auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    auto py = [&](double y) { return H - B - (range.y(y) - y0) / (y1 - y0) * (H - T - B); };
    const Rgb kColors[] = {{31, 119, 180},  {214, 39, 40}, {44, 160, 44},   {255, 127, 14},
                           {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {23, 190, 207},
                           {127, 127, 127}, {188, 189, 34}};
    const Rgb black{0, 0, 0}, grey{200, 200, 200};
    Canvas c(W, H);
    for (int i = 1; i < 4; ++i) { // light grid
        const double gy = T + (H - T - B) * i / 4.0, gx = L + (W - L - R) * i / 4.0;
        c.line(L, gy, W - R, gy, grey);
        c.line(gx, T, gx, H - B, grey);
    }
    c.line(L, H - B, W - R, H - B, black, 2);
    c.line(L, T, L, H - B, black, 2);
    c.text((W - R + L - Canvas::textWidth(title, 3)) / 2, 12, title, black, 3);
    c.text((W - R + L - Canvas::textWidth("step")) / 2, H - 24, "step", black);
    const std::string yText = yLabel + (logY ? " (log)" : "");
    c.text(8, T - 30, yText, black);
    auto yTick = [&](double v) { return number(range.yLabel(v)); };
    c.text(L - 8 - Canvas::textWidth(yTick(y0)), H - B - 7, yTick(y0), black);
    c.text(L - 8 - Canvas::textWidth(yTick(y1)), T - 7, yTick(y1), black);
    c.text(L - 6, H - B + 8, number(x0), black);
    c.text(W - R - Canvas::textWidth(number(x1)) / 2, H - B + 8, number(x1), black);
    for (std::size_t i = 0; i < series.size(); ++i) {
        const Rgb color = kColors[i % 10];
        bool have = false;
        double lx = 0, ly = 0;
        for (const auto& [x, y] : series[i].points) {
            if (!std::isfinite(y)) {
                have = false;
                continue;
            }
            const double sx = px(x), sy = py(y);
            if (have)
                c.line(lx, ly, sx, sy, color, 2);
            have = true;
            lx = sx;
            ly = sy;
        }
        const int ly0 = T + 10 + 24 * static_cast<int>(i);
        c.line(W - R + 16, ly0 + 7, W - R + 40, ly0 + 7, color, 3);
        c.text(W - R + 48, ly0, series[i].name, color);
    }
    c.savePng(path);
}

} // namespace plab::cli
