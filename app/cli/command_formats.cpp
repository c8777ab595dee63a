// `formats [--format F]`: the table of formats and their properties, then the block formats.
#include "cli_commands.h"

#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "numerics/rounding.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace plab::cli {
namespace {

std::string layout(const FormatSpec& f) {
    std::string s = (f.isSigned ? "S1E" : "E") + std::to_string(f.exponentBits) + "M" +
                    std::to_string(f.mantissaBits);
    return s;
}

// A power of two as 2^k, otherwise %.6g.
std::string limitText(double v) {
    int e;
    const double m = std::frexp(v, &e);
    char buf[48];
    if (m == 0.5 && (e - 1 < -4 || e - 1 > 16))
        std::snprintf(buf, sizeof buf, "2^%d", e - 1);
    else
        std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string specials(const FormatSpec& f) {
    switch (f.specials) {
    case SpecialValues::Ieee:
        return "Inf+NaN";
    case SpecialValues::Fn:
        return "NaN only";
    case SpecialValues::Fnuz:
        return "NaN=0x80..";
    case SpecialValues::None:
        return "none";
    }
    return "?";
}

void printHeader() {
    std::printf("%-14s %-9s %5s %12s %10s %10s %10s %7s %11s %-10s %s\n", "format", "layout",
                "bias", "max finite", "min normal", "min subn.", "epsilon", "binades",
                "finite vals", "inf/nan", "default overflow");
}

void printRow(const FormatSpec& f) {
    const std::string minSub = (f.hasZero && f.subnormals && f.mantissaBits > 0)
                                   ? limitText(f.minPositive())
                                   : std::string("-");
    std::printf("%-14s %-9s %5d %12s %10s %10s %10s %7.2f %11llu %-10s %s\n", f.name.c_str(),
                layout(f).c_str(), f.bias, limitText(f.maxFinite()).c_str(),
                limitText(f.minNormal()).c_str(), minSub.c_str(), limitText(f.epsilon()).c_str(),
                f.binades(), static_cast<unsigned long long>(f.finiteValueCount()),
                specials(f).c_str(), std::string(toString(defaultOverflow(f))).c_str());
}

void printBlockHeader() {
    std::printf("%-14s %-10s %6s %-26s %s\n", "format", "element", "block", "scale", "description");
}

void printBlockRow(const BlockFormat& b) {
    std::printf("%-14s %-10s %6d %-26s %s\n", b.name.c_str(), b.element.name.c_str(),
                b.scheme.blockSize, scaleFormatName(b.scheme).c_str(), b.description.c_str());
}

void printBlockFormat(const BlockFormat& b) {
    printBlockHeader();
    printBlockRow(b);
}

void printBlockFormats() {
    std::printf("\nBlock formats (quantize --format NAME; scaling.policy mx, nvfp4, blockwise "
                "in training):\n");
    printBlockHeader();
    for (const BlockFormat& b : blockFormats())
        printBlockRow(b);
}

} // namespace

Command addFormatsCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("formats", "Table of number formats and their properties");
    auto format = std::make_shared<std::string>();
    cmd->add_option("--format", *format,
                    "Show one format: a name or a custom eXmY[:bias=B][:nosub][:fn|:fnuz|:finite]"
                    "[:unsigned][:nozero]");
    return {cmd, [format] {
                if (!format->empty()) {
                    if (const BlockFormat* block = findBlockFormat(*format)) {
                        printBlockFormat(*block); // a block format, as `formats` lists it
                        return 0;
                    }
                    const FormatSpec spec = parseFormat(*format); // throws before the header
                    printHeader();
                    printRow(spec);
                    return 0;
                }
                printHeader();
                for (const FormatSpec& f : namedFormats())
                    printRow(f);
                printBlockFormats();
                std::printf(
                    "\nCustom formats: eXmY[:bias=B][:sub|:nosub][:ieee|:fn|:fnuz|:finite]"
                    "[:signed|:unsigned][:nozero], e.g. e5m2:bias=16:nosub.\n"
                    "NaN inputs stay NaN in every format (NVIDIA's FP6/FP4 conversions give "
                    "+max instead; `quantize` shows that code in the bits column).\n");
                return 0;
            }};
}

} // namespace plab::cli
