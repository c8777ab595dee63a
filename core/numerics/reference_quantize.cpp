// The reference quantiser: the shared element function (quantize_element.h) with the rule made
// from a QuantConfig. Plain double arithmetic, one value at a time.
#include "numerics/reference_quantize.h"

namespace plab {

ElementRule makeElementRule(const QuantConfig& c) {
    const FormatSpec& f = c.format;
    ElementRule r;
    r.rounding = static_cast<int>(c.rounding);
    r.mantissaBits = f.mantissaBits;
    r.bias = f.bias;
    r.minNormalExponent = f.minNormalExponent();
    r.hasZero = f.hasZero;
    r.subnormals = f.subnormals;
    r.isSigned = f.isSigned;
    r.hasInf = f.hasInf();
    r.hasNan = f.hasNan();
    r.hasNegativeZero = f.hasNegativeZero();
    r.saturates = c.overflow == Overflow::Saturate || (!f.hasInf() && !f.hasNan());
    r.identity = c.isIdentity();
    r.maxFinite = static_cast<float>(f.maxFinite());
    r.lowest = f.hasZero ? 0.0f : static_cast<float>(f.minPositive());
    r.maxFiniteD = f.maxFinite();
    r.minNormal = f.minNormal();
    return r;
}

float quantizeReference(const QuantConfig& config, float x, std::uint32_t randomWord,
                        QuantClass* cls) {
    QuantClass dummy;
    return quantizeElement(makeElementRule(config), x, randomWord, cls ? *cls : dummy);
}

} // namespace plab
