// The per-block passes of a block-scaled cast, as bodies over a block index (plain C++,
// __host__ __device__ under nvcc): the CPU quantiser (block_quantizer.cpp) loops over them and
// the GPU engine launches one thread per block, so both compute exactly the same scales.
//   ScaleBlocks:      amaxes -> the block's scale -> elements scaled into the element range.
//   (the element cast: the ordinary fused quantise pass over the whole tensor)
//   DequantizeBlocks: (x_q * decoded) / tensorScale, counting the block's nonzero outputs.
#pragma once

#include "numerics/block_scale.h"
#include "numerics/block_stats.h"
#include "numerics/philox.h"
#include "numerics/quantize_element.h"

#include <cstddef>
#include <cstdint>

// The per-block bodies are inlined into their callers: the CPU's callers are compiled for
// AVX2 / AVX-512 too (util/vector_clones.h), and a body left out of line would run as baseline
// code.
#if defined(__CUDACC__)
#define PLAB_INLINE_BODY __forceinline__
#elif defined(__GNUC__)
#define PLAB_INLINE_BODY __attribute__((always_inline)) inline
#else
#define PLAB_INLINE_BODY inline
#endif

namespace plab::blocks {

// Where block b's elements are: `count` spans (rows of a tile, or one span of a row).
struct Geometry {
    std::size_t rows = 1, cols = 0;
    std::size_t side = 32; // block length along a row, and the tile's height with tiles
    bool tiles = false;

    PLAB_HOST_DEVICE std::size_t blocksPerRow() const { return (cols + side - 1) / side; }
    PLAB_HOST_DEVICE std::size_t blockCount() const {
        const std::size_t rowGroups = tiles ? (rows + side - 1) / side : rows;
        return rowGroups * blocksPerRow();
    }
    // fn(begin, length) for each contiguous span of block b.
    template <class Fn>
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void forEachSpan(std::size_t b, const Fn& fn) const {
        const std::size_t perRow = blocksPerRow();
        const std::size_t group = b / perRow, column = (b % perRow) * side;
        const std::size_t length = column + side < cols ? side : cols - column;
        if (!tiles) {
            fn(group * cols + column, length);
            return;
        }
        const std::size_t first = group * side, last = first + side < rows ? first + side : rows;
        for (std::size_t r = first; r < last; ++r)
            fn(r * cols + column, length);
    }
};

inline PLAB_HOST_DEVICE std::uint32_t absBitsOf(float x) {
    return element::bitsOf(x) & 0x7FFFFFFFu;
}

// Largest non-NaN |x| (Inf included), as float bits: NVFP4's tensor amax.
struct NonNanAmaxBits {
    const float* in;
    PLAB_HOST_DEVICE std::uint32_t operator()(std::size_t i) const {
        const std::uint32_t a = absBitsOf(in[i]);
        return a <= 0x7F800000u ? a : 0u;
    }
};

struct ScaleBlocks {
    const float* in;
    float* out;
    BlockInfo* info;
    Geometry geometry;
    ScaleRule rule;
    float tensorScale = 1.0f; // NVFP4's s_enc
    // The element rule and the random words the element cast will use: for 4/6, and to tell
    // which elements past the element max the cast rounds past it (clips).
    bool fourOverSix = false;
    ElementRule elementRule;
    bool stochastic = false;
    std::uint64_t seed = 0, stream = 0, firstIndex = 0;

