// `quantize`: numbers from stdin through a format. Text mode prints each value's quantised value,
// code, class and relative error; --binary streams float32 to float32 for pipes. Block formats
// (nvfp4, mxfp8-e4m3, ...) go to quantize_blocks.h.
#include "cli_commands.h"

#include "numerics/block_scheme.h"
#include "numerics/codec.h"
#include "numerics/philox.h"
#include "numerics/quantizer.h"
#include "numerics/reference_quantize.h"
#include "numerics/tensor_cast.h"
#include "quantize_blocks.h"
#include "util/printable_text.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace plab::cli {
namespace {

struct QuantizeArgs {
    std::string format;
    std::string rounding = "nearest-even";
    std::string overflow; // empty: the format's default
    std::uint64_t seed = 0;
    bool binary = false;
    // Block formats only.
    std::string scaleRounding; // MX: floor (default) or ceil
    bool fourOverSix = false;  // nvfp4
    bool pow2Scales = false;   // fp8-block128
};

// The block format a --format names, with its options, or nullopt for an element format. Throws
// FormatError for an option the format does not take (the core's TensorCast checks them, as for
// the Python module).
std::optional<BlockQuantizeArgs> blockArgs(const QuantizeArgs& args) {
    TensorCastSpec spec{.format = args.format, .rounding = parseRounding(args.rounding)};
    if (!args.overflow.empty())
        spec.overflow = parseOverflow(args.overflow);
    if (!args.scaleRounding.empty())
        spec.scaleRounding = parseScaleRounding(args.scaleRounding);
    spec.fourOverSix = args.fourOverSix;
    spec.powerOfTwoScales = args.pow2Scales;
    const TensorCast cast(spec);
    if (!cast.isBlockFormat())
        return std::nullopt;
    return BlockQuantizeArgs{*cast.blockFormat(), spec.rounding, args.seed};
}

QuantConfig makeConfig(const QuantizeArgs& args) {
    QuantConfig config =
        QuantConfig::forFormat(parseFormat(args.format), parseRounding(args.rounding));
    if (!args.overflow.empty())
        config.overflow = parseOverflow(args.overflow);
    return config;
}

// No number's text is longer (float32's longest exact decimal is 112 digits); a longer word is
// refused as soon as it is that long, so an endless one (/dev/zero) is not read without bound.
constexpr std::size_t kMaxNumberText = 4096;

// The next whitespace-separated word of `in` into `word`, at most kMaxNumberText + 1 characters
// of it; false at the end of the input.
bool nextWord(std::istream& in, std::string& word) {
    word.clear();
    std::streambuf* buf = in.rdbuf();
    int c = buf->sgetc();
    while (c != std::char_traits<char>::eof() && std::isspace(c))
        c = buf->snextc();
    while (c != std::char_traits<char>::eof() && !std::isspace(c) &&
           word.size() <= kMaxNumberText) {
        word += static_cast<char>(c);
        c = buf->snextc();
    }
    return !word.empty();
}

std::vector<float> readTextNumbers(std::istream& in) {
    std::vector<float> values;
    std::string word;
    std::size_t index = 0;
    std::size_t outOfRange = 0; // words float32 cannot hold: said once each, the first few
    while (nextWord(in, word)) {
        ++index;
        if (word.size() > kMaxNumberText)
            throw std::invalid_argument("quantize: stdin word " + std::to_string(index) +
                                        " is longer than " + std::to_string(kMaxNumberText) +
                                        " characters, longer than any number's text (expected "
                                        "e.g. 0.1, -3e-5, inf, nan)");
        const char* begin = word.c_str();
        char* end = nullptr;
        errno = 0;
        const float v = std::strtof(begin, &end);
        // ERANGE is fine: the value is what float32 makes of the text (Inf, or 0 / subnormal).
        if (end == begin || end != begin + word.size()) { // a NUL byte inside ends strtof early
            const std::string shown = printableText(std::string_view(word).substr(0, 60));
            throw std::invalid_argument("quantize: stdin word " + std::to_string(index) + " \"" +
                                        shown +
                                        "\" is not a number (expected e.g. 0.1, -3e-5, "
                                        "inf, nan)");
        }
        // Out of float32's range, the text becomes 0 or Inf: the table's input column shows
        // that value, so the word itself is named here ("1e-400" looked like an input of 0).
        if (errno == ERANGE && (v == 0.0f || std::isinf(v)) && ++outOfRange <= 5)
            std::fprintf(stderr,
                         "quantize: stdin word %zu \"%.60s\" is %s float32's range: read as %s\n",
                         index, printableText(word).c_str(), v == 0.0f ? "below" : "above",
                         v == 0.0f ? (std::signbit(v) ? "-0" : "0") : (v < 0.0f ? "-inf" : "inf"));
        values.push_back(v);
    }
    if (outOfRange > 5)
        std::fprintf(stderr, "quantize: %zu more words out of float32's range\n", outOfRange - 5);
    return values;
}

int runText(const QuantConfig& config, std::uint64_t seed) {
    const std::vector<float> values = readTextNumbers(std::cin);
    std::printf("%-16s %-16s %-10s %-10s %s\n", "input", "quantized", "bits", "class", "rel.error");
    for (std::size_t i = 0; i < values.size(); ++i) {
        const float x = values[i];
        const std::uint32_t word = philox::elementWord(i, 0, seed);
        QuantClass cls;
        float q = quantizeReference(config, x, word, &cls);
        const std::uint32_t code = encode(config, x, word);
        // A NaN is shown with its code's sign (FP32's canonical 0x7fffffff is "nan", not the
        // "-nan" of a negative NaN passed through): the two columns describe one result.
        if (std::isnan(q) && config.format.isSigned)
            q = std::copysign(q, (code >> (config.format.totalBits() - 1)) & 1u ? -1.0f : 1.0f);
        char err[32] = "-";
        if (std::isfinite(x) && std::isfinite(q))
            std::snprintf(err, sizeof err, "%.3e",
                          x == 0.0f ? 0.0 : std::fabs((double(q) - x) / x));
        std::printf("%-16.9g %-16.9g %-10s %-10s %s\n", x, q,
                    codeToHex(config.format, code).c_str(), toString(cls), err);
    }
    return 0;
}

int runBinary(const QuantConfig& config, std::uint64_t seed) {
    const Quantizer quantizer(config);
    constexpr std::size_t kValues = 1 << 18;
    std::vector<float> buffer(kValues);
    auto* bytes = reinterpret_cast<unsigned char*>(buffer.data());
    std::size_t pending = 0; // bytes in buffer not yet processed
    std::uint64_t index = 0;
    for (;;) {
        const std::size_t got = std::fread(bytes + pending, 1, kValues * 4 - pending, stdin);
        pending += got;
        const std::size_t whole = pending / 4;
        if (whole > 0) {
            std::span<float> values(buffer.data(), whole);
            QuantizeOptions options;
            options.seed = seed;
            options.firstIndex = index;
            quantizer.quantize(values, values, nullptr, options);
            if (std::fwrite(buffer.data(), 4, whole, stdout) != whole)
                throw OutputError(std::string("quantize --binary: cannot write stdout (") +
                                  std::strerror(errno) + ")");
            index += whole;
            const std::size_t rest = pending - whole * 4;
            std::copy(bytes + whole * 4, bytes + pending, bytes);
            pending = rest;
        }
        if (got == 0)
            break;
    }
    if (std::fflush(stdout) != 0)
        throw OutputError(std::string("quantize --binary: cannot write stdout (") +
                          std::strerror(errno) + ")");
    if (std::ferror(stdin))
        throw std::runtime_error("quantize --binary: reading stdin failed");
    if (pending != 0)
        throw std::invalid_argument(
            "quantize --binary: stdin ended with " + std::to_string(pending) +
            " trailing byte(s) after " + std::to_string(index) +
            " float32 values; expected a multiple of 4 bytes (little-endian float32)");
    return 0;
}

} // namespace

