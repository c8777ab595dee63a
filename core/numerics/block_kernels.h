// The per-block passes of a block-scaled cast, as bodies over a block index (plain C++,
// __host__ __device__ under nvcc): the CPU quantiser (block_quantizer.cpp) loops over them and
// the GPU engine launches one thread per block, so both compute exactly the same scales.
//   ScaleBlocks:      amaxes -> the block's scale -> elements scaled into the element range.
//   (the element cast: the ordinary fused quantise pass over the whole tensor)
//   DequantizeBlocks: (x_q * decoded) / tensorScale, counting the block's nonzero outputs.
#pragma once

#include "numerics/block_lanes.h" // PLAB_BLOCK_LANES on the CPU
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
// The lambdas handed to forEachSpan too (a lambda does not inherit its caller's target).
#if defined(__GNUC__) && !defined(__CUDACC__)
#define PLAB_INLINE_LAMBDA __attribute__((always_inline))
#else
#define PLAB_INLINE_LAMBDA
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
    // Blocks in a run that is contiguous in memory: 1 along rows, a row group's with tiles.
    PLAB_HOST_DEVICE std::size_t blocksPerUnit() const { return tiles ? blocksPerRow() : 1; }
    // The element where block b starts, for b a multiple of blocksPerUnit() or blockCount()
    // (then the element count): the blocks [f, l) of whole units are the elements
    // [elementBegin(f), elementBegin(l)).
    PLAB_HOST_DEVICE std::size_t elementBegin(std::size_t b) const {
        const std::size_t perRow = blocksPerRow();
        if (!tiles)
            return (b / perRow) * cols + (b % perRow) * side;
        const std::size_t row = (b / perRow) * side;
        return (row < rows ? row : rows) * cols;
    }
    // Where block b is: its row group (a row, or a tile's rows), first column and width.
    struct Place {
        std::size_t group = 0, column = 0, length = 0;
    };
    PLAB_HOST_DEVICE Place place(std::size_t b) const {
        const std::size_t perRow = blocksPerRow();
        Place p;
        p.group = b / perRow;
        p.column = (b % perRow) * side;
        p.length = p.column + side < cols ? side : cols - p.column;
        return p;
    }
    // The place of the block after p (the CPU walks blocks in order without dividing).
    PLAB_HOST_DEVICE void advance(Place& p) const {
        p.column += side;
        if (p.column >= cols) {
            p.column = 0;
            ++p.group;
        }
        p.length = p.column + side < cols ? side : cols - p.column;
    }
    // fn(begin, length) for each contiguous span of the block at p.
    template <class Fn>
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void forEachSpan(const Place& p, const Fn& fn) const {
        if (!tiles) {
            fn(p.group * cols + p.column, p.length);
            return;
        }
        const std::size_t first = p.group * side, last = first + side < rows ? first + side : rows;
        for (std::size_t r = first; r < last; ++r)
            fn(r * cols + p.column, p.length);
    }
};

inline PLAB_HOST_DEVICE std::uint32_t absBitsOf(float x) {
    return element::bitsOf(x) & 0x7FFFFFFFu;
}

// What the scale pass needs of a block's elements, as |x| float bits (ordered as the values).
struct SpanFacts {
    std::uint32_t amaxBits = 0;          // largest non-NaN |x|
    std::uint32_t finiteBits = 0;        // largest finite |x|
    std::uint32_t minBits = 0x7F800000u; // smallest finite nonzero |x| (Inf bits: none)
    std::uint32_t nonzero = 0;           // nonzero non-NaN elements
    std::uint32_t atLeastClip = 0;       // scaled elements with clipBits <= |x| <= Inf
};

inline PLAB_HOST_DEVICE void scanElement(std::uint32_t a, SpanFacts& f) {
    const bool notNan = a <= 0x7F800000u, finite = a < 0x7F800000u;
    const std::uint32_t kept = notNan ? a : 0u, keptFinite = finite ? a : 0u;
    const std::uint32_t small = (finite && a != 0) ? a : 0x7F800000u;
    f.amaxBits = kept > f.amaxBits ? kept : f.amaxBits;
    f.finiteBits = keptFinite > f.finiteBits ? keptFinite : f.finiteBits;
    f.minBits = small < f.minBits ? small : f.minBits;
    f.nonzero += kept != 0 ? 1u : 0u;
}

