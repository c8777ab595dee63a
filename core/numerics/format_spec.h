// FormatSpec: the parameters of a binary floating-point format (sign, exponent and mantissa widths,
// bias, subnormals, Inf/NaN convention) and the properties derived from them. Every named format
// (fp16, fp8-e4m3, ...) is just a FormatSpec with a name, so a custom eXmY with the same
// parameters behaves identically by construction.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

// How a format spends its top exponent codes (and, for FNUZ, the negative-zero code).
enum class SpecialValues {
    Ieee, // all-ones exponent: mantissa 0 is Inf, anything else NaN
    Fn,   // "finite": no Inf; only the all-ones code (exponent and mantissa) is NaN (OCP E4M3)
    Fnuz, // "finite, unsigned zero": no Inf, no -0; the code 1000...0 is the single NaN
    None, // every code is a finite number (OCP FP6 / FP4)
};

// Thrown for unknown names, malformed strings and impossible parameters; what() is one line
// naming the offending text and what was expected.
class FormatError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

struct FormatSpec {
    std::string name; // canonical spelling, e.g. "fp8-e4m3" or "e5m2:bias=16:nosub"
    int exponentBits = 8;
    int mantissaBits = 23;
    int bias = 127;
    bool subnormals = true;
    SpecialValues specials = SpecialValues::Ieee;
    bool isSigned = true;
    // False only for scale formats such as E8M0: exponent field 0 is an ordinary binade, so the
    // format has no zero and values below its minimum clamp to the minimum.
    bool hasZero = true;

    int totalBits() const { return (isSigned ? 1 : 0) + exponentBits + mantissaBits; }
    bool hasInf() const { return specials == SpecialValues::Ieee; }
    bool hasNan() const { return specials != SpecialValues::None; }
    bool hasNegativeZero() const { return isSigned && hasZero && specials != SpecialValues::Fnuz; }
    // Fewer exponent bits than FP32 (FP16, FP8, FP6, FP4): a tensor may not fit the range, so
    // recipes scale it (amax, blocks, the Hadamard transform, per-layer scaling) and a narrow
    // optimiser state is refused. BF16 and FP32 share FP32's range and take no scale.
    bool hasNarrowRange() const { return exponentBits < 8; }

    // Exponent of the smallest normal binade (1 - bias, or -bias when field 0 is a normal binade).
    int minNormalExponent() const { return hasZero ? 1 - bias : -bias; }
    // Exponent of the largest binade holding a finite value.
    int maxExponent() const;
    // Largest mantissa field in the top binade (all ones unless the NaN code lives there).
    std::uint32_t maxMantissaInTopBinade() const;

    double maxFinite() const;
    double minNormal() const;
    // Smallest positive value: the min subnormal, or minNormal() when subnormals are off.
    double minPositive() const;
    double epsilon() const;                 // 2^-mantissaBits: distance from 1 to the next value
    double binades() const;                 // log2(maxFinite / minPositive)
    std::uint64_t finiteValueCount() const; // distinct finite codes, counting +0 and -0 once each
    bool operator==(const FormatSpec&) const = default;

    // Parameters equal; the name does not take part.
    bool sameParameters(const FormatSpec& other) const;
};

// Parses a named format ("fp16", "fp8-e4m3", ...) or a custom one:
//   eXmY[:bias=B][:sub|:nosub][:ieee|:fn|:fnuz|:finite][:signed|:unsigned][:nozero]
// Throws FormatError naming the offending text.
FormatSpec parseFormat(std::string_view text);

// The built-in formats, in display order.
const std::vector<FormatSpec>& namedFormats();

// Other libraries' names for formats (ml_dtypes, PyTorch: "float8_e4m3fn", "bfloat16",
// "float4_e2m1fn", ...; "torch." in front is accepted) and the spec each is: parseFormat takes
// them wherever a format is taken, and the spec's name is ours ("fp8-e4m3").
struct FormatAlias {
    std::string_view name, spec;
};
const std::vector<FormatAlias>& formatAliases();

std::string_view toString(SpecialValues specials);

} // namespace plab
