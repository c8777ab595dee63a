// Derived properties, validation and parsing of FormatSpec.
#include "numerics/format_spec.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

namespace plab {
namespace {

std::string lowerCase(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    for (;;) {
        std::size_t pos = text.find(sep, start);
        parts.push_back(text.substr(start, pos - start));
        if (pos == std::string_view::npos)
            return parts;
        start = pos + 1;
    }
}

bool parseInt(std::string_view text, int& value) {
    if (text.empty())
        return false;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    return ec == std::errc() && ptr == end;
}

[[noreturn]] void fail(std::string_view text, const std::string& why) {
    throw FormatError("format \"" + std::string(text) + "\": " + why);
}

// Exponent field of the top binade that holds finite values.
int topExponentField(const FormatSpec& f) {
    const int allOnes = (1 << f.exponentBits) - 1;
    if (f.specials == SpecialValues::Ieee)
        return allOnes - 1;
    if (f.specials == SpecialValues::Fn && f.mantissaBits == 0)
        return allOnes - 1; // the whole top field is the NaN code
    return allOnes;
}

FormatSpec makeNamed(std::string name, int e, int m, int bias, SpecialValues specials,
                     bool isSigned = true, bool hasZero = true) {
    FormatSpec f;
    f.name = std::move(name);
    f.exponentBits = e;
    f.mantissaBits = m;
    f.bias = bias;
    f.specials = specials;
    f.isSigned = isSigned;
    f.hasZero = hasZero;
    f.subnormals = hasZero;
    return f;
}

// Canonical custom spelling: only the options that differ from the eXmY defaults.
std::string customName(const FormatSpec& f) {
    // Appends rather than operator+ chains: GCC 12 warns falsely (-Wrestrict) on the latter.
    std::string name = "e";
    name += std::to_string(f.exponentBits);
    name += 'm';
    name += std::to_string(f.mantissaBits);
    if (f.bias != (1 << (f.exponentBits - 1)) - 1) {
        name += ":bias=";
        name += std::to_string(f.bias);
    }
    if (!f.hasZero)
        name += ":nozero";
    else if (!f.subnormals)
        name += ":nosub";
    if (f.specials != SpecialValues::Ieee) {
        name += ':';
        name += toString(f.specials);
    }
    if (!f.isSigned)
        name += ":unsigned";
    return name;
}

void validate(const FormatSpec& f, std::string_view text) {
    if (f.exponentBits < 1 || f.exponentBits > 8)
        fail(text, "exponent bits must be 1..8 (float32 holds every value), got " +
                       std::to_string(f.exponentBits));
    if (f.mantissaBits < 0 || f.mantissaBits > 23)
        fail(text, "mantissa bits must be 0..23, got " + std::to_string(f.mantissaBits));
    if (f.specials == SpecialValues::Ieee && f.mantissaBits == 0)
        fail(text, "ieee Inf/NaN needs at least one mantissa bit; add :fn or :finite");
    if (f.specials == SpecialValues::Fnuz && (!f.isSigned || !f.hasZero))
        fail(text, "fnuz takes its NaN from the negative-zero code, so it needs a signed format "
                   "with a zero");
    if (f.maxFinite() <= 0.0)
        fail(text, "has no finite nonzero values");
    // e1mY with Inf/NaN: the only nonzero exponent field is taken by the specials. Such a format
    // is a fixed-point grid, and the statistics (subnormal vs normal) would be meaningless.
    if (f.maxExponent() < f.minNormalExponent())
        fail(text, "has no normal values (its one nonzero exponent field holds Inf/NaN); use more "
                   "exponent bits, or :fn or :finite");
    if (f.maxFinite() > std::numeric_limits<float>::max())
        fail(text, "bias " + std::to_string(f.bias) +
                       " too small: its largest value exceeds float32's range (~3.4e38)");
    // Every value of the format must be a float32, or the kernels' float32 arithmetic cannot
    // hold it: the finest step (the subnormal quantum, or without subnormals the lowest normal
    // binade's) must be at least float32's 2^-149. Found by fuzz_format: e5m7:bias=144:nosub has
    // its smallest value in float32's range but steps of 2^-150 above it.
    const int finestStepExponent = f.minNormalExponent() - f.mantissaBits;
    if (finestStepExponent < -149)
        fail(text, "bias " + std::to_string(f.bias) + " too large: its finest step, 2^" +
                       std::to_string(finestStepExponent) + ", is below float32's 2^-149");
}

FormatSpec parseCustom(std::string_view original, const std::string& text) {
    const auto parts = split(text, ':');
    const std::string_view head = parts.front();
    const std::size_t mPos = head.find('m');
    FormatSpec f;
    if (head.size() < 4 || head[0] != 'e' || mPos == std::string_view::npos ||
        !parseInt(head.substr(1, mPos - 1), f.exponentBits) ||
        !parseInt(head.substr(mPos + 1), f.mantissaBits))
        fail(original, "unknown format; expected a name (see `formats`) or eXmY[:options], "
                       "e.g. e5m2:bias=16:nosub");
    // Range-check before computing the default bias so a huge X cannot overflow the shift.
    if (f.exponentBits < 1 || f.exponentBits > 8)
        fail(original, "exponent bits must be 1..8 (float32 holds every value), got " +
                           std::string(head.substr(1, mPos - 1)));
    f.bias = (1 << (f.exponentBits - 1)) - 1;
    bool subGiven = false;
    // Options that set one property: a second, different one contradicts the first (e5m2:nosub:sub,
    // e4m3:fn:fnuz) and is refused rather than silently winning.
    std::map<std::string, std::string> given; // property -> the option that set it
    const auto once = [&](const std::string& property, std::string_view opt) {
        const auto [it, fresh] = given.emplace(property, std::string(opt));
        if (!fresh && it->second != opt)
            fail(original, "options \"" + it->second + "\" and \"" + std::string(opt) +
                               "\" contradict each other (both set the " + property +
                               "); give one");
    };
    for (std::size_t i = 1; i < parts.size(); ++i) {
        const std::string_view opt = parts[i];
        if (opt.starts_with("bias="))
            once("bias", opt);
        else if (opt == "sub" || opt == "nosub")
            once("subnormals", opt);
        else if (opt == "ieee" || opt == "fn" || opt == "fnuz" || opt == "finite" || opt == "none")
            once("special values", opt);
        else if (opt == "signed" || opt == "unsigned")
            once("sign", opt);
        if (opt.starts_with("bias=")) {
            if (!parseInt(opt.substr(5), f.bias))
                fail(original,
                     "bias must be an integer, got \"" + std::string(opt.substr(5)) + "\"");
        } else if (opt == "sub" || opt == "nosub") {
            f.subnormals = opt == "sub";
            subGiven = true;
        } else if (opt == "ieee") {
            f.specials = SpecialValues::Ieee;
        } else if (opt == "fn") {
            f.specials = SpecialValues::Fn;
        } else if (opt == "fnuz") {
            f.specials = SpecialValues::Fnuz;
        } else if (opt == "finite" || opt == "none") {
            f.specials = SpecialValues::None;
        } else if (opt == "signed" || opt == "unsigned") {
            f.isSigned = opt == "signed";
        } else if (opt == "nozero") {
            f.hasZero = false;
        } else {
            fail(original, "unknown option \"" + std::string(opt) +
                               "\"; expected bias=N, sub, nosub, ieee, fn, fnuz, finite, signed, "
                               "unsigned or nozero");
        }
    }
    if (!f.hasZero) {
        if (subGiven && f.subnormals)
            fail(original, "nozero formats have no subnormals; drop :sub");
        f.subnormals = false;
    }
    validate(f, original);
    f.name = customName(f);
    return f;
}

} // namespace

int FormatSpec::maxExponent() const {
    return topExponentField(*this) - bias;
}

std::uint32_t FormatSpec::maxMantissaInTopBinade() const {
    const std::uint32_t allOnes = (1u << mantissaBits) - 1;
    const bool nanInTopBinade = specials == SpecialValues::Fn && mantissaBits > 0;
    return nanInTopBinade ? allOnes - 1 : allOnes;
}

double FormatSpec::maxFinite() const {
    const int top = topExponentField(*this);
    const double mant = static_cast<double>(maxMantissaInTopBinade());
    if (top == 0 && hasZero) // only the subnormal binade is finite
        return subnormals ? mant * std::ldexp(1.0, minNormalExponent() - mantissaBits) : 0.0;
    return std::ldexp(1.0 + mant / std::ldexp(1.0, mantissaBits), top - bias);
}

double FormatSpec::minNormal() const {
    return std::ldexp(1.0, minNormalExponent());
}

double FormatSpec::minPositive() const {
    if (hasZero && subnormals && mantissaBits > 0)
        return std::ldexp(1.0, minNormalExponent() - mantissaBits);
    return minNormal();
}

double FormatSpec::epsilon() const {
    return std::ldexp(1.0, -mantissaBits);
}

double FormatSpec::binades() const {
    return std::log2(maxFinite() / minPositive());
}

std::uint64_t FormatSpec::finiteValueCount() const {
    const int magnitudeBits = exponentBits + mantissaBits;
    std::uint64_t perSign = std::uint64_t{1} << magnitudeBits;
    if (specials == SpecialValues::Ieee)
        perSign -= std::uint64_t{1} << mantissaBits; // Inf and the NaNs
    else if (specials == SpecialValues::Fn)
        perSign -= 1;
    if (hasZero && !subnormals)
        perSign -= (std::uint64_t{1} << mantissaBits) - 1; // field 0 holds only zero
    std::uint64_t total = isSigned ? 2 * perSign : perSign;
    if (specials == SpecialValues::Fnuz)
        total -= 1; // the negative-zero code is the NaN
    return total;
}

bool FormatSpec::sameParameters(const FormatSpec& o) const {
    return exponentBits == o.exponentBits && mantissaBits == o.mantissaBits && bias == o.bias &&
           subnormals == o.subnormals && specials == o.specials && isSigned == o.isSigned &&
           hasZero == o.hasZero;
}

const std::vector<FormatSpec>& namedFormats() {
    using S = SpecialValues;
    static const std::vector<FormatSpec> formats = {
        makeNamed("fp32", 8, 23, 127, S::Ieee),
        makeNamed("tf32", 8, 10, 127, S::Ieee),
        makeNamed("fp16", 5, 10, 15, S::Ieee),
        makeNamed("bf16", 8, 7, 127, S::Ieee),
        makeNamed("fp8-e4m3", 4, 3, 7, S::Fn),
        makeNamed("fp8-e5m2", 5, 2, 15, S::Ieee),
        makeNamed("fp8-e4m3fnuz", 4, 3, 8, S::Fnuz),
        makeNamed("fp8-e5m2fnuz", 5, 2, 16, S::Fnuz),
        makeNamed("fp6-e3m2", 3, 2, 3, S::None),
        makeNamed("fp6-e2m3", 2, 3, 1, S::None),
        makeNamed("fp4-e2m1", 2, 1, 1, S::None),
        makeNamed("e8m0", 8, 0, 127, S::Fn, /*isSigned=*/false, /*hasZero=*/false),
    };
    return formats;
}

const std::vector<FormatAlias>& formatAliases() {
    // ml_dtypes' (and PyTorch's) names, as ml_dtypes documents each type: the layout, the bias,
    // which codes are Inf and NaN, whether -0 exists. Types without a name of ours are custom
    // specs that give the same values (tests/numerics/test_format_spec.cpp checks each against
    // the documented max, smallest normal and smallest subnormal).
    static const std::vector<FormatAlias> aliases = {
        {"float32", "fp32"},
        {"float16", "fp16"},
        {"half", "fp16"},
        {"bfloat16", "bf16"},
        {"float8_e4m3fn", "fp8-e4m3"},
        {"float8_e5m2", "fp8-e5m2"},
        {"float8_e4m3fnuz", "fp8-e4m3fnuz"},
        {"float8_e5m2fnuz", "fp8-e5m2fnuz"},
        {"float8_e4m3", "e4m3:bias=7:ieee"},
        {"float8_e3m4", "e3m4:bias=3:ieee"},
        {"float8_e4m3b11fnuz", "e4m3:bias=11:fnuz"},
        {"float8_e8m0fnu", "e8m0"},
        {"float6_e2m3fn", "fp6-e2m3"},
        {"float6_e3m2fn", "fp6-e3m2"},
        {"float4_e2m1fn", "fp4-e2m1"},
    };
    return aliases;
}

FormatSpec parseFormat(std::string_view text) {
    std::string key = lowerCase(text);
    if (key.empty())
        throw FormatError("format \"\": empty; expected a name (see `formats`) or eXmY[:options]");
    // "torch.float8_e4m3fn" as str(dtype) spells it, or "float8_e4m3fn" as ml_dtypes does.
    const std::string_view bare =
        std::string_view(key).starts_with("torch.") ? std::string_view(key).substr(6) : key;
    for (const FormatAlias& a : formatAliases())
        if (bare == a.name)
            return parseFormat(a.spec);
    for (const FormatSpec& f : namedFormats())
        if (f.name == key)
            return f;
    return parseCustom(text, key);
}

std::string_view toString(SpecialValues specials) {
    switch (specials) {
    case SpecialValues::Ieee:
        return "ieee";
    case SpecialValues::Fn:
        return "fn";
    case SpecialValues::Fnuz:
        return "fnuz";
    case SpecialValues::None:
        return "finite";
    }
    return "?";
}

} // namespace plab
