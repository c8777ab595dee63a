// One element's quantisation and histogram bin, written once for the CPU reference and the CUDA
// kernel (plain C++ with __host__ __device__ under nvcc: no library calls but frexp/ldexp/floor,
// which both sides have). The readable reference (reference_quantize.cpp) is this function, so
// the GPU computes exactly what the CPU tests hold bit-exact against NVIDIA's conversions.
#pragma once

#include "numerics/philox.h" // PLAB_HOST_DEVICE
#include "numerics/quant_stats.h"

#include <cstdint>
#include <cstring>
#include <math.h>

namespace plab {

// Everything quantizeElement needs about a QuantConfig, flattened to plain values so that it can
// be passed to a GPU kernel by value. makeElementRule() (reference_quantize.h) fills it.
struct ElementRule {
    int rounding = 0; // static_cast<int>(Rounding)
    int mantissaBits = 0;
    int bias = 0;
    int minNormalExponent = 0;
    bool hasZero = true, subnormals = true, isSigned = true;
    bool hasInf = true, hasNan = true, hasNegativeZero = true;
    bool saturates = false;  // Overflow::Saturate, or a format with neither Inf nor NaN
    bool identity = false;   // QuantConfig::isIdentity(): x comes out as its own bits
    float maxFinite = 0.0f;  // exact in float32 (validated formats)
    float lowest = 0.0f;     // 0, or the min positive value of a format without zero
    double maxFiniteD = 0.0; // the same, as doubles for the comparisons
    double minNormal = 0.0;
};

namespace element {

inline PLAB_HOST_DEVICE std::uint32_t bitsOf(float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
}
inline PLAB_HOST_DEVICE float floatOf(std::uint32_t u) {
    float x;
    std::memcpy(&x, &u, 4);
    return x;
}
inline PLAB_HOST_DEVICE float withSign(float magnitude, bool negative) {
    return negative ? -magnitude : magnitude;
}
inline PLAB_HOST_DEVICE float nanValue() {
    return floatOf(0x7FC00000u);
}
inline PLAB_HOST_DEVICE float infValue() {
    return floatOf(0x7F800000u);
}

} // namespace element

// Rounds x by the rule and returns it as float32 (always exact); sets cls. randomWord is used
// only by stochastic rounding: round up when randomWord + floor(2^32 * dropped fraction) >= 2^32.
// Plan: find the quantum 2^qe of x's binade (or of the subnormal range), round x / 2^qe to an
// integer by the rounding rule, then apply the range rules.
inline PLAB_HOST_DEVICE float quantizeElement(const ElementRule& f, float x,
                                              std::uint32_t randomWord, QuantClass& cls) {
    using namespace element;
    const std::uint32_t bits = bitsOf(x);
    const std::uint32_t magnitudeBits = bits & 0x7FFFFFFFu;
    const bool negative = (bits >> 31) != 0;
    const float overflowValue = f.hasInf ? infValue() : nanValue(); // Overflow::Inf mode

    if (f.identity) { // float32 itself: classified, and returned bit for bit
        cls = magnitudeBits > 0x7F800000u    ? QuantClass::NaN
              : magnitudeBits == 0x7F800000u ? QuantClass::Overflow
              : magnitudeBits == 0           ? QuantClass::Zero
              : magnitudeBits < 0x800000u    ? QuantClass::Subnormal
                                             : QuantClass::Normal;
        return x;
    }
    if (magnitudeBits > 0x7F800000u) {
        cls = QuantClass::NaN;
        return nanValue();
    }
    if (negative && !f.isSigned && magnitudeBits != 0) {
        cls = QuantClass::Overflow; // below the range of an unsigned format
        return f.saturates || !f.hasNan ? f.lowest : nanValue();
    }
    if (magnitudeBits == 0x7F800000u) {
        cls = QuantClass::Overflow;
        return withSign(f.saturates ? f.maxFinite : overflowValue, negative);
    }
    const bool keepNegativeZero = negative && f.isSigned && (!f.hasZero || f.hasNegativeZero);
    if (magnitudeBits == 0) {
        cls = QuantClass::Zero;
        return withSign(f.hasZero ? 0.0f : f.lowest, keepNegativeZero);
    }

    const double v = static_cast<double>(floatOf(magnitudeBits));
    int frexpExp;
    frexp(v, &frexpExp);
    const int e = frexpExp - 1; // v in [2^e, 2^(e+1))
    const int emin = f.minNormalExponent;
    int qe;
    if (e >= emin)
        qe = e - f.mantissaBits;
    else if (f.hasZero && f.subnormals)
        qe = emin - f.mantissaBits;
    else
        qe = emin; // no subnormals: the only values below 2^emin are 0 (or none)
    const double scaled = ldexp(v, -qe); // exact
    const double whole = floor(scaled);
    const double frac = scaled - whole;
    bool up = false;
    switch (f.rounding) {
    case 0: { // nearest, ties to even
        // Ties go to the even code. With mantissa bits that is an even significand; without
        // them, in the normal range, an even exponent field. whole < 2^25, so the cast is exact.
        const bool oddCode = (f.mantissaBits == 0 && e >= emin)
                                 ? ((e + f.bias) & 1) != 0
                                 : (static_cast<std::int64_t>(whole) & 1) != 0;
        up = frac > 0.5 || (frac == 0.5 && oddCode);
        break;
    }
    case 1: // nearest, ties away from zero
        up = frac >= 0.5;
        break;
    case 2: // toward zero
        break;
    default: { // stochastic
        const double frac32 = floor(ldexp(frac, 32));
        up = static_cast<double>(randomWord) + frac32 >= 4294967296.0;
        break;
    }
    }
    const double rounded = ldexp(whole + (up ? 1.0 : 0.0), qe);

    if (rounded > f.maxFiniteD) {
        cls = QuantClass::Overflow;
        const bool toMax = f.saturates || f.rounding == 2;
        return withSign(toMax ? f.maxFinite : overflowValue, negative);
    }
    if (rounded == 0.0) {
        cls = QuantClass::Underflow;
        // Formats without a zero clamp to their smallest magnitude, keeping the sign.
        return withSign(f.hasZero ? 0.0f : f.lowest, keepNegativeZero);
    }
    const bool subnormal = f.hasZero && rounded < f.minNormal;
    cls = subnormal ? QuantClass::Subnormal : QuantClass::Normal;
    return withSign(static_cast<float>(rounded), negative);
}

// The log2|x| histogram bin of x from its bits: binade from the exponent (float32 subnormals
// renormalised), quarter from the mantissa against the first mantissa at or above 2^(j/4).
// Equal to histogramBin() (quant_stats.cpp, the readable definition); tests hold them together.
inline PLAB_HOST_DEVICE int histogramBinOfBits(std::uint32_t bits) {
    constexpr std::uint32_t kQuarter1 = 0x1837F1u, kQuarter2 = 0x3504F4u, kQuarter3 = 0x5744FDu;
    const std::uint32_t a = bits & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return kHistNanBin;
    if (a == 0x7F800000u)
        return kHistInfBin;
    if (a == 0)
        return kHistZeroBin;
    int e = static_cast<int>(a >> 23) - 127;
    std::uint32_t m = a & 0x7FFFFFu;
    if ((a >> 23) == 0) { // float32 subnormal: shift the leading one up to bit 23
        e = -126;
        while ((m & 0x800000u) == 0) {
            m <<= 1;
            --e;
        }
        m &= 0x7FFFFFu;
    }
    const int quarter = (m >= kQuarter1) + (m >= kQuarter2) + (m >= kQuarter3);
    return 1 + (e - kHistMinExponent) * kHistBinsPerBinade + quarter;
}

} // namespace plab
