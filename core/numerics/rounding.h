// Rounding and overflow modes, and QuantConfig: everything that decides how a float32 becomes a
// value of a format.
#pragma once

#include "numerics/format_spec.h"

#include <array>
#include <string_view>

namespace plab {

enum class Rounding {
    NearestEven, // IEEE default: ties to the even code
    NearestAway, // ties away from zero
    TowardZero,  // truncate; finite overflow gives max finite, as IEEE specifies
    Stochastic,  // round up with probability equal to the dropped fraction: unbiased
};

enum class Overflow {
    Saturate, // past max finite (and +-Inf inputs) becomes +-max finite
    Inf,      // Inf where the format has it, NaN where it has only NaN
};

inline constexpr std::array kAllRoundings = {Rounding::NearestEven, Rounding::NearestAway,
                                             Rounding::TowardZero, Rounding::Stochastic};

std::string_view toString(Rounding rounding);
std::string_view toString(Overflow overflow);
// Throw FormatError naming the text and the accepted spellings.
Rounding parseRounding(std::string_view text);
Overflow parseOverflow(std::string_view text);

// Inf for formats that have Inf, Saturate otherwise (FN formats, FP6, FP4, E8M0).
Overflow defaultOverflow(const FormatSpec& format);

struct QuantConfig {
    FormatSpec format;
    Rounding rounding = Rounding::NearestEven;
    Overflow overflow = Overflow::Inf;

    // A config with the format's default overflow mode.
    static QuantConfig forFormat(FormatSpec format, Rounding rounding = Rounding::NearestEven);
    // Float32 itself, Inf kept on overflow: a cast that converts nothing, so every value comes
    // out as its own bits (NaN payloads included), whatever the rounding. (A saturating float32
    // cast is not: Inf becomes the max, NaN the canonical quiet NaN.)
    bool isIdentity() const;
    bool operator==(const QuantConfig&) const = default;
};

} // namespace plab
