// The CPU's block passes (block_range_passes.h). Blocks are walked in order, their places
// advanced rather than divided out per block. The 16-block groups fold the per-block lanes of
// 16 blocks together (lanes::foldEach: 15 vector operations where 16 separate folds take 64),
// which is most of a 16-element block's cost otherwise.
#include "numerics/block_range_passes.h"

#include "util/vector_clones.h"

#include <cfloat>
#include <cstring>

namespace plab::blocks {
namespace {

#if defined(PLAB_BLOCK_LANES)
// Whole 1-D blocks of a multiple of 16 elements, block b at element b * side.
bool groupable(const Geometry& g) {
    return !g.tiles && g.side % 16 == 0 && g.cols % g.side == 0;
}

// kCounts false (ScaleBlocks::scalesOnly): the amaxes alone, the records' counts 0.
template <bool kCounts>
PLAB_INLINE_BODY void findFacts16(const ScaleBlocks& body, std::size_t b) {
    using lanes::I16;
    const std::size_t side = body.geometry.side;
    I16 amax[16], finite[16], small[16], nonzero[16];
    for (std::size_t k = 0; k < 16; ++k) {
        lanes::LaneFacts lf;
        lanes::scanLanes<kCounts>(body.in + (b + k) * side, side, lf);
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
    std::memcpy(body.info + b, words, sizeof words);
}

// block_scale.h's rules on 16 blocks' amaxes at once, the same float and integer operations
// lane by lane (so the same bits; a test holds the lanes to the scalar rule). One vector
// division where each block's scalar chain has one or two. Not for 4/6 (per-block trials).
PLAB_INLINE_BODY lanes::I16 pow2Lanes(lanes::I16 x) { // 2^x, x in [-149, 127], as bits
    const lanes::I16 normal = (x + 127) << 23;
    const lanes::I16 subnormal = (lanes::I16{} + 1) << ((x + 149) & 31);
    return x >= -126 ? normal : subnormal;
}

PLAB_INLINE_BODY void chooseScale16(const ScaleBlocks& body, std::size_t b) {
    using lanes::F16;
    using lanes::I16;
    // The 16 blocks' facts as one vector per word (any lane order: the rules work lane by lane).
    I16 words[8];
    std::memcpy(words, body.info + b, sizeof words);
    lanes::wordsOfRecords(words);
    const F16 amax = (F16)words[kWordAmax], finite = (F16)words[kWordFiniteAmax];
    const ScaleRule& rule = body.rule;
    F16 toElement, decoded;
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
        if (rule.powerOfTwo)
            scale = (F16)((I16)scale & static_cast<std::int32_t>(0xFF800000u));
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
    words[kWordToElement] = (I16)toElement;
    words[kWordDecoded] = (I16)decoded;
    lanes::recordsOfWords(words);
    std::memcpy(body.info + b, words, sizeof words);
}

template <bool kCounts>
PLAB_INLINE_BODY void applyScale16(const ScaleBlocks& body, std::size_t b) {
    const std::size_t side = body.geometry.side;
    lanes::I16 clipped[16];
    for (std::size_t k = 0; k < 16; ++k) {
        const std::size_t begin = (b + k) * side;
        clipped[k] = lanes::scaleLanes<kCounts>(body.in + begin, body.out + begin, side,
                                                body.info[b + k].scale.toElement,
                                                static_cast<std::int32_t>(body.clipBits));
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

template <bool kCounts>
PLAB_INLINE_BODY void dequantize16(const DequantizeBlocks& body, std::size_t b) {
    const std::size_t side = body.geometry.side;
    lanes::I16 nonzero[16];
    for (std::size_t k = 0; k < 16; ++k)
        nonzero[k] = lanes::dequantizeLanes<kCounts>(
            body.values + (b + k) * side, side, body.info[b + k].scale.decoded, body.tensorScale);
    if constexpr (kCounts) {
        const lanes::I16 counts = lanes::foldEach(nonzero, lanes::Plus{});
        for (std::size_t k = 0; k < 16; ++k)
            body.info[b + k].nonzeroOut = static_cast<std::uint32_t>(counts[k]);
    }
}
#endif

// Blocks [first, last): groups of 16 through `group` where the geometry allows, the rest one
// at a time through `one(b, place)`.
template <class Group, class One>
PLAB_INLINE_BODY void overBlocks(const Geometry& g, std::size_t first, std::size_t last,
                                 const Group& group, const One& one) {
    std::size_t b = first;
#if defined(PLAB_BLOCK_LANES)
    if (groupable(g))
        for (; b + 16 <= last; b += 16)
            group(b);
#else
    (void)group;
#endif
    Geometry::Place at = g.place(b);
    for (; b < last; ++b, g.advance(at))
        one(b, at);
}

} // namespace

PLAB_VECTOR_CLONES
void findFactsRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    overBlocks(
        body.geometry, first, last,
        [&](std::size_t b) PLAB_INLINE_LAMBDA {
            body.scalesOnly ? findFacts16<false>(body, b) : findFacts16<true>(body, b);
        },
        [&](std::size_t b, const Geometry::Place& at)
            PLAB_INLINE_LAMBDA { body.findFacts(b, at); });
}

PLAB_VECTOR_CLONES
void scaleRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    // 16 blocks' scales at once where the blocks are 1-D (the scale needs no place) and no
    // per-block trial (4/6) is asked for; else block by block (independent chains overlap).
    std::size_t block = first;
#if defined(PLAB_BLOCK_LANES)
    if (!body.fourOverSix)
        for (; block + 16 <= last; block += 16)
            chooseScale16(body, block);
#endif
    Geometry::Place at = body.geometry.place(block);
    for (; block < last; ++block, body.geometry.advance(at))
        body.chooseScale(block, at);
    overBlocks(
        body.geometry, first, last,
        [&](std::size_t b) PLAB_INLINE_LAMBDA {
            body.scalesOnly ? applyScale16<false>(body, b) : applyScale16<true>(body, b);
        },
        [&](std::size_t b, const Geometry::Place& place)
            PLAB_INLINE_LAMBDA { body.applyScale(b, place); });
}

PLAB_VECTOR_CLONES
void dequantizeRange(const DequantizeBlocks& body, std::size_t first, std::size_t last) {
    overBlocks(
        body.geometry, first, last,
        [&](std::size_t b) PLAB_INLINE_LAMBDA {
            body.scalesOnly ? dequantize16<false>(body, b) : dequantize16<true>(body, b);
        },
        [&](std::size_t b, const Geometry::Place& at) PLAB_INLINE_LAMBDA { body(b, at); });
}

} // namespace plab::blocks
