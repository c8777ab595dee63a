// Bit patterns of a format: encode a float32 (rounded by a QuantConfig) to its code, decode a code
// back to float32. Codes are right-aligned in a uint32: sign, exponent field, mantissa field.
#pragma once

#include "numerics/rounding.h"

#include <cstdint>
#include <string>

namespace plab {

// The code of x rounded by config. NaN inputs give the format's canonical NaN (positive, all
// ones) and, for formats without NaN (FP6, FP4), +max finite: exactly NVIDIA's conversions.
std::uint32_t encode(const QuantConfig& config, float x, std::uint32_t randomWord = 0);

// The value of a code (bits above totalBits() are ignored). Exponent-field-0 codes of a format
// without subnormals decode to zero.
float decode(const FormatSpec& format, std::uint32_t code);

// "0x7e" style, zero-padded to the format's width in hex digits.
std::string codeToHex(const FormatSpec& format, std::uint32_t code);

} // namespace plab
