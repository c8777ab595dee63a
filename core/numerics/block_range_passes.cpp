// The CPU's block passes (block_range_passes.h). Blocks are walked in order, their places
// advanced rather than divided out per block. On a CPU with AVX-512 the 16-block groups fold the
// per-block lanes of 16 blocks together (lanes::foldEach: 15 vector operations where 16 separate
// folds take 64), which is most of a 16-element block's cost otherwise; with AVX2 alone, the
// fused facts-and-scale pass and the dequantising go in groups of 8 blocks in 8-lane vectors,
// the rest block by block in 8 lanes (see PLAB_LANES_TARGET for why not 16); elsewhere plain
// loops block by block. All give the same bits.
#include "numerics/block_range_passes.h"

#include "util/cpu_features.h"
#include "util/vector_clones.h"

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <exception>
#include <iterator>
#include <type_traits>

namespace plab::blocks {
namespace {

// 1-D blocks of a multiple of 16 elements: a row's whole blocks go 16 at a time (overBlocks),
// block b + k of a group at element begin + k * side.
bool groupable(const Geometry& g) {
    return !g.tiles && g.side % 16 == 0;
}

#if defined(PLAB_BLOCK_LANES)

// kCounts false (ScaleBlocks::scalesOnly): the amaxes alone, the records' counts 0. kTiles: 16
// whole 16 x 16 tiles side by side (tileGroups), begin their row group's first element, block
// k the 16 rows' spans at column k * 16 from there.
template <bool kCounts, bool kTiles = false>
PLAB_INLINE_BODY void findFacts16(const ScaleBlocks& body, std::size_t b, std::size_t begin) {
    using lanes::I16;
    const std::size_t side = body.geometry.side, cols = body.geometry.cols;
    I16 amax[16], finite[16], small[16], nonzero[16];
    for (std::size_t k = 0; k < 16; ++k) {
        lanes::LaneFacts lf;
        if constexpr (kTiles) {
            for (std::size_t r = 0; r < 16; ++r)
                lanes::scanLanes<kCounts>(body.in + begin + r * cols + k * 16, 16, lf);
        } else {
            lanes::scanLanes<kCounts>(body.in + begin + k * side, side, lf);
        }
        amax[k] = lf.amax;
        finite[k] = lf.finite;
        small[k] = lf.small;
        nonzero[k] = lf.nonzero;
    }
    // ScaleBlocks::factsOf for the 16 blocks, written as 16 whole BlockInfos (lanes::
    // recordsOfWords) rather than word by word.
    I16 words[8];
    words[kWordAmax] = lanes::inRecordLaneOrder(lanes::foldEach(amax, lanes::Max{}));
    words[kWordFiniteAmax] = lanes::inRecordLaneOrder(lanes::foldEach(finite, lanes::Max{}));
    words[kWordMinNonzero] = words[kWordNonzero] = I16{};
    if constexpr (kCounts) {
        const I16 sm = lanes::foldEach(small, lanes::Min{});
        words[kWordMinNonzero] = lanes::inRecordLaneOrder(sm == lanes::kInfBits ? I16{} : sm);
        words[kWordNonzero] = lanes::inRecordLaneOrder(lanes::foldEach(nonzero, lanes::Plus{}));
    }
    words[kWordToElement] = words[kWordDecoded] = (I16)(lanes::F16{} + 1.0f);
    words[kWordNonzeroOut] = words[kWordSaturated] = I16{};
    lanes::recordsOfWords(words);
    lanes::storeRecords(body.info + b, words);
}

// block_scale.h's rules on 16 blocks' amaxes at once, the same float and integer operations
// lane by lane (so the same bits; a test holds the lanes to the scalar rule). One vector
// division where each block's scalar chain has one or two. Not for 4/6 (per-block trials).
template <class I>
PLAB_INLINE_BODY I pow2Lanes(I x) { // 2^x, x in [-149, 127], as bits
    const I normal = (x + 127) << 23;
    const I subnormal = (I{} + 1) << ((x + 149) & 31);
    return x >= -126 ? normal : subnormal;
}

// The scales of W blocks (16, or 8 for AVX2) from their amaxes, lane by lane (any lane order).
template <class F16>
PLAB_INLINE_BODY void scalesOfLanes(const ScaleBlocks& body, F16 amax, F16 finite, F16& toElement,
                                    F16& decoded) {
    using I16 = typename lanes::Lanes<sizeof(F16) / sizeof(float)>::I;
    const ScaleRule& rule = body.rule;
    if (rule.kind == static_cast<int>(ScaleKind::Nvfp4)) {
        // q_b = e4m3_rne_saturate(amax_b * (s_enc * (1 / 6))), r_b = min(1 / (q_b * (1 / s_enc)))
        const F16 v = amax * (body.tensorScale * (1.0f / rule.maxElement));
        const I16 u = (I16)v; // v >= 0: the sign bit is clear, shifts are logical
        const I16 normal = (u + 0x7FFFF + ((u >> 20) & 1)) & static_cast<std::int32_t>(0xFFF00000u);
        const F16 sub = ((v * 512.0f + 12582912.0f) - 12582912.0f) * 0.001953125f;
        const F16 q = v >= 448.0f ? F16{} + 448.0f : (v >= 0.015625f ? (F16)normal : sub);
        F16 r = 1.0f / (q * (1.0f / body.tensorScale));
        r = r < FLT_MAX ? r : F16{} + FLT_MAX;
        toElement = q == 0.0f ? F16{} : r;
        decoded = q;
    } else if (rule.kind == static_cast<int>(ScaleKind::Fp32)) {
        F16 scale = rule.maxElement / finite;
        scale = scale < FLT_MAX ? scale : F16{} + FLT_MAX;
        scale = scale > kMinFp32BlockScale ? scale : F16{} + kMinFp32BlockScale;
        if (rule.powerOfTwo)
            scale = scale >= 0x1p-126f ? (F16)((I16)scale & static_cast<std::int32_t>(0xFF800000u))
                                       : F16{} + kMinFp32BlockScale;
        scale = finite > 0.0f ? scale : F16{} + 1.0f;
        toElement = scale;
        decoded = 1.0f / scale;
    } else {
        I16 x;
        if (rule.kind == static_cast<int>(ScaleKind::MxCeil)) {
            const I16 bits = (I16)(finite * (1.0f / rule.maxElement));
            const I16 field = (bits >> 23) & 0xFF;
            const I16 roundedUp = field + ((bits & 0x7FFFFF) != 0 ? I16{} + 1 : I16{});
            I16 code = field == 0 ? (bits > 0x00400000 ? I16{} + 1 : I16{}) : roundedUp;
            code = code > 254 ? I16{} + 254 : code;
            x = code - 127;
        } else {
            // floor(log2 amax): the exponent field; a subnormal's from amax * 2^23 (exact).
            const I16 field = (I16)finite >> 23;
            const I16 fromScaled = ((I16)(finite * 8388608.0f) >> 23) - 23;
            I16 e = (field > 0 ? field : fromScaled) - 127 - rule.emaxElement;
            e = e < -127 ? I16{} - 127 : e;
            e = e > 127 ? I16{} + 127 : e;
            x = finite > 0.0f ? e : I16{} - 127;
        }
        toElement = (F16)pow2Lanes(-x);
        decoded = (F16)pow2Lanes(x);
    }
}

// scalesOfLanes on W blocks (16, or 8 for AVX2) at once, their records read and written whole.
template <int W>
PLAB_INLINE_BODY void chooseScaleGroup(const ScaleBlocks& body, std::size_t b) {
    using I = typename lanes::Lanes<W>::I;
    using F = typename lanes::Lanes<W>::F;
    // The W blocks' facts as one vector per word (any lane order: the rules work lane by lane).
    I words[8];
    lanes::loadRecords(body.info + b, words);
    lanes::wordsOfRecords(words);
    F toElement, decoded;
    scalesOfLanes(body, (F)words[kWordAmax], (F)words[kWordFiniteAmax], toElement, decoded);
    words[kWordToElement] = (I)toElement;
    words[kWordDecoded] = (I)decoded;
    lanes::recordsOfWords(words);
    lanes::storeRecords(body.info + b, words);
}

// kTiles: 16 x 16 tiles side by side (findFacts16's).
template <bool kCounts, bool kTiles = false>
PLAB_INLINE_BODY void applyScale16(const ScaleBlocks& body, std::size_t b, std::size_t first) {
    const std::size_t side = body.geometry.side, cols = body.geometry.cols;
    const auto clip = static_cast<std::int32_t>(body.clipBits);
    const auto mask = static_cast<std::int32_t>(body.magnitudeMask);
    lanes::I16 clipped[16];
    for (std::size_t k = 0; k < 16; ++k) {
        const float toElement = body.info[b + k].scale.toElement;
        if constexpr (kTiles) {
            clipped[k] = lanes::I16{};
            for (std::size_t r = 0; r < 16; ++r) {
                const std::size_t begin = first + r * cols + k * 16;
                clipped[k] += lanes::scaleLanes<kCounts>(body.in + begin, body.out + begin, 16,
                                                         toElement, clip, mask);
            }
        } else {
            const std::size_t begin = first + k * side;
            clipped[k] = lanes::scaleLanes<kCounts>(body.in + begin, body.out + begin, side,
                                                    toElement, clip, mask);
        }
    }
    if constexpr (kCounts) {
        const lanes::I16 candidates = lanes::foldEach(clipped, lanes::Plus{});
        for (std::size_t k = 0; k < 16; ++k) {
            const auto c = static_cast<std::uint32_t>(candidates[k]);
            body.info[b + k].saturated = (c == 0 || !body.stochastic || body.deferStochasticClips)
                                             ? c
                                             : body.saturatedOf(body.geometry.place(b + k), c);
        }
    }
}

// W blocks (16, or 8 for AVX2) dequantised at once, their nonzero counts folded together.
// kSide and kUnitScale (tensorScale 1) as factsAndScaleGroup's kSide: known at compile time where
// they are the common case, so that a 16-element group runs without loops or branches.
// kTiles: 16 x 16 tiles side by side (findFacts16's).
template <int W, bool kCounts, std::size_t kSide, bool kUnitScale, bool kTiles = false>
PLAB_INLINE_BODY void dequantizeLanesGroup(const DequantizeBlocks& body, std::size_t b,
                                           std::size_t begin) {
    using I = typename lanes::Lanes<W>::I;
    // Locals: stores through values and info could otherwise alias body's fields.
    const std::size_t side = kSide != 0 ? kSide : body.geometry.side, cols = body.geometry.cols;
    float* values = body.values + begin;
    BlockInfo* info = body.info + b;
    const float tensorScale = kUnitScale ? 1.0f : body.tensorScale;
    I nonzero[W];
    if constexpr (kTiles) {
        for (std::size_t k = 0; k < W; ++k) {
            nonzero[k] = I{};
            for (std::size_t r = 0; r < 16; ++r)
                nonzero[k] += lanes::dequantizeLanes<kCounts, kUnitScale, W>(
                    values + r * cols + k * 16, 16, info[k].scale.decoded, tensorScale);
        }
    } else {
#pragma GCC unroll 16
        for (std::size_t k = 0; k < W; ++k)
            nonzero[k] = lanes::dequantizeLanes<kCounts, kUnitScale, W>(
                values + k * side, side, info[k].scale.decoded, tensorScale);
    }
    if constexpr (kCounts) {
        const I counts = lanes::foldEach(nonzero, lanes::Plus{});
#pragma GCC unroll 16
        for (std::size_t k = 0; k < W; ++k)
            info[k].nonzeroOut = static_cast<std::uint32_t>(counts[k]);
    }
}

template <int W, bool kCounts, bool kTiles = false>
PLAB_INLINE_BODY void dequantizeGroup(const DequantizeBlocks& body, std::size_t b,
                                      std::size_t begin) {
    const bool unit = body.tensorScale == 1.0f; // MX and FP32 blocks: x / 1 is x, no division
    if constexpr (kTiles)
        unit ? dequantizeLanesGroup<W, kCounts, 16, true, true>(body, b, begin)
             : dequantizeLanesGroup<W, kCounts, 16, false, true>(body, b, begin);
    else if (body.geometry.side == 16)
        unit ? dequantizeLanesGroup<W, kCounts, 16, true>(body, b, begin)
             : dequantizeLanesGroup<W, kCounts, 16, false>(body, b, begin);
    else
        unit ? dequantizeLanesGroup<W, kCounts, 0, true>(body, b, begin)
             : dequantizeLanesGroup<W, kCounts, 0, false>(body, b, begin);
}

// findFacts16, chooseScaleGroup and applyScale16 in one pass over W blocks (16, or 8 for AVX2):
// the facts, the scales and the scaled elements while the group's W x side elements are in L1
// (16-element blocks' in registers), and the records written once instead of three times. The
// same values as the three passes, in fewer operations: the finite amax is found apart only in
// groups with an Inf (lanes::scanLive), and the saturated elements counted only in groups with a
// block whose scaled amax reaches the clip threshold (x * toElement is monotone in |x|: where
// the amax's does not reach it, no element's does).
// kSide: the block length when known at compile time (16: NVFP4's, whose group then stays in
// registers), else 0. kPartial: only the first `blocks` (< W) of the group's lanes are blocks
// (a row's last whole blocks; the other lanes hold the folds' identities and are not written).
template <int W, bool kCounts, std::size_t kSide, bool kPartial = false>
PLAB_INLINE_BODY void factsAndScaleGroup(const ScaleBlocks& body, std::size_t b, std::size_t begin,
                                         std::size_t blocks = W) {
    using I = typename lanes::Lanes<W>::I;
    using F = typename lanes::Lanes<W>::F;
    // Locals: stores through out and info could otherwise alias body's fields (reloaded per block).
    const std::size_t side = kSide != 0 ? kSide : body.geometry.side;
    const float* in = body.in + begin;
    float* out = body.out + begin;
    const auto clip = static_cast<std::int32_t>(body.clipBits);
    const auto mask = static_cast<std::int32_t>(body.magnitudeMask);
    const std::size_t count = kPartial ? blocks : W;
    // The group eight groups ahead (its W x side / 16 lines of 16 floats, in and out) on its way
    // into cache: with a tensor larger than the caches the loads and the stores' line fills
    // otherwise wait on memory (the hardware's prefetch falls behind; docs/performance.md,
    // Build). A tensor in cache does without (there the prefetches would be a twelfth of the
    // pass's instructions).
    if (body.prefetch) {
        const std::size_t ahead = 8 * W * side;
#pragma GCC unroll 16
        for (std::size_t j = 0; j < W * side / 16; ++j) {
            __builtin_prefetch(in + ahead + j * 16);
            __builtin_prefetch(out + ahead + j * 16, 1);
        }
    }
    // Each block's lanes folded with its neighbours' as soon as they are scanned (foldAsMade):
    // kept for one fold at the end, the 3 x W vectors did not fit the registers. The lanes
    // without a block (kPartial) hold the folds' identities.
    struct Live {
        I amax, shiftedMin, nonzero;
    };
    const auto scanned = [&](std::size_t k) __attribute__((always_inline)) {
        Live f{I{}, I{} + 0x7FFFFFFF, I{}};
        if (kPartial && k >= count)
            return f;
        if constexpr (kCounts) {
            lanes::LiveFactsOf<W> lf;
            lanes::scanLive(in + k * side, side, lf);
            f = {lf.amax, lf.shiftedMin, lf.nonzero};
        } else {
            lanes::LaneFactsOf<W> lf;
            lanes::scanLanes<false>(in + k * side, side, lf);
            f.amax = lf.amax;
        }
        return f;
    };
    const auto fold = [](auto level, const Live& x, const Live& y) __attribute__((always_inline)) {
        constexpr int kLevel = decltype(level)::value;
        return Live{lanes::foldPair<kLevel>(x.amax, y.amax, lanes::Max{}),
                    kCounts ? lanes::foldPair<kLevel>(x.shiftedMin, y.shiftedMin, lanes::Min{})
                            : x.shiftedMin,
                    kCounts ? lanes::foldPair<kLevel>(x.nonzero, y.nonzero, lanes::Plus{})
                            : x.nonzero};
    };
    const Live facts = lanes::foldAsMade<W>(scanned, fold);
    const I amaxOf = facts.amax; // lane k: block b + k
    I finiteOf = amaxOf;
    if (lanes::anyLane(amaxOf == lanes::kInfBits)) { // rare: an Inf input
        I finite[W];
        for (std::size_t k = count; k < W; ++k)
            finite[k] = I{};
        for (std::size_t k = 0; k < count; ++k)
            finite[k] = lanes::finiteAmaxLanes<W>(in + k * side, side);
        finiteOf = lanes::foldEach(finite, lanes::Max{});
    }
    F toElement, decoded;
    scalesOfLanes(body, (F)amaxOf, (F)finiteOf, toElement, decoded);
    I words[8];
    words[kWordMinNonzero] = words[kWordNonzero] = words[kWordSaturated] = I{};
    // A NaN (Inf * 0) reads as reaching it: the exact count then decides.
    const I amaxScaled = (I)((F)amaxOf * toElement) & 0x7FFFFFFF;
    if (kCounts && lanes::anyLane(amaxScaled >= clip)) {
        I clipped[W];
        for (std::size_t k = count; k < W; ++k)
            clipped[k] = I{};
#pragma GCC unroll 16
        for (std::size_t k = 0; k < count; ++k)
            clipped[k] = lanes::scaleLanes<true, W>(in + k * side, out + k * side, side,
                                                    toElement[k], clip, mask);
        words[kWordSaturated] = lanes::inRecordLaneOrder(lanes::foldEach(clipped, lanes::Plus{}));
    } else {
#pragma GCC unroll 16
        for (std::size_t k = 0; k < count; ++k)
            lanes::scaleLanes<false, W>(in + k * side, out + k * side, side, toElement[k], clip,
                                        mask);
    }
    if constexpr (kCounts) {
        words[kWordMinNonzero] = lanes::inRecordLaneOrder(lanes::liveMinNonzero(facts.shiftedMin));
        words[kWordNonzero] = lanes::inRecordLaneOrder(facts.nonzero);
    }
    words[kWordAmax] = lanes::inRecordLaneOrder(amaxOf);
    words[kWordFiniteAmax] = lanes::inRecordLaneOrder(finiteOf);
    words[kWordToElement] = lanes::inRecordLaneOrder((I)toElement);
    words[kWordDecoded] = lanes::inRecordLaneOrder((I)decoded);
    words[kWordNonzeroOut] = I{};
    lanes::recordsOfWords(words);
    if constexpr (kPartial)
        std::memcpy(body.info + b, words, count * sizeof(BlockInfo));
    else
        lanes::storeRecords(body.info + b, words);
}
#endif

// Blocks [first, last): with kGroups (16, or 8), runs of kGroups whole blocks of one row through
// `group(b, begin)` (begin: block b's first element) where the geometry allows, the rest (a
// row's last blocks, a partial one among them) one at a time through `one(b, place)`; or, for a
// row's last 2 to kGroups - 1 whole blocks, all at once through `tail(b, begin, count)` where it
// returns true (it has done them). With kGroups 0, every block through `one`.
struct NoTail {
    bool operator()(std::size_t, std::size_t, std::size_t) const { return false; }
};
template <int kGroups, class Group, class One, class Tail = NoTail>
PLAB_INLINE_BODY void overBlocks(const Geometry& g, std::size_t first, std::size_t last,
                                 const Group& group, const One& one, const Tail& tail = {}) {
    Geometry::Place at = g.place(first);
    std::size_t b = first;
#if defined(PLAB_BLOCK_LANES)
    if constexpr (kGroups != 0) {
        if (groupable(g) && g.cols % g.side == 0) { // whole blocks end to end, across rows too
            for (; b + kGroups <= last; b += kGroups)
                group(b, b * g.side);
            if (last - b >= 2 && tail(b, b * g.side, last - b))
                b = last;
            at = g.place(b);
        } else if (groupable(g)) {
            const std::size_t wholeWidth = g.cols / g.side * g.side;
            while (b < last) {
                // The row's whole blocks from here on (0 at its partial block).
                const std::size_t whole = std::min(last - b, (wholeWidth - at.column) / g.side);
                const std::size_t begin = at.group * g.cols + at.column;
                std::size_t done = 0;
                if (whole >= kGroups) {
                    group(b, begin);
                    done = kGroups;
                } else if (whole >= 2 && tail(b, begin, whole)) {
                    done = whole;
                }
                if (done == 0) {
                    one(b, at);
                    ++b;
                    g.advance(at);
                    continue;
                }
                b += done; // the next place: along the row, or the next row's start
                at.column += done * g.side;
                if (at.column >= g.cols) {
                    at.column = 0;
                    ++at.group;
                }
                at.length = at.column + g.side < g.cols ? g.side : g.cols - at.column;
            }
            return;
        }
    }
#endif
    (void)group;
    (void)tail;
    for (; b < last; ++b, g.advance(at))
        one(b, at);
}

// The passes, each instantiated three times below: kLanes 16 with the 16-block groups (AVX-512),
// else block by block (the bodies of block_kernels.h alone), their spans in 8 lanes (AVX2) or
// in plain loops (0).

// 16 x 16 tiles (weights): 16 whole tiles side by side in a whole row group through
// `group(b, begin)` (begin: the group's first row, first column), the others (a row's last
// tiles, a partial row group) through `one(b, place)`, in block order.
template <class Group, class One>
PLAB_INLINE_BODY void tileGroups(const Geometry& g, std::size_t first, std::size_t last,
                                 const Group& group, const One& one) {
    Geometry::Place at = g.place(first);
    for (std::size_t b = first; b < last;) {
        const bool wholeGroup = (at.group + 1) * 16 <= g.rows;
        if (wholeGroup && last - b >= 16 && at.column + 256 <= g.cols) {
            group(b, at.group * 16 * g.cols + at.column);
            b += 16;
            at.column += 256 - 16; // advance() moves on the last 16 and wraps at the row's end
            g.advance(at);
            continue;
        }
        one(b, at);
        ++b;
        g.advance(at);
    }
}

// A pass's 16-block groups: along rows (overBlocks), or 16 x 16 tiles side by side
// (tileGroups); group(b, begin, tiles) gets std::true_type for tiles.
template <int kLanes, class Group, class One>
PLAB_INLINE_BODY void passGroups(const Geometry& g, std::size_t first, std::size_t last,
                                 const Group& group, const One& one) {
#if defined(PLAB_BLOCK_LANES)
    if constexpr (kLanes == 16)
        if (g.tiles && g.side == 16)
            return tileGroups(
                g, first, last,
                [&](std::size_t b, std::size_t begin)
                    PLAB_INLINE_LAMBDA { group(b, begin, std::true_type{}); },
                one);
#endif
    overBlocks<kLanes == 16 ? 16 : 0>(
        g, first, last,
        [&](std::size_t b, std::size_t begin)
            PLAB_INLINE_LAMBDA { group(b, begin, std::false_type{}); },
        one);
}

template <int kLanes>
PLAB_INLINE_BODY void findFactsPass(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    passGroups<kLanes>(
        body.geometry, first, last,
        [&](std::size_t b, std::size_t begin, auto tiles) PLAB_INLINE_LAMBDA {
#if defined(PLAB_BLOCK_LANES)
            constexpr bool kTiles = decltype(tiles)::value;
            if constexpr (kLanes == 16)
                body.scalesOnly ? findFacts16<false, kTiles>(body, b, begin)
                                : findFacts16<true, kTiles>(body, b, begin);
#endif
            (void)b, (void)begin, (void)tiles;
        },
        [&](std::size_t b, const Geometry::Place& at)
            PLAB_INLINE_LAMBDA { body.findFacts<kLanes>(b, at); });
}

template <int kLanes>
PLAB_INLINE_BODY void scalePass(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    // 16 (or 8) blocks' scales at once where no per-block trial (4/6) is asked for (the scale
    // needs no place); else block by block (independent chains overlap).
    std::size_t block = first;
#if defined(PLAB_BLOCK_LANES)
    if constexpr (kLanes != 0)
        if (!body.fourOverSix)
            for (; block + kLanes <= last; block += kLanes)
                chooseScaleGroup<kLanes>(body, block);
#endif
    Geometry::Place at = body.geometry.place(block);
    for (; block < last; ++block, body.geometry.advance(at))
        body.chooseScale(block, at);
    passGroups<kLanes>(
        body.geometry, first, last,
        [&](std::size_t b, std::size_t begin, auto tiles) PLAB_INLINE_LAMBDA {
#if defined(PLAB_BLOCK_LANES)
            constexpr bool kTiles = decltype(tiles)::value;
            if constexpr (kLanes == 16)
                body.scalesOnly ? applyScale16<false, kTiles>(body, b, begin)
                                : applyScale16<true, kTiles>(body, b, begin);
#endif
            (void)b, (void)begin, (void)tiles;
        },
        [&](std::size_t b, const Geometry::Place& place)
            PLAB_INLINE_LAMBDA { body.applyScale<kLanes>(b, place); });
}

template <int kLanes>
PLAB_INLINE_BODY void dequantizePass(const DequantizeBlocks& body, std::size_t first,
                                     std::size_t last) {
    passGroups<kLanes>(
        body.geometry, first, last,
        [&](std::size_t b, std::size_t begin, auto tiles) PLAB_INLINE_LAMBDA {
#if defined(PLAB_BLOCK_LANES)
            constexpr bool kTiles = decltype(tiles)::value;
            if constexpr (kLanes == 16)
                body.scalesOnly ? dequantizeGroup<16, false, kTiles>(body, b, begin)
                                : dequantizeGroup<16, true, kTiles>(body, b, begin);
#endif
            (void)b, (void)begin, (void)tiles;
        },
        [&](std::size_t b, const Geometry::Place& at)
            PLAB_INLINE_LAMBDA { body.dequantizeBlock<kLanes>(b, at); });
}

PLAB_INLINE_BODY std::uint32_t nonNanAmaxTail(const float* in, std::size_t i, std::size_t n,
                                              std::uint32_t amax) {
    for (; i < n; ++i) {
        const std::uint32_t a = absBitsOf(in[i]);
        amax = a <= 0x7F800000u && a > amax ? a : amax;
    }
    return amax;
}

// Block by block (the bodies' scalar loops, which the compiler vectorises for the CPU): every
// CPU without AVX-512, and any with PLAB_CPU_KERNEL below avx512.

PLAB_VECTOR_CLONES_BELOW_AVX512
void findFactsBlockByBlock(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    findFactsPass<0>(body, first, last);
}
PLAB_VECTOR_CLONES_BELOW_AVX512
void scaleBlockByBlock(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    scalePass<0>(body, first, last);
}
PLAB_VECTOR_CLONES_BELOW_AVX512
void dequantizeBlockByBlock(const DequantizeBlocks& body, std::size_t first, std::size_t last) {
    dequantizePass<0>(body, first, last);
}

#if defined(PLAB_BLOCK_LANES)
// Block by block with the spans in 8 lanes, for CPUs with AVX2 and without AVX-512 (GCC keeps the
// plain loop of a block's facts scalar: in 8 lanes NVFP4's facts pass takes 2.4x fewer samples
// under perf).

// Whole blocks end to end (1-D, each row a whole number of blocks): block b is elements
// [b * side, (b + 1) * side), and the 8-lane passes go through them without places (the
// bookkeeping of a place per block was most of the scale pass here); elsewhere the passes above.
bool endToEnd(const Geometry& g) {
    return !g.tiles && g.cols % g.side == 0;
}

PLAB_LANES8_TARGET
void findFactsBlockByBlock8(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    const Geometry& g = body.geometry;
    if (!endToEnd(g))
        return findFactsPass<8>(body, first, last);
    for (std::size_t b = first; b < last; ++b) { // ScaleBlocks::findFacts
        SpanFacts span;
        scanSpan<8>(body.in + b * g.side, g.side, span);
        body.info[b] = ScaleBlocks::factsOf(span);
    }
}
PLAB_LANES8_TARGET
void scaleBlockByBlock8(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    const Geometry& g = body.geometry;
    if (!endToEnd(g) || body.fourOverSix)
        return scalePass<8>(body, first, last);
    std::size_t block = first;
    for (; block + 8 <= last; block += 8)
        chooseScaleGroup<8>(body, block);
    for (; block < last; ++block)
        body.chooseScale(block, g.place(block));
    for (std::size_t b = first; b < last; ++b) { // ScaleBlocks::applyScale
        const std::size_t begin = b * g.side;
        SpanFacts span;
        scaleSpan<8>(body.in + begin, body.out + begin, g.side, body.info[b].scale.toElement,
                     body.clipBits, body.magnitudeMask, span);
        const std::uint32_t c = span.atLeastClip;
        body.info[b].saturated = (c == 0 || !body.stochastic || body.deferStochasticClips)
                                     ? c
                                     : body.saturatedOf(g.place(b), c);
    }
}
PLAB_LANES8_TARGET
void dequantizeBlockByBlock8(const DequantizeBlocks& body, std::size_t first, std::size_t last) {
    const Geometry& g = body.geometry;
    if (!endToEnd(g))
        return dequantizePass<8>(body, first, last);
    std::size_t b = first;
    // 8 blocks' counts folded together, where each block is whole 8-lane chunks: the group's
    // lanes run over side rounded up to 8, and for another side (7, 9, 33) they dequantised the
    // next block's first elements a second time (fuzz corpus custom-e3m2-block7-nearest-away).
    if (g.side % 8 == 0)
        for (; b + 8 <= last; b += 8)
            body.scalesOnly ? dequantizeGroup<8, false>(body, b, b * g.side)
                            : dequantizeGroup<8, true>(body, b, b * g.side);
    for (; b < last; ++b) // DequantizeBlocks::dequantizeBlock
        body.info[b].nonzeroOut = dequantizeSpan<8>(body.values + b * g.side, g.side,
                                                    body.info[b].scale, body.tensorScale);
}
#endif
PLAB_VECTOR_CLONES_BELOW_AVX512
std::uint32_t nonNanAmaxScalar(const float* in, std::size_t n) {
    return nonNanAmaxTail(in, 0, n, 0);
}

#if defined(PLAB_BLOCK_LANES)
// The 16-block groups: AVX-512 alone. GCC 12 lowers a comparison of 16-lane vectors to one
// element at a time for AVX2 and SSE (no 64-byte vector mode there): their copies for those ran
// at half the speed of the plain loops block by block and were most of this file's compile time
// (a 660 KB function; docs/performance.md, Build). PLAB_LANES_TARGET: block_lanes.h.

PLAB_LANES_TARGET
void findFactsGrouped(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    findFactsPass<16>(body, first, last);
}
PLAB_LANES_TARGET
void scaleGrouped(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    scalePass<16>(body, first, last);
}
PLAB_LANES_TARGET
void dequantizeGrouped(const DequantizeBlocks& body, std::size_t first, std::size_t last) {
    dequantizePass<16>(body, first, last);
}

// The fused pass in groups of W blocks (factsAndScaleGroup), a row's last 2 to W - 1 whole
// blocks as one partial group, the rest one block at a time.
template <int W>
PLAB_INLINE_BODY void factsAndScaleGroups(const ScaleBlocks& body, std::size_t first,
                                          std::size_t last) {
    overBlocks<W>(
        body.geometry, first, last,
        [&](std::size_t b, std::size_t begin) PLAB_INLINE_LAMBDA {
            if (body.geometry.side == 16)
                body.scalesOnly ? factsAndScaleGroup<W, false, 16>(body, b, begin)
                                : factsAndScaleGroup<W, true, 16>(body, b, begin);
            else
                body.scalesOnly ? factsAndScaleGroup<W, false, 0>(body, b, begin)
                                : factsAndScaleGroup<W, true, 0>(body, b, begin);
        },
        [&](std::size_t b, const Geometry::Place& at)
            PLAB_INLINE_LAMBDA { body.allSteps<W>(b, at); },
        [&](std::size_t b, std::size_t begin, std::size_t count) PLAB_INLINE_LAMBDA {
            body.scalesOnly ? factsAndScaleGroup<W, false, 0, true>(body, b, begin, count)
                            : factsAndScaleGroup<W, true, 0, true>(body, b, begin, count);
            return true;
        });
}
PLAB_LANES_TARGET
void factsAndScaleGrouped(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    factsAndScaleGroups<16>(body, first, last);
}
PLAB_LANES8_TARGET
void factsAndScaleGrouped8(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    factsAndScaleGroups<8>(body, first, last);
}

// The tensor amax in W lanes: 1 KiB at a time with the line 8 KiB ahead on its way (as
// factsAndScaleGroup: a tensor read from memory otherwise waits on it).
template <int W>
PLAB_INLINE_BODY std::uint32_t nonNanAmaxLanes(const float* in, std::size_t n) {
    std::size_t i = 0;
    std::uint32_t amax = 0;
    if (n >= W) {
        lanes::LaneFactsOf<W> lf;
        for (; i + 256 <= n; i += 256) {
#pragma GCC unroll 16
            for (std::size_t j = 0; j < 256; j += 16)
                __builtin_prefetch(in + i + 2048 + j);
            lanes::scanLanes<false>(in + i, 256, lf);
        }
        const std::size_t whole = n & ~static_cast<std::size_t>(W - 1);
        lanes::scanLanes<false>(in + i, whole - i, lf);
        i = whole;
        amax = lanes::maxAcross(lf.amax);
    }
    return nonNanAmaxTail(in, i, n, amax);
}
PLAB_LANES_TARGET
std::uint32_t nonNanAmaxGrouped(const float* in, std::size_t n) {
    return nonNanAmaxLanes<16>(in, n);
}
PLAB_LANES8_TARGET
std::uint32_t nonNanAmax8(const float* in, std::size_t n) {
    return nonNanAmaxLanes<8>(in, n);
}
#endif

// Each path's passes, indexed by CpuKernel (Auto unused). factsAndScale: the fused pass, null
// where a path has none.
struct BlockPasses {
    void (*findFacts)(const ScaleBlocks& body, std::size_t first, std::size_t last);
    void (*scale)(const ScaleBlocks& body, std::size_t first, std::size_t last);
    void (*factsAndScale)(const ScaleBlocks& body, std::size_t first, std::size_t last);
    std::uint32_t (*nonNanAmax)(const float* in, std::size_t n);
    void (*dequantize)(const DequantizeBlocks& body, std::size_t first, std::size_t last);
};

const BlockPasses kBlockByBlock{findFactsBlockByBlock, scaleBlockByBlock, nullptr, nonNanAmaxScalar,
                                dequantizeBlockByBlock};
#if defined(PLAB_BLOCK_LANES)
const BlockPasses kPassesByKernel[] = {
    kBlockByBlock,
    kBlockByBlock,
    {findFactsBlockByBlock8, scaleBlockByBlock8, factsAndScaleGrouped8, nonNanAmax8,
     dequantizeBlockByBlock8},
    {findFactsGrouped, scaleGrouped, factsAndScaleGrouped, nonNanAmaxGrouped, dequantizeGrouped}};
#else
const BlockPasses kPassesByKernel[] = {kBlockByBlock, kBlockByBlock, kBlockByBlock, kBlockByBlock};
#endif
static_assert(std::size(kPassesByKernel) == static_cast<std::size_t>(CpuKernel::Avx512) + 1);

const BlockPasses& passes() {
    static const BlockPasses& chosen = kPassesByKernel[static_cast<std::size_t>(blockPassKernel())];
    return chosen;
}

} // namespace

CpuKernel blockPassKernel() {
    static const CpuKernel kernel = [] {
#if defined(PLAB_BLOCK_LANES)
        try {
            const CpuKernel widest = autoCpuKernel();
            if (widest == CpuKernel::Avx512 && cpuFeatures().avx512cd)
                return CpuKernel::Avx512;
            return widest >= CpuKernel::Avx2 ? CpuKernel::Avx2 : CpuKernel::Generic;
        } catch (const std::exception&) { // a PLAB_CPU_KERNEL naming no path: the element
            return CpuKernel::Generic;    // quantiser reports it; a block pass (on a worker)
        }                                 // cannot throw
#else
        return CpuKernel::Generic;
#endif
    }();
    return kernel;
}

void findFactsRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    passes().findFacts(body, first, last);
}

void scaleRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    passes().scale(body, first, last);
}

bool fusesFactsAndScale(const ScaleBlocks& body) {
    return passes().factsAndScale != nullptr && groupable(body.geometry) && !body.fourOverSix &&
           (!body.stochastic || body.deferStochasticClips);
}

void factsAndScaleRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    if (fusesFactsAndScale(body))
        return passes().factsAndScale(body, first, last);
    findFactsRange(body, first, last);
    scaleRange(body, first, last);
}

std::uint32_t nonNanAmaxBits(const float* in, std::size_t n) {
    return passes().nonNanAmax(in, n);
}

void dequantizeRange(const DequantizeBlocks& body, std::size_t first, std::size_t last) {
    passes().dequantize(body, first, last);
}

} // namespace plab::blocks