// The spans below take kLanes: 16, whole 16-element chunks through the 16-lane vectors of
// block_lanes.h, for code compiled for AVX-512 alone (block_range_passes.cpp's 16-block groups);
// 8, whole 8-element chunks through its 8-lane ones, for code compiled for AVX2 alone (block by
// block); 0, the plain loops, everywhere else (the GPU's kernels, SSE). GCC 12 lowers a
// comparison of 16-lane vectors one element at a time for AVX2 and SSE (no 64-byte vector mode
// there), and leaves the plain loop of a block's facts scalar.

// The amaxes, smallest nonzero and nonzero count of in[0, length), added to f.
template <int kLanes = 0>
PLAB_INLINE_BODY PLAB_HOST_DEVICE void scanSpan(const float* in, std::size_t length, SpanFacts& f) {
    std::size_t i = 0;
#if defined(PLAB_BLOCK_LANES)
    if constexpr (kLanes != 0)
        if (length >= std::size_t{kLanes}) {
            i = length & ~static_cast<std::size_t>(kLanes - 1);
            lanes::LaneFactsOf<kLanes> lf;
            lanes::scanLanes(in, i, lf);
            // Without an Inf the finite amax is the amax: its fold is skipped.
            const std::uint32_t am = lanes::maxAcross(lf.amax);
            const std::uint32_t fi = am < 0x7F800000u ? am : lanes::maxAcross(lf.finite);
            const std::uint32_t mi = lanes::minAcross(lf.small);
            f.amaxBits = am > f.amaxBits ? am : f.amaxBits;
            f.finiteBits = fi > f.finiteBits ? fi : f.finiteBits;
            f.minBits = mi < f.minBits ? mi : f.minBits;
            f.nonzero += lanes::sumAcross(lf.nonzero);
        }
#endif
    for (; i < length; ++i)
        scanElement(absBitsOf(in[i]), f);
}

// out = in * toElement over a span, counting the scaled values with clipBits <= |x| <= Inf,
// |x| being the bits under magnitudeMask (ScaleBlocks::magnitudeMask).
template <int kLanes = 0>
PLAB_INLINE_BODY PLAB_HOST_DEVICE void scaleSpan(const float* in, float* out, std::size_t length,
                                                 float toElement, std::uint32_t clipBits,
                                                 std::uint32_t magnitudeMask, SpanFacts& f) {
    std::size_t i = 0;
    std::uint32_t clipped = 0;
#if defined(PLAB_BLOCK_LANES)
    if constexpr (kLanes != 0)
        if (length >= std::size_t{kLanes}) {
            i = length & ~static_cast<std::size_t>(kLanes - 1);
            clipped += lanes::sumAcross(lanes::scaleLanes<true, kLanes>(
                in, out, i, toElement, static_cast<std::int32_t>(clipBits),
                static_cast<std::int32_t>(magnitudeMask)));
        }
#endif
    for (; i < length; ++i) {
        const float scaled = in[i] * toElement;
        out[i] = scaled;
        const std::uint32_t a = element::bitsOf(scaled) & magnitudeMask;
        clipped += (a >= clipBits && a <= 0x7F800000u) ? 1u : 0u;
    }
    f.atLeastClip += clipped;
}

