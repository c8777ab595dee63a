// Fuzz target: the format-string parser, then the fused quantiser against the double-precision
// reference on whatever format the parser accepted (a differential check, so a custom eXmY that
// parses but rounds wrongly is caught too): every CPU kernel this machine runs, with and without
// statistics (separate code paths), every rounding (stochastic with the reference given the same
// random words), the values' bits, class counts, histogram and amax; and the codec's code for
// each result decodes back to it.
//
// Input layout: format text up to the first '\n'; one byte choosing the rounding (bits 0-1),
// the overflow mode (bit 2) and the random seed (the whole byte); the rest read as float32 values.
#include "fuzz_checks.h"
#include "numerics/codec.h"
#include "numerics/format_spec.h"
#include "numerics/philox.h"
#include "numerics/quantizer.h"
#include "numerics/reference_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

using plab::fuzz::failCheck;
using plab::fuzz::sameBits;

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
    config.rounding = plab::kAllRoundings[mode & 3];
    config.overflow = (mode & 4) ? plab::Overflow::Saturate : plab::Overflow::Inf;
    const plab::QuantizeOptions options{
        .seed = mode, .stream = 7, .firstIndex = 0, .pool = nullptr};

    std::vector<float> expected(in.size());
    plab::QuantStats expectedStats;
    for (std::size_t i = 0; i < in.size(); ++i) {
        plab::QuantClass cls{};
        const std::uint32_t word = plab::philox::elementWord(i, options.stream, options.seed);
        expected[i] = plab::quantizeReference(config, in[i], word, &cls);
        // The codec names the same value: its code decodes back to the reference's result
        // (NaN aside: formats without a NaN code encode it as +max, as NVIDIA's do).
        if (!std::isnan(expected[i]) &&
            !sameBits(plab::decode(spec, plab::encode(config, in[i], word)), expected[i]))
            failCheck("code of the reference's result decodes to another value");
        ++expectedStats.counts[static_cast<std::size_t>(cls)];
        ++expectedStats.histogram[static_cast<std::size_t>(plab::histogramBin(in[i]))];
        if (!std::isnan(in[i]))
            expectedStats.amax = std::max(expectedStats.amax, std::fabs(in[i]));
    }

    std::vector<float> out(in.size());
    for (const plab::CpuKernel kernel : plab::supportedCpuKernels()) {
        const plab::Quantizer quantizer(config, kernel);
        plab::QuantStats stats;
        quantizer.quantize(in, out, &stats, options);
        for (std::size_t i = 0; i < in.size(); ++i)
            if (!sameBits(out[i], expected[i]))
                failCheck("fused kernel disagrees with the reference");
        if (stats.counts != expectedStats.counts)
            failCheck("fused kernel's class counts disagree with the reference");
        if (stats.histogram != expectedStats.histogram)
            failCheck("fused kernel's histogram disagrees with the reference");
        if (!sameBits(stats.amax, expectedStats.amax))
            failCheck("fused kernel's amax disagrees with the reference");

        quantizer.quantize(in, out, nullptr, options); // the kernels without counting
        for (std::size_t i = 0; i < in.size(); ++i)
            if (!sameBits(out[i], expected[i]))
                failCheck("fused kernel without statistics disagrees with the reference");
    }
    return 0;
}
