// TensorCast: a whole tensor through any format the CLI names, an element format ("fp8-e4m3",
// "e5m2:bias=16:nosub") or a block format ("nvfp4", "mxfp8-e4m3", "fp8-block128"), with the
// cast's statistics. It parses and checks the options once and then calls the quantiser and the
// block quantiser, so that `precision-lab-cli quantize`, the Python module's quantize() and the
// PyTorch watcher's what-if are the same code and give the same bits.
#pragma once

#include "numerics/block_scheme.h"
#include "numerics/block_stats.h"
#include "numerics/quantizer.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace plab {

struct TensorCastSpec {
    std::string format;
    Rounding rounding = Rounding::NearestEven;
    std::optional<Overflow> overflow =
        std::nullopt; // none: the format's default (block formats saturate)
    // Block formats only (FormatError for any other format or block kind).
    std::optional<ScaleRounding> scaleRounding =
        std::nullopt;              // MX: floor (OCP) or ceil (Transformer Engine)
    bool fourOverSix = false;      // nvfp4
    bool powerOfTwoScales = false; // fp8-block128
};

struct TensorCastResult {
    QuantStats stats;         // as the element format saw the (scaled) values, but amax: the
                              // input's own largest |x| (before any block scale)
    BlockStats blocks;        // block formats: per-block statistics
    float tensorScale = 1.0f; // NVFP4's s_enc; 1 for the others
};

class TensorCast {
public:
    // Throws FormatError (one line naming the format or option) for an unknown format or an
    // option the format does not take.
    explicit TensorCast(const TensorCastSpec& spec);

    const std::string& name() const { return m_name; }
    bool isBlockFormat() const { return m_block.has_value(); }
    const QuantConfig& elementConfig() const { return m_element.config(); }
    const BlockFormat* blockFormat() const { return m_block ? &*m_block : nullptr; }

    // out <- the cast of in * scale, divided by scale again (out may be in; with scale 1 the
    // values are exactly the cast's). Block formats form blocks along rows of rowLength values
    // (0: the whole input is one row, as the CLI casts stdin). result, when given, gets the
    // counts, the histogram of the scaled inputs, the error sums (of the scaled values against
    // the cast) and, for block formats, the blocks' statistics. blocksOut, when given, gets
    // each block's facts. Throws std::invalid_argument when the sizes differ or rowLength does
    // not divide the input.
    void cast(std::span<const float> in, std::span<float> out, std::size_t rowLength, float scale,
              const QuantizeOptions& options, TensorCastResult* result,
              std::vector<BlockInfo>* blocksOut = nullptr) const;

private:
    TensorCast(const TensorCastSpec& spec, std::optional<BlockFormat> block);
    std::string m_name;
    Quantizer m_element;
    std::optional<BlockFormat> m_block;
};

} // namespace plab
