// Fuzz target: the format-string parser, then the fused quantiser against the double-precision
// reference on whatever format the parser accepted (a differential check, so a custom eXmY that
// parses but rounds wrongly is caught too).
//
// Input layout: format text up to the first '\n'; one byte choosing rounding and overflow mode;
// the rest read as float32 values.
#include "numerics/format_spec.h"
#include "numerics/quantizer.h"
#include "numerics/reference_quantize.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

[[noreturn]] void failCheck(const char* what) {
    // A broken invariant is a bug: abort so the fuzzer records the input.
    std::fputs(what, stderr);
    std::fputc('\n', stderr);
    std::abort();
}

bool sameBits(float a, float b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    std::uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    return ua == ub;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = input.find('\n');
    const std::string_view text = input.substr(0, newline);
    plab::FormatSpec spec;
    try {
        spec = plab::parseFormat(text);
    } catch (const plab::FormatError& e) {
        if (std::strlen(e.what()) == 0)
            failCheck("FormatError without a message");
        return 0; // rejected with a message: the expected outcome for most inputs
    }

    // What the parser accepts must be a usable format whose canonical name parses back to it.
    if (!(spec.maxFinite() > 0.0) || !std::isfinite(spec.maxFinite()))
        failCheck("accepted format has no finite positive maximum");
    if (!(spec.minPositive() > 0.0) || spec.minPositive() > spec.maxFinite())
        failCheck("accepted format has a bad minimum");
    if (!plab::parseFormat(spec.name).sameParameters(spec))
        failCheck("canonical name does not parse back to the same format");

    if (newline == std::string_view::npos || newline + 1 >= size)
        return 0;
    const std::uint8_t mode = data[newline + 1];
    const std::size_t valueBytes = size - newline - 2;
    std::vector<float> in(valueBytes / sizeof(float));
    if (in.empty())
        return 0;
    std::memcpy(in.data(), data + newline + 2, in.size() * sizeof(float));

    plab::QuantConfig config;
    config.format = spec;
    constexpr plab::Rounding kDeterministic[] = {
        plab::Rounding::NearestEven, plab::Rounding::NearestAway, plab::Rounding::TowardZero};
    config.rounding = kDeterministic[mode % 3];
    config.overflow = (mode & 4) ? plab::Overflow::Saturate : plab::Overflow::Inf;

    std::vector<float> out(in.size());
    plab::QuantStats stats;
    plab::Quantizer(config).quantize(in, out, &stats);
    plab::QuantStats expectedCounts;
    for (std::size_t i = 0; i < in.size(); ++i) {
        plab::QuantClass cls{};
        const float expected = plab::quantizeReference(config, in[i], 0, &cls);
        if (!sameBits(out[i], expected))
            failCheck("fused kernel disagrees with the reference");
        ++expectedCounts.counts[static_cast<std::size_t>(cls)];
    }
    if (stats.counts != expectedCounts.counts)
        failCheck("fused kernel's class counts disagree with the reference");
    return 0;
}