    PLAB_INLINE_BODY PLAB_HOST_DEVICE void operator()(std::size_t b) const {
        BlockInfo facts;
        std::uint32_t amaxBits = 0, finiteBits = 0, minBits = 0x7F800000u, nonzero = 0;
        geometry.forEachSpan(b, [&](std::size_t begin, std::size_t length) {
            for (std::size_t i = begin; i < begin + length; ++i) { // branch-free: it vectorises
                const std::uint32_t a = absBitsOf(in[i]);
                const bool notNan = a <= 0x7F800000u, finite = a < 0x7F800000u;
                const std::uint32_t kept = notNan ? a : 0u, keptFinite = finite ? a : 0u;
                const std::uint32_t small = (finite && a != 0) ? a : 0x7F800000u;
                amaxBits = kept > amaxBits ? kept : amaxBits;
                finiteBits = keptFinite > finiteBits ? keptFinite : finiteBits;
                minBits = small < minBits ? small : minBits;
                nonzero += kept != 0 ? 1u : 0u;
            }
        });
        facts.nonzero = nonzero;
        facts.amax = element::floatOf(amaxBits);
        facts.finiteAmax = element::floatOf(finiteBits);
        facts.minNonzero = minBits == 0x7F800000u ? 0.0f : element::floatOf(minBits);
        facts.scale = blockScale(rule, facts.amax, facts.finiteAmax, tensorScale, rule.maxElement);
        if (fourOverSix && rule.kind == static_cast<int>(ScaleKind::Nvfp4)) {
            const BlockScale four =
                blockScale(rule, facts.amax, facts.finiteAmax, tensorScale, 4.0f);
            if (squaredError(b, four) < squaredError(b, facts.scale))
                facts.scale = four;
        }
        const float toElement = facts.scale.toElement;
        const std::uint32_t maxBits = element::bitsOf(rule.maxElement);
        std::uint32_t largest = 0; // of the scaled values, NaN left out
        geometry.forEachSpan(b, [&](std::size_t begin, std::size_t length) {
            for (std::size_t i = begin; i < begin + length; ++i) {
                const float scaled = in[i] * toElement;
                out[i] = scaled;
                const std::uint32_t a = absBitsOf(scaled);
                const std::uint32_t kept = a <= 0x7F800000u ? a : 0u;
                largest = kept > largest ? kept : largest;
            }
        });
        if (largest > maxBits) // rarely: which of the values past the max does the cast clip?
            geometry.forEachSpan(b, [&](std::size_t begin, std::size_t length) {
                for (std::size_t i = begin; i < begin + length; ++i) {
                    const std::uint32_t a = absBitsOf(out[i]);
                    if (a <= maxBits || a > 0x7F800000u)
                        continue;
                    // Clipped only if the cast rounds it past the max (its Overflow class).
                    const std::uint32_t word =
                        stochastic ? philox::elementWord(firstIndex + i, stream, seed) : 0u;
                    QuantClass cls;
                    quantizeElement(elementRule, out[i], word, cls);
                    facts.saturated += cls == QuantClass::Overflow ? 1u : 0u;
                }
            });
        info[b] = facts;
    }

    // The block's squared error, finite elements only, if it were cast with scale s.
    PLAB_HOST_DEVICE double squaredError(std::size_t b, const BlockScale& s) const {
        double sum = 0.0;
        geometry.forEachSpan(b, [&](std::size_t begin, std::size_t length) {
            for (std::size_t i = begin; i < begin + length; ++i) {
                if (absBitsOf(in[i]) >= 0x7F800000u)
                    continue;
                const std::uint32_t word =
                    stochastic ? philox::elementWord(firstIndex + i, stream, seed) : 0u;
                QuantClass cls;
                const float q = quantizeElement(elementRule, in[i] * s.toElement, word, cls);
                const double e = static_cast<double>(dequantize(q, s, tensorScale)) - in[i];
                sum += e * e;
            }
        });
        return sum;
    }
};

struct DequantizeBlocks {
    float* values;
    BlockInfo* info;
    Geometry geometry;
    float tensorScale = 1.0f;

    PLAB_INLINE_BODY PLAB_HOST_DEVICE void operator()(std::size_t b) const {
        const BlockScale s = info[b].scale;
        std::uint32_t nonzero = 0;
        geometry.forEachSpan(b, [&](std::size_t begin, std::size_t length) {
            for (std::size_t i = begin; i < begin + length; ++i) {
                const float v = dequantize(values[i], s, tensorScale);
                const std::uint32_t a = absBitsOf(v);
                nonzero += (a != 0 && a <= 0x7F800000u) ? 1u : 0u;
                values[i] = v;
            }
        });
        info[b].nonzeroOut = nonzero;
    }
};

} // namespace plab::blocks
