// The block-scaled cast written from the formulas of numerics/block_scale.h, one block and one
// element at a time, with the element reference quantiser: the reference the block quantiser is
// checked against (test_block_formats, and fuzz_block_cast on whatever the fuzzer makes). Slow
// and plain on purpose; shares no code with the passes it checks.
#pragma once

#include "numerics/block_scheme.h"
#include "numerics/philox.h"
#include "numerics/quant_stats.h"
#include "numerics/reference_quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace plab::block_reference {

inline float e4m3Saturating(float x) {
    return quantizeReference({parseFormat("fp8-e4m3"), Rounding::NearestEven, Overflow::Saturate},
                             x);
}

struct RefScale {
    float toElement, decoded;
};

inline RefScale referenceScale(const BlockScheme& s, const FormatSpec& element, float amax,
                               float finiteAmax, float tensorScale, float target) {
    const auto maxElem = static_cast<float>(element.maxFinite());
    switch (s.kind) {
    case BlockScaleKind::Nvfp4: {
        const float q = e4m3Saturating(amax * (tensorScale * (1.0f / target)));
        const float r = std::min(1.0f / (q * (1.0f / tensorScale)), FLT_MAX);
        // q = 0: the elements are cast from x * 0, the format's zero (block_scale.h). Not
        // x * FLT_MAX: that saturates, and an fnuz format's -max * 0 would be -0, a zero the
        // format does not have (found by fuzz_block_cast, e7m0:fnuz elements).
        return {q == 0.0f ? 0.0f : r, q};
    }
    case BlockScaleKind::Fp32: {
        float scale = 1.0f;
        if (finiteAmax > 0.0f) {
            scale = std::min(maxElem / finiteAmax, FLT_MAX);
            // At least 2^-127, whose inverse is finite (found by fuzz_block_cast: e1m2:nozero
            // elements, max 3.5, against values near float32's max).
            scale = std::max(scale, std::ldexp(1.0f, -127));
            if (s.powerOfTwoScales) {
                int e;
                std::frexp(scale, &e);
                scale = std::ldexp(1.0f, e - 1); // 2^floor(log2 scale)
            }
        }
        return {scale, 1.0f / scale};
    }
    case BlockScaleKind::Mx: {
        int x = -127;
        if (s.scaleRounding == ScaleRounding::Floor) {
            int emaxElem;
            std::frexp(element.maxFinite(), &emaxElem);
            if (finiteAmax > 0.0f) {
                int e;
                std::frexp(static_cast<double>(finiteAmax), &e);
                x = std::clamp((e - 1) - (emaxElem - 1), -127, 127);
            }
        } else {
            // The smallest power of two at or above y, as an E8M0 value (2^-127 .. 2^127).
            const float y = finiteAmax * (1.0f / maxElem);
            if (y > std::ldexp(1.0f, -127)) {
                int e;
                const double m = std::frexp(static_cast<double>(y), &e); // y = m 2^e, m in [.5, 1)
                x = std::min(m == 0.5 ? e - 1 : e, 127);
            }
        }
        return {std::ldexp(1.0f, -x), std::ldexp(1.0f, x)};
    }
    }
    return {1.0f, 1.0f};
}

// A block's facts as the scalar reference finds them (block_stats.h's BlockInfo, by hand).
struct RefBlock {
    float amax = 0.0f, finiteAmax = 0.0f, minNonzero = 0.0f, decoded = 1.0f;
    std::uint32_t nonzero = 0, nonzeroOut = 0, saturated = 0;
};

struct RefResult {
    std::vector<float> out;
    QuantStats stats;
    std::vector<RefBlock> blocks;
};

// Blocks as index lists: 1 x side along rows, or side x side tiles.
inline std::vector<std::vector<std::size_t>> referenceBlocks(std::size_t rows, std::size_t cols,
                                                             std::size_t side, bool tiles) {
    std::vector<std::vector<std::size_t>> blocks;
    const std::size_t rowStep = tiles ? side : 1;
    for (std::size_t r0 = 0; r0 < rows; r0 += rowStep)
        for (std::size_t c0 = 0; c0 < cols; c0 += side) {
            std::vector<std::size_t> block;
            for (std::size_t r = r0; r < std::min(rows, r0 + rowStep); ++r)
                for (std::size_t c = c0; c < std::min(cols, c0 + side); ++c)
                    block.push_back(r * cols + c);
            blocks.push_back(block);
        }
    return blocks;
}

