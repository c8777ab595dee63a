// Names of rounding and overflow modes.
#include "numerics/rounding.h"

#include "numerics/format_spec.h"

#include <string>

namespace plab {

std::string_view toString(Rounding rounding) {
    switch (rounding) {
    case Rounding::NearestEven:
        return "nearest-even";
    case Rounding::NearestAway:
        return "nearest-away";
    case Rounding::TowardZero:
        return "toward-zero";
    case Rounding::Stochastic:
        return "stochastic";
    }
    return "?";
}

std::string_view toString(Overflow overflow) {
    return overflow == Overflow::Saturate ? "saturate" : "inf";
}

Rounding parseRounding(std::string_view text) {
    for (Rounding r : kAllRoundings)
        if (toString(r) == text)
            return r;
    throw FormatError("rounding \"" + std::string(text) +
                      "\": expected nearest-even, nearest-away, toward-zero or stochastic");
}

Overflow parseOverflow(std::string_view text) {
    if (text == "saturate")
        return Overflow::Saturate;
    if (text == "inf")
        return Overflow::Inf;
    throw FormatError("overflow \"" + std::string(text) + "\": expected saturate or inf");
}

Overflow defaultOverflow(const FormatSpec& format) {
    return format.hasInf() ? Overflow::Inf : Overflow::Saturate;
}

QuantConfig QuantConfig::forFormat(FormatSpec format, Rounding rounding) {
    QuantConfig config;
    config.overflow = defaultOverflow(format);
    config.format = std::move(format);
    config.rounding = rounding;
    return config;
}

bool QuantConfig::isIdentity() const {
    static const FormatSpec float32 = parseFormat("fp32");
    return format.sameParameters(float32) && overflow == Overflow::Inf;
}

} // namespace plab
