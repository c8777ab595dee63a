// The CPU's block passes (block_range_passes.h). Blocks are walked in order, their places
// advanced rather than divided out per block. The 16-block groups fold the per-block lanes of
// 16 blocks together (lanes::foldEach: 15 vector operations where 16 separate folds take 64),
// which is most of a 16-element block's cost otherwise.
#include "numerics/block_range_passes.h"

#include "util/vector_clones.h"

namespace plab::blocks {
namespace {

// Whole 1-D blocks of a multiple of 16 elements, block b at element b * side.
bool groupable(const Geometry& g) {
    return !g.tiles && g.side % 16 == 0 && g.cols % g.side == 0;
}

#if defined(PLAB_BLOCK_LANES)
constexpr std::int32_t kInf = 0x7F800000;

PLAB_INLINE_BODY void findFacts16(const ScaleBlocks& body, std::size_t b) {
    using lanes::I16;
    const std::size_t side = body.geometry.side;
    const float* p = body.in + b * side;
    I16 amax[16], finite[16], small[16], nonzero[16];
    for (std::size_t k = 0; k < 16; ++k, p += side) {
        I16 am{}, fi{}, sm = I16{} + kInf, nz{};
        for (std::size_t j = 0; j < side; j += 16) {
            const I16 a = lanes::absBits(p + j);
            const I16 kept = a <= kInf ? a : 0, keptFinite = a < kInf ? a : 0;
            am = lanes::maxOf(am, kept);
            fi = lanes::maxOf(fi, keptFinite);
            sm = lanes::minOf(sm, keptFinite != 0 ? keptFinite : kInf);
            nz -= kept != 0;
        }
        amax[k] = am;
        finite[k] = fi;
        small[k] = sm;
        nonzero[k] = nz;
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
    using lanes::F16;
    using lanes::I16;
    const std::size_t side = body.geometry.side;
    const std::int32_t clip = static_cast<std::int32_t>(body.clipBits);
    I16 clipped[16];
    for (std::size_t k = 0; k < 16; ++k) {
        const float toElement = body.info[b + k].scale.toElement;
        const std::size_t begin = (b + k) * side;
        I16 count{};
        for (std::size_t j = begin; j < begin + side; j += 16) {
            F16 x;
            __builtin_memcpy(&x, body.in + j, sizeof x);
            const F16 scaled = x * toElement;
            __builtin_memcpy(body.out + j, &scaled, sizeof scaled);
            const I16 a = (I16)scaled & 0x7FFFFFFF;
            const I16 kept = a <= kInf ? a : 0; // NaN out (clip > 0)
            count -= kept >= clip;
        }
        clipped[k] = count;
    }
    const I16 candidates = lanes::foldEach(clipped, lanes::Plus{});
    for (std::size_t k = 0; k < 16; ++k) {
        const auto c = static_cast<std::uint32_t>(candidates[k]);
        body.info[b + k].saturated =
            (c == 0 || !body.stochastic) ? c : body.saturatedOf(body.geometry.place(b + k), c);
    }
}

PLAB_INLINE_BODY void dequantize16(const DequantizeBlocks& body, std::size_t b) {
    using lanes::F16;
    using lanes::I16;
    const std::size_t side = body.geometry.side;
    I16 nonzero[16];
    for (std::size_t k = 0; k < 16; ++k) {
        const BlockScale s = body.info[b + k].scale;
        const std::size_t begin = (b + k) * side;
        I16 count{};
        for (std::size_t j = begin; j < begin + side; j += 16) {
            F16 x;
            __builtin_memcpy(&x, body.values + j, sizeof x);
            const F16 v = (x * s.decoded) / body.tensorScale;
            __builtin_memcpy(body.values + j, &v, sizeof v);
            const I16 a = (I16)v & 0x7FFFFFFF;
            const I16 kept = a <= kInf ? a : 0;
            count -= kept != 0;
        }
        nonzero[k] = count;
    }
    const I16 counts = lanes::foldEach(nonzero, lanes::Plus{});
    for (std::size_t k = 0; k < 16; ++k)
        body.info[b + k].nonzeroOut = static_cast<std::uint32_t>(counts[k]);
}
#endif

} // namespace

PLAB_VECTOR_CLONES
void findFactsRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    std::size_t b = first;
#if defined(PLAB_BLOCK_LANES)
    if (groupable(body.geometry))
        for (; b + 16 <= last; b += 16)
            findFacts16(body, b);
#endif
    Geometry::Place at = body.geometry.place(b);
    for (; b < last; ++b, body.geometry.advance(at))
        body.findFacts(b, at);
}

PLAB_VECTOR_CLONES
void scaleRange(const ScaleBlocks& body, std::size_t first, std::size_t last) {
    Geometry::Place at = body.geometry.place(first);
    for (std::size_t b = first; b < last; ++b, body.geometry.advance(at))
        body.chooseScale(b, at); // independent blocks: their chains overlap
    std::size_t b = first;
#if defined(PLAB_BLOCK_LANES)
    if (groupable(body.geometry))
        for (; b + 16 <= last; b += 16)
            applyScale16(body, b);
#endif
    at = body.geometry.place(b);
    for (; b < last; ++b, body.geometry.advance(at))
        body.applyScale(b, at);
}

PLAB_VECTOR_CLONES
void dequantizeRange(const DequantizeBlocks& body, std::size_t first, std::size_t last) {
    std::size_t b = first;
#if defined(PLAB_BLOCK_LANES)
    if (groupable(body.geometry))
        for (; b + 16 <= last; b += 16)
            dequantize16(body, b);
#endif
    Geometry::Place at = body.geometry.place(b);
    for (; b < last; ++b, body.geometry.advance(at))
        body(b, at);
}

} // namespace plab::blocks
