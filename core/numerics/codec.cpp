// encode()/decode(): the format's code layout, written out field by field.
#include "numerics/codec.h"

#include "numerics/reference_quantize.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace plab {
namespace {

std::uint32_t fieldMask(int bits) {
    return bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
}

std::uint32_t signBit(const FormatSpec& f) {
    return f.isSigned ? 1u << (f.exponentBits + f.mantissaBits) : 0u;
}

std::uint32_t maxFiniteCode(const FormatSpec& f) {
    const auto top = static_cast<std::uint32_t>(f.maxExponent() + f.bias);
    return (top << f.mantissaBits) | f.maxMantissaInTopBinade();
}

std::uint32_t nanCode(const FormatSpec& f) {
    if (f.specials == SpecialValues::Fnuz)
        return signBit(f);
    return fieldMask(f.exponentBits + f.mantissaBits); // all ones, positive
}

} // namespace

std::uint32_t encode(const QuantConfig& config, float x, std::uint32_t randomWord) {
    const FormatSpec& f = config.format;
    const float q = quantizeReference(config, x, randomWord);
    if (std::isnan(q)) {
        if (!f.hasNan())
            return maxFiniteCode(f);
        // Overflow to NaN keeps the input's sign (as NVIDIA's E4M3 does); NaN inputs do not.
        const bool keepSign = !std::isnan(x) && std::signbit(x) && f.specials == SpecialValues::Fn;
        return nanCode(f) | (keepSign ? signBit(f) : 0u);
    }
    const std::uint32_t sign = std::signbit(q) ? signBit(f) : 0u;
    const double a = std::fabs(static_cast<double>(q));
    if (std::isinf(q))
        return sign | (fieldMask(f.exponentBits) << f.mantissaBits);
    if (a == 0.0)
        return sign;
    const int emin = f.minNormalExponent();
    int frexpExp;
    std::frexp(a, &frexpExp);
    const int e = frexpExp - 1;
    if (f.hasZero && e < emin) // subnormal: field 0, mantissa counts quanta of 2^(emin - M)
        return sign | static_cast<std::uint32_t>(std::ldexp(a, f.mantissaBits - emin));
    const auto field = static_cast<std::uint32_t>(e + f.bias);
    const auto mant =
        static_cast<std::uint32_t>(std::ldexp(a, f.mantissaBits - e)) - (1u << f.mantissaBits);
    return sign | (field << f.mantissaBits) | mant;
}

float decode(const FormatSpec& f, std::uint32_t code) {
    const int m = f.mantissaBits;
    const std::uint32_t mant = code & fieldMask(m);
    const std::uint32_t field = (code >> m) & fieldMask(f.exponentBits);
    const bool negative = (code & signBit(f)) != 0;
    const std::uint32_t allOnes = fieldMask(f.exponentBits);
    // NaN codes keep their sign (an overflow to NaN remembers its direction), except FNUZ's,
    // whose single NaN code is the negative-zero pattern.
    const float nan =
        std::copysign(std::numeric_limits<float>::quiet_NaN(), negative ? -1.0f : 1.0f);
    switch (f.specials) {
    case SpecialValues::Ieee:
        if (field == allOnes)
            return mant != 0 ? nan
                             : (negative ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity();
        break;
    case SpecialValues::Fn:
        if (field == allOnes && mant == fieldMask(m))
            return nan;
        break;
    case SpecialValues::Fnuz:
        if (negative && field == 0 && mant == 0)
            return std::numeric_limits<float>::quiet_NaN();
        break;
    case SpecialValues::None:
        break;
    }
    double value;
    if (f.hasZero && field == 0)
        value =
            f.subnormals ? std::ldexp(static_cast<double>(mant), f.minNormalExponent() - m) : 0.0;
    else
        value =
            std::ldexp(static_cast<double>(mant + (1u << m)), static_cast<int>(field) - f.bias - m);
    const float v = static_cast<float>(value);
    return negative ? -v : v;
}

std::string codeToHex(const FormatSpec& f, std::uint32_t code) {
    const int digits = (f.totalBits() + 3) / 4;
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x", digits, code);
    return buf;
}

} // namespace plab