inline RefResult reference(const QuantConfig& element, const BlockScheme& s,
                           const std::vector<float>& in, std::size_t rows, std::size_t cols,
                           bool tiles, std::uint64_t seed = 0, std::uint64_t stream = 0) {
    RefResult r;
    r.out.resize(in.size());
    const auto maxElem = static_cast<float>(element.format.maxFinite());
    float tensorScale = 1.0f;
    if (s.kind == BlockScaleKind::Nvfp4) {
        float amaxT = 0.0f;
        for (float v : in)
            if (!std::isnan(v))
                amaxT = std::max(amaxT, std::fabs(v));
        // s_enc, with fminf's NaN rule as Transformer Engine's: an element max near float32's
        // and an Inf in the tensor give Inf / Inf, which becomes FLT_MAX. Found by
        // fuzz_block_cast (e8m2 elements; std::min kept the NaN).
        tensorScale = std::fmin(448.0f * maxElem / amaxT, FLT_MAX);
        if (amaxT == 0.0f || tensorScale == 0.0f)
            tensorScale = 1.0f;
    }
    auto word = [&](std::size_t i) {
        return element.rounding == Rounding::Stochastic ? philox::elementWord(i, stream, seed) : 0u;
    };
    for (const auto& block :
         referenceBlocks(rows, cols, static_cast<std::size_t>(s.blockSize), tiles)) {
        float amax = 0.0f, finiteAmax = 0.0f;
        RefBlock facts;
        for (std::size_t i : block) {
            if (std::isnan(in[i]))
                continue;
            const float a = std::fabs(in[i]);
            amax = std::max(amax, a);
            facts.nonzero += a != 0.0f ? 1u : 0u;
            if (std::isfinite(in[i])) {
                finiteAmax = std::max(finiteAmax, a);
                if (a != 0.0f && (facts.minNonzero == 0.0f || a < facts.minNonzero))
                    facts.minNonzero = a;
            }
        }
        facts.amax = amax;
        facts.finiteAmax = finiteAmax;
        std::uint32_t saturated = 0;
        auto cast = [&](const RefScale& sc, std::vector<float>& out, QuantStats* stats) {
            double err = 0.0;
            for (std::size_t i : block) {
                QuantClass cls;
                const float scaled = in[i] * sc.toElement;
                const float q = quantizeReference(element, scaled, word(i), &cls);
                out[i] = (q * sc.decoded) / tensorScale;
                if (std::isfinite(in[i]))
                    err += std::pow(static_cast<double>(out[i]) - in[i], 2);
                if (stats != nullptr) {
                    // A zero-scale NVFP4 block is zeros: its nonzero inputs count as flushed.
                    if (sc.decoded == 0.0f && in[i] != 0.0f && !std::isnan(in[i]))
                        cls = QuantClass::Underflow;
                    ++stats->counts[static_cast<std::size_t>(cls)];
                    // Saturated: clipped to the element max, the Overflow class but for an
                    // unsigned format's negative values (Overflow too, but out of range below).
                    if (cls == QuantClass::Overflow &&
                        !(!element.format.isSigned && std::signbit(scaled) && !std::isnan(scaled)))
                        ++saturated;
                    // The histogram is of what the element cast sees: the scaled inputs (x * 0
                    // in a zero-scale NVFP4 block).
                    ++stats->histogram[static_cast<std::size_t>(histogramBin(scaled))];
                }
            }
            return err;
        };
        RefScale sc = referenceScale(s, element.format, amax, finiteAmax, tensorScale, maxElem);
        if (s.kind == BlockScaleKind::Nvfp4 && s.fourOverSix) {
            std::vector<float> a(in.size()), b(in.size());
            const RefScale four =
                referenceScale(s, element.format, amax, finiteAmax, tensorScale, 4);
            if (cast(four, b, nullptr) < cast(sc, a, nullptr))
                sc = four;
        }
        QuantStats blockStats;
        cast(sc, r.out, &blockStats);
        r.stats.merge(blockStats);
        facts.decoded = sc.decoded;
        facts.saturated = saturated;
        for (std::size_t i : block)
            facts.nonzeroOut += (r.out[i] != 0.0f && !std::isnan(r.out[i])) ? 1u : 0u;
        r.blocks.push_back(facts);
    }
    return r;
}

} // namespace plab::block_reference
