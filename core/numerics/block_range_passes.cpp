// The CPU's block passes (block_range_passes.h). Blocks are walked in order, their places
// advanced rather than divided out per block. The 16-block groups fold the per-block lanes of
// 16 blocks together (lanes::foldEach: 15 vector operations where 16 separate folds take 64),
// which is most of a 16-element block's cost otherwise.
#include "numerics/block_range_passes.h"

#include "util/vector_clones.h"

namespace plab::blocks {
namespace {

#if defined(PLAB_BLOCK_LANES)
// Whole 1-D blocks of a multiple of 16 elements, block b at element b * side.
bool groupable(const Geometry& g) {
    return !g.tiles && g.side % 16 == 0 && g.cols % g.side == 0;
}

PLAB_INLINE_BODY void findFacts16(const ScaleBlocks& body, std::size_t b) {
    using lanes::I16;
    const std::size_t side = body.geometry.side;
    I16 amax[16], finite[16], small[16], nonzero[16];
    for (std::size_t k = 0; k < 16; ++k) {
        lanes::LaneFacts lf;
        lanes::scanLanes(body.in + (b + k) * side, side, lf);
        amax[k] = lf.amax;
        finite[k] = lf.finite;
        small[k] = lf.small;
        nonzero[k] = lf.nonzero;
    }
    const I16 am = lanes::foldEach(amax, lanes::Max{}), fi = lanes::foldEach(finite, lanes::Max{});
    const I16 sm = lanes::foldEach(small, lanes::Min{}),
              nz = lanes::foldEach(nonzero, lanes::Plus{});
    for (int k = 0; k < 16; ++k) {
        SpanFacts f;
        f.amaxBits = static_cast<std::uint32_t>(am[k]);
        f.finiteBits = static_cast<std::uint32_t>(fi[k]);
        f.minBits = static_cast<std::uint32_t>(sm[k]);
        f.nonzero = static_cast<std::uint32_t>(nz[k]);
        body.info[b + static_cast<std::size_t>(k)] = ScaleBlocks::factsOf(f);
    }
}

PLAB_INLINE_BODY void applyScale16(const ScaleBlocks& body, std::size_t b) {
    const std::size_t side = body.geometry.side;
    lanes::I16 clipped[16];
    for (std::size_t k = 0; k < 16; ++k) {
        const std::size_t begin = (b + k) * side;
        clipped[k] = lanes::scaleLanes(body.in + begin, body.out + begin, side,
                                       body.info[b + k].scale.toElement,
                                       static_cast<std::int32_t>(body.clipBits));
    }
    const lanes::I16 candidates = lanes::foldEach(clipped, lanes::Plus{});
    for (std::size_t k = 0; k < 16; ++k) {
        const auto c = static_cast<std::uint32_t>(candidates[k]);
        body.info[b + k].saturated =
            (c == 0 || !body.stochastic) ? c : body.saturatedOf(body.geometry.place(b + k), c);
    }
}

PLAB_INLINE_BODY void dequantize16(const DequantizeBlocks& body, std::size_t b) {
    const std::size_t side = body.geometry.side;
    lanes::I16 nonzero[16];
    for (std::size_t k = 0; k < 16; ++k)
        nonzero[k] = lanes::dequantizeLanes(body.values + (b + k) * side, side,
                                            body.info[b + k].scale.decoded, body.tensorScale);
    const lanes::I16 counts = lanes::foldEach(nonzero, lanes::Plus{});
    for (std::size_t k = 0; k < 16; ++k)
        body.info[b + k].nonzeroOut = static_cast<std::uint32_t>(counts[k]);
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
        body.geometry, first, last, [&](std::size_t b) PLAB_INLINE_LAMBDA { findFacts16(body, b); },
        [&](std::size_t b, const Geometry::Place& at)
            PLAB_INLINE_LAMBDA { body.findFacts(b, at); });
}

PLAB_VECTOR_CLONES
void scaleRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    Geometry::Place at = body.geometry.place(first);
    for (std::size_t b = first; b < last; ++b, body.geometry.advance(at))
        body.chooseScale(b, at); // independent blocks: their chains overlap
    overBlocks(
        body.geometry, first, last,
        [&](std::size_t b) PLAB_INLINE_LAMBDA { applyScale16(body, b); },
        [&](std::size_t b, const Geometry::Place& place)
            PLAB_INLINE_LAMBDA { body.applyScale(b, place); });
}

PLAB_VECTOR_CLONES
void dequantizeRange(const DequantizeBlocks& body, std::size_t first, std::size_t last) {
    overBlocks(
        body.geometry, first, last,
        [&](std::size_t b) PLAB_INLINE_LAMBDA { dequantize16(body, b); },
        [&](std::size_t b, const Geometry::Place& at) PLAB_INLINE_LAMBDA { body(b, at); });
}

} // namespace plab::blocks
