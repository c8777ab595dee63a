// Block-format quantise for the CLI: the core's quantizeBlocks over the whole input, with each
// value's class recomputed from its block's scale for the text table.
#include "quantize_blocks.h"

#include "cli_commands.h"

#include "numerics/block_quantizer.h"
#include "numerics/philox.h"
#include "numerics/reference_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace plab::cli {
namespace {

QuantConfig elementConfig(const BlockQuantizeArgs& args) {
    // A scale chosen to fill the range must clip, not overflow: block formats saturate.
    return {args.format.element, args.rounding, Overflow::Saturate};
}

std::vector<float> cast(const BlockQuantizeArgs& args, const std::vector<float>& in,
                        std::vector<BlockInfo>& blocks, float& tensorScale) {
    std::vector<float> out(in.size());
    QuantizeOptions options;
    options.seed = args.seed;
    tensorScale = quantizeBlocks(Quantizer(elementConfig(args)), args.format.scheme, in, out, {},
                                 nullptr, nullptr, options, blocks)
                      .tensorScale;
    return out;
}

} // namespace

int quantizeBlocksText(const BlockQuantizeArgs& args, const std::vector<float>& values) {
    std::vector<BlockInfo> blocks;
    float tensorScale = 1.0f;
    const std::vector<float> out = cast(args, values, blocks, tensorScale);
    const BlockScheme& scheme = args.format.scheme;
    std::printf("%s: %s elements in blocks of %d, scale %s\n", args.format.name.c_str(),
                args.format.element.name.c_str(), scheme.blockSize,
                scaleFormatName(scheme).c_str());
    if (scheme.kind == BlockScaleKind::Nvfp4)
        std::printf("tensor scale s_enc %.9g\n", tensorScale);
    const QuantConfig element = elementConfig(args);
    const auto size = static_cast<std::size_t>(scheme.blockSize);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        const BlockInfo& info = blocks[b];
        // An Inf that set the block's scale (NVFP4's: amax Inf, the largest E4M3 scale) leaves
        // the finite values far below the element format's range, where they flush: the amax
        // printed is the finite one, so this says why. (MX and FP32 block scales come from the
        // finite amax and leave the finite values in range: no note.)
        const bool scaledByInf =
            info.finiteAmax * info.scale.toElement < 0.25 * element.format.maxFinite() &&
            std::any_of(values.begin() + static_cast<std::ptrdiff_t>(b * size),
                        values.begin() +
                            static_cast<std::ptrdiff_t>(std::min(values.size(), (b + 1) * size)),
                        [](float v) { return std::isinf(v); });
        std::printf(
            "block %zu: amax %.9g, scale %.9g, elements x %.9g%s%s\n", b,
            static_cast<double>(info.finiteAmax), static_cast<double>(info.scale.decoded),
            static_cast<double>(info.scale.toElement), info.saturated > 0 ? ", saturated" : "",
            scaledByInf ? " (the scale comes from the block's Inf, not its finite amax: its "
                          "finite values are scaled toward 0)"
                        : "");
        std::printf("  %-16s %-16s %-10s %s\n", "input", "dequantized", "class", "rel.error");
        for (std::size_t i = b * size; i < std::min(values.size(), (b + 1) * size); ++i) {
            const float x = values[i];
            const std::uint32_t word =
                args.rounding == Rounding::Stochastic ? philox::elementWord(i, 0, args.seed) : 0u;
            QuantClass cls;
            quantizeReference(element, x * info.scale.toElement, word, &cls);
            if (info.scale.decoded == 0.0f && x != 0.0f && !std::isnan(x))
                cls = QuantClass::Underflow; // a zero-scale NVFP4 block is flushed
            char err[32] = "-";
            if (std::isfinite(x) && std::isfinite(out[i]))
                std::snprintf(err, sizeof err, "%.3e",
                              x == 0.0f ? 0.0 : std::fabs((double(out[i]) - x) / x));
            std::printf("  %-16.9g %-16.9g %-10s %s\n", x, out[i], toString(cls), err);
        }
    }
    return 0;
}

int quantizeBlocksBinary(const BlockQuantizeArgs& args) {
    std::vector<unsigned char> bytes;
    unsigned char buffer[1 << 16];
    for (std::size_t got; (got = std::fread(buffer, 1, sizeof buffer, stdin)) > 0;)
        bytes.insert(bytes.end(), buffer, buffer + got);
    if (std::ferror(stdin))
        throw std::runtime_error("quantize --binary: reading stdin failed");
    if (bytes.size() % 4 != 0)
        throw std::invalid_argument(
            "quantize --binary: stdin ended with " + std::to_string(bytes.size() % 4) +
            " trailing byte(s) after " + std::to_string(bytes.size() / 4) +
            " float32 values; expected a multiple of 4 bytes (little-endian float32)");
    std::vector<float> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    std::vector<BlockInfo> blocks;
    float tensorScale = 1.0f;
    const std::vector<float> out = cast(args, values, blocks, tensorScale);
    if (std::fwrite(out.data(), 4, out.size(), stdout) != out.size() || std::fflush(stdout) != 0)
        throw OutputError(std::string("quantize --binary: cannot write stdout (") +
                          std::strerror(errno) + ")");
    return 0;
}

} // namespace plab::cli