// values = (x_q * decoded) / tensorScale over a span; returns the nonzero non-NaN results.
template <int kLanes = 0>
PLAB_INLINE_BODY PLAB_HOST_DEVICE std::uint32_t
dequantizeSpan(float* values, std::size_t length, const BlockScale& s, float tensorScale) {
    std::size_t i = 0;
    std::uint32_t nonzero = 0;
#if defined(PLAB_BLOCK_LANES)
    if constexpr (kLanes != 0)
        if (length >= std::size_t{kLanes}) {
            i = length & ~static_cast<std::size_t>(kLanes - 1);
            nonzero += lanes::sumAcross(
                tensorScale == 1.0f
                    ? lanes::dequantizeLanes<true, true, kLanes>(values, i, s.decoded, tensorScale)
                    : lanes::dequantizeLanes<true, false, kLanes>(values, i, s.decoded,
                                                                  tensorScale));
        }
#endif
    for (; i < length; ++i) {
        const float v = dequantize(values[i], s, tensorScale);
        const std::uint32_t a = absBitsOf(v);
        nonzero += (a != 0 && a <= 0x7F800000u) ? 1u : 0u;
        values[i] = v;
    }
    return nonzero;
}

// Largest non-NaN |x| (Inf included), as float bits: NVFP4's tensor amax.
struct NonNanAmaxBits {
    const float* in;
    PLAB_HOST_DEVICE std::uint32_t operator()(std::size_t i) const {
        const std::uint32_t a = absBitsOf(in[i]);
        return a <= 0x7F800000u ? a : 0u;
    }
};

