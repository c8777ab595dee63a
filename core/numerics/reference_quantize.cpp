// Reference rounding in double precision: find the quantum 2^qe of x's binade (or of the
// subnormal range), round x / 2^qe to an integer by the rounding rule, then apply range rules.
#include "numerics/reference_quantize.h"

#include <cmath>
#include <limits>

namespace plab {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// What a finite value past max finite, or an Inf input, becomes in Overflow::Inf mode.
float overflowValue(const FormatSpec& f) {
    return f.hasInf() ? std::numeric_limits<float>::infinity() : kNaN;
}

bool saturates(const QuantConfig& c) {
    return c.overflow == Overflow::Saturate || (!c.format.hasInf() && !c.format.hasNan());
}

float withSign(float magnitude, bool negative) {
    return negative ? -magnitude : magnitude;
}

} // namespace

float quantizeReference(const QuantConfig& c, float x, std::uint32_t randomWord, QuantClass* cls) {
    const FormatSpec& f = c.format;
    QuantClass dummy;
    QuantClass& klass = cls ? *cls : dummy;
    const float maxFinite = static_cast<float>(f.maxFinite());
    const float lowest = f.hasZero ? 0.0f : static_cast<float>(f.minPositive());

    if (std::isnan(x)) {
        klass = QuantClass::NaN;
        return kNaN;
    }
    const bool negative = std::signbit(x);
    if (negative && !f.isSigned && x != 0.0f) {
        klass = QuantClass::Overflow; // below the range of an unsigned format
        return saturates(c) || !f.hasNan() ? lowest : kNaN;
    }
    if (std::isinf(x)) {
        klass = QuantClass::Overflow;
        return withSign(saturates(c) ? maxFinite : overflowValue(f), negative);
    }
    if (x == 0.0f) {
        klass = QuantClass::Zero;
        return withSign(f.hasZero ? 0.0f : lowest,
                        negative && f.isSigned && (!f.hasZero || f.hasNegativeZero()));
    }

    const double v = std::fabs(static_cast<double>(x));
    int frexpExp;
    std::frexp(v, &frexpExp);
    const int e = frexpExp - 1; // v in [2^e, 2^(e+1))
    const int emin = f.minNormalExponent();
    int qe;
    if (e >= emin)
        qe = e - f.mantissaBits;
    else if (f.hasZero && f.subnormals)
        qe = emin - f.mantissaBits;
    else
        qe = emin; // no subnormals: the only values below 2^emin are 0 (or none)
    const double scaled = std::ldexp(v, -qe); // exact
    const double whole = std::floor(scaled);
    const double frac = scaled - whole;
    bool up = false;
    switch (c.rounding) {
    case Rounding::NearestEven: {
        // Ties go to the even code. With mantissa bits that is an even significand; without
        // them, in the normal range, an even exponent field.
        const bool oddCode = (f.mantissaBits == 0 && e >= emin) ? ((e + f.bias) & 1) != 0
                                                                : std::fmod(whole, 2.0) == 1.0;
        up = frac > 0.5 || (frac == 0.5 && oddCode);
        break;
    }
    case Rounding::NearestAway:
        up = frac >= 0.5;
        break;
    case Rounding::TowardZero:
        break;
    case Rounding::Stochastic: {
        const double frac32 = std::floor(std::ldexp(frac, 32));
        up = static_cast<double>(randomWord) + frac32 >= std::ldexp(1.0, 32);
        break;
    }
    }
    const double rounded = std::ldexp(whole + (up ? 1.0 : 0.0), qe);

    if (rounded > f.maxFinite()) {
        klass = QuantClass::Overflow;
        const bool toMax = saturates(c) || c.rounding == Rounding::TowardZero;
        return withSign(toMax ? maxFinite : overflowValue(f), negative);
    }
    if (rounded == 0.0) {
        klass = QuantClass::Underflow;
        // Formats without a zero clamp to their smallest magnitude, keeping the sign.
        return withSign(f.hasZero ? 0.0f : lowest,
                        negative && f.isSigned && (!f.hasZero || f.hasNegativeZero()));
    }
    const bool subnormal = f.hasZero && rounded < f.minNormal();
    klass = subnormal ? QuantClass::Subnormal : QuantClass::Normal;
    return withSign(static_cast<float>(rounded), negative);
}

} // namespace plab