Command addQuantizeCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("quantize", "Quantise numbers from stdin to a format");
    auto args = std::make_shared<QuantizeArgs>();
    cmd->add_option("--format,-f", args->format,
                    "Format name, eXmY[:options] or a block format such as nvfp4 (see `formats`)")
        ->required();
    cmd->add_option("--rounding,-r", args->rounding,
                    "nearest-even | nearest-away | toward-zero | stochastic")
        ->capture_default_str();
    cmd->add_option("--overflow", args->overflow,
                    "saturate | inf (default: inf for formats with Inf, else saturate)");
    cmd->add_option("--seed", args->seed, "Seed of the stochastic-rounding random stream")
        ->check(unsigned64())
        ->capture_default_str();
    cmd->add_flag("--binary", args->binary,
                  "Read little-endian float32 from stdin until EOF, write quantised float32 (a "
                  "block format dequantises the whole input as one tensor)");
    cmd->add_option("--scale-rounding", args->scaleRounding,
                    "MX block formats: floor (OCP) | ceil (Transformer Engine)");
    cmd->add_flag("--four-over-six", args->fourOverSix,
                  "nvfp4: per block, map the amax to 4 or 6, whichever errs less");
    cmd->add_flag("--pow2-scales", args->pow2Scales,
                  "fp8-block128: scales rounded to powers of two");
    return {cmd, [args] {
                if (const std::optional<BlockQuantizeArgs> block = blockArgs(*args))
                    return args->binary ? quantizeBlocksBinary(*block)
                                        : quantizeBlocksText(*block, readTextNumbers(std::cin));
                const QuantConfig config = makeConfig(*args);
                return args->binary ? runBinary(config, args->seed) : runText(config, args->seed);
            }};
}

} // namespace plab::cli