// The smallest |x| bits the element cast counts as clipped (rounded past the max: its Overflow
// class). For the deterministic roundings the class is monotone in |x|, so it is searched once
// per cast; stochastic rounding decides per element, so there it is the first value past the max
// (the few such elements are then checked with their random words). 0x7F800001: none clips.
inline PLAB_HOST_DEVICE std::uint32_t clipThresholdBits(const ElementRule& rule, float maxElement,
                                                        bool stochastic) {
    std::uint32_t lo = element::bitsOf(maxElement) + 1u, hi = 0x7F800001u;
    if (stochastic)
        return lo;
    while (lo < hi) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        QuantClass cls;
        quantizeElement(rule, element::floatOf(mid), 0u, cls);
        if (cls == QuantClass::Overflow)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

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
    std::uint32_t clipBits = 0x7F800001u; // clipThresholdBits of the element rule
    // The bits compared with clipBits: |x| for a signed element format; for an unsigned one the
    // sign is kept, so that its negative values (out of range below: its Overflow class, but
    // cast to its smallest value) are not counted as clipped to the max.
    std::uint32_t magnitudeMask = 0x7FFFFFFFu;
    std::uint64_t seed = 0, stream = 0, firstIndex = 0;
    // With stochastic rounding, leave the candidates in `saturated` for the caller to count
    // from the cast's own clip flags (the CPU: a random word per candidate costs more than the
    // block's whole cast otherwise).
    bool deferStochasticClips = false;
    // Nobody reads the blocks' counts (a cast without statistics): the CPU's 16-block passes
    // find only the amaxes and count nothing, leaving nonzero, minNonzero and saturated 0.
    bool scalesOnly = false;
    // The tensor is larger than the caches: the CPU's fused pass prefetches ahead.
    bool prefetch = false;

    PLAB_INLINE_BODY PLAB_HOST_DEVICE void operator()(std::size_t b) const {
        (*this)(b, geometry.place(b));
    }
    // Three steps, so that the CPU can run each over many blocks in turn (independent blocks
    // overlap in the core; one block's scale is a long chain of dependent operations).
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void operator()(std::size_t b,
                                                      const Geometry::Place& at) const {
        allSteps(b, at);
    }
    // kLanes: as the spans' (above).
    template <int kLanes = 0>
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void allSteps(std::size_t b,
                                                    const Geometry::Place& at) const {
        findFacts<kLanes>(b, at);
        chooseScale(b, at);
        applyScale<kLanes>(b, at);
    }

    // The block's amaxes, smallest nonzero and nonzero count, into info[b] (the rest reset).
    template <int kLanes = 0>
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void findFacts(std::size_t b,
                                                     const Geometry::Place& at) const {
        SpanFacts span;
        geometry.forEachSpan(at, [&](std::size_t begin, std::size_t length) PLAB_INLINE_LAMBDA {
            scanSpan<kLanes>(in + begin, length, span);
        });
        info[b] = factsOf(span);
    }

    static PLAB_INLINE_BODY PLAB_HOST_DEVICE BlockInfo factsOf(const SpanFacts& span) {
        BlockInfo facts;
        facts.nonzero = span.nonzero;
        facts.amax = element::floatOf(span.amaxBits);
        facts.finiteAmax = element::floatOf(span.finiteBits);
        facts.minNonzero = span.minBits == 0x7F800000u ? 0.0f : element::floatOf(span.minBits);
        return facts;
    }

    // The block's scale from its amaxes (findFacts first), into info[b].scale.
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void chooseScale(std::size_t b,
                                                       const Geometry::Place& at) const {
        const BlockInfo& facts = info[b];
        BlockScale scale =
            blockScale(rule, facts.amax, facts.finiteAmax, tensorScale, rule.maxElement);
        if (fourOverSix && rule.kind == static_cast<int>(ScaleKind::Nvfp4)) {
            const BlockScale four =
                blockScale(rule, facts.amax, facts.finiteAmax, tensorScale, 4.0f);
            if (squaredError(at, four) < squaredError(at, scale))
                scale = four;
        }
        info[b].scale = scale;
    }

    // The block's elements scaled into out, and the ones the cast will clip counted.
    template <int kLanes = 0>
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void applyScale(std::size_t b,
                                                      const Geometry::Place& at) const {
        const float toElement = info[b].scale.toElement;
        SpanFacts span;
        geometry.forEachSpan(at, [&](std::size_t begin, std::size_t length) PLAB_INLINE_LAMBDA {
            scaleSpan<kLanes>(in + begin, out + begin, length, toElement, clipBits, magnitudeMask,
                              span);
        });
        info[b].saturated = saturatedOf(at, span.atLeastClip);
    }

    // Of the `candidates` scaled values at or past clipBits, the ones the cast clips: all of
    // them, or with stochastic rounding the ones their random words round past the max.
    PLAB_INLINE_BODY PLAB_HOST_DEVICE std::uint32_t saturatedOf(const Geometry::Place& at,
                                                                std::uint32_t candidates) const {
        if (!stochastic || candidates == 0 || deferStochasticClips)
            return candidates;
        std::uint32_t saturated = 0;
        geometry.forEachSpan(at, [&](std::size_t begin, std::size_t length) PLAB_INLINE_LAMBDA {
            for (std::size_t i = begin; i < begin + length; ++i) {
                const std::uint32_t a = element::bitsOf(out[i]) & magnitudeMask;
                if (a < clipBits || a > 0x7F800000u)
                    continue;
                QuantClass cls; // clipped: the cast's Overflow class
                quantizeElement(elementRule, out[i],
                                philox::elementWord(firstIndex + i, stream, seed), cls);
                saturated += cls == QuantClass::Overflow ? 1u : 0u;
            }
        });
        return saturated;
    }

    // The block's squared error, finite elements only, if it were cast with scale s.
    PLAB_HOST_DEVICE double squaredError(const Geometry::Place& at, const BlockScale& s) const {
        double sum = 0.0;
        geometry.forEachSpan(at, [&](std::size_t begin, std::size_t length) PLAB_INLINE_LAMBDA {
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
    bool scalesOnly = false; // as ScaleBlocks': the CPU's 16-block passes leave nonzeroOut 0

    PLAB_INLINE_BODY PLAB_HOST_DEVICE void operator()(std::size_t b) const {
        (*this)(b, geometry.place(b));
    }
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void operator()(std::size_t b,
                                                      const Geometry::Place& at) const {
        dequantizeBlock(b, at);
    }
    template <int kLanes = 0> // as the spans' (above)
    PLAB_INLINE_BODY PLAB_HOST_DEVICE void dequantizeBlock(std::size_t b,
                                                           const Geometry::Place& at) const {
        const BlockScale s = info[b].scale;
        std::uint32_t nonzero = 0;
        geometry.forEachSpan(at, [&](std::size_t begin, std::size_t length) PLAB_INLINE_LAMBDA {
            nonzero += dequantizeSpan<kLanes>(values + begin, length, s, tensorScale);
        });
        info[b].nonzeroOut = nonzero;
    }
};

} // namespace plab::blocks
