// TensorCast: the options checked once, then the quantiser or the block quantiser.
#include "numerics/tensor_cast.h"

#include <cmath>

#include "numerics/block_quantizer.h"
#include "numerics/format_spec.h"

#include <stdexcept>

namespace plab {
namespace {

// The block format the spec names, with its options, or none for an element format.
std::optional<BlockFormat> blockFormatOf(const TensorCastSpec& spec) {
    const BlockFormat* named = findBlockFormat(spec.format);
    if (named == nullptr) {
        if (spec.scaleRounding || spec.fourOverSix || spec.powerOfTwoScales)
            throw FormatError("scale rounding, four-over-six and power-of-two scales apply to "
                              "block formats (nvfp4, fp8-block128, mxfp8-e4m3, ...), not to \"" +
                              spec.format + "\"");
        return std::nullopt;
    }
    BlockFormat b = *named;
    BlockScheme& s = b.scheme;
    if (spec.overflow && *spec.overflow != Overflow::Saturate)
        throw FormatError("overflow " + std::string(toString(*spec.overflow)) + ": block format " +
                          spec.format + " saturates (its scale fills the range)");
    if (spec.scaleRounding) {
        if (s.kind != BlockScaleKind::Mx)
            throw FormatError("scale rounding applies to MX formats, not to " + spec.format);
        s.scaleRounding = *spec.scaleRounding;
    }
    if (spec.fourOverSix && s.kind != BlockScaleKind::Nvfp4)
        throw FormatError("four-over-six applies to nvfp4, not to " + spec.format);
    if (spec.powerOfTwoScales && s.kind != BlockScaleKind::Fp32)
        throw FormatError("power-of-two scales apply to fp8-block128, not to " + spec.format);
    s.fourOverSix = spec.fourOverSix;
    s.powerOfTwoScales = spec.powerOfTwoScales;
    return b;
}

QuantConfig elementConfigOf(const TensorCastSpec& spec, const std::optional<BlockFormat>& block) {
    if (block) // a scale chosen to fill the range must clip, not overflow
        return {block->element, spec.rounding, Overflow::Saturate};
    QuantConfig config = QuantConfig::forFormat(parseFormat(spec.format), spec.rounding);
    if (spec.overflow)
        config.overflow = *spec.overflow;
    return config;
}

} // namespace

TensorCast::TensorCast(const TensorCastSpec& spec) : TensorCast(spec, blockFormatOf(spec)) {}

TensorCast::TensorCast(const TensorCastSpec& spec, std::optional<BlockFormat> block)
    : m_name(block ? block->name : parseFormat(spec.format).name),
      m_element(elementConfigOf(spec, block)), m_block(std::move(block)) {}

void TensorCast::cast(std::span<const float> in, std::span<float> out, std::size_t rowLength,
                      float scale, const QuantizeOptions& options, TensorCastResult* result,
                      std::vector<BlockInfo>* blocksOut) const {
    if (in.size() != out.size())
        throw std::invalid_argument("cast: input and output sizes differ");
    if (rowLength != 0 && in.size() % rowLength != 0)
        throw std::invalid_argument("cast: rows of " + std::to_string(rowLength) +
                                    " values do not divide " + std::to_string(in.size()));
    // The scaled input, when there is a scale, is the cast's input (and kept for the error sums
    // of block casts, which are measured after the cast; options.measureError asks for them).
    std::vector<float> scaled;
    std::span<const float> source = in;
    const bool measure = result != nullptr && options.measureError;
    const bool keepInput = measure && isBlockFormat() && in.data() == out.data();
    if (scale != 1.0f || keepInput) {
        scaled.resize(in.size());
        for (std::size_t i = 0; i < in.size(); ++i)
            scaled[i] = in[i] * scale;
        source = scaled;
    }
    QuantStats* stats = result ? &result->stats : nullptr;
    if (!m_block) {
        m_element.quantize(source, out, stats, options);
    } else {
        std::vector<BlockInfo> scratch;
        BlockLayout layout;
        if (rowLength != 0 && rowLength != in.size()) {
            layout.rows = in.size() / rowLength;
            layout.cols = rowLength;
        }
        const BlockQuantizeResult r = quantizeBlocks(
            m_element, m_block->scheme, source, out, layout, stats,
            result ? &result->blocks : nullptr, options, blocksOut ? *blocksOut : scratch,
            blocksOut ? BlockRecords::All : BlockRecords::Scratch);
        if (result) {
            result->tensorScale = r.tensorScale;
            // The tensor's own amax, as an element format's row says it (the block-scaled
            // elements' largest is about the element format's max by construction).
            // NVFP4's cast took it already; the others take no tensor amax: one pass for it.
            float amax = r.inputAmax;
            if (amax < 0.0f) {
                amax = 0.0f;
                for (const float v : source) // NaN compares false: skipped
                    amax = std::fabs(v) > amax ? std::fabs(v) : amax;
            }
            result->stats.amax = amax;
        }
        if (measure) // the block passes measure no error of their own
            result->stats.error.merge(measureError(source, out));
    }
    if (scale != 1.0f)
        for (float& v : out)
            v /= scale;
}

} // namespace plab
