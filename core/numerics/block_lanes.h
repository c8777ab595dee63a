// Sixteen float32 lanes for the CPU's block passes (block_range_passes.cpp, block_stats.cpp):
// GCC's vector extensions, one AVX-512 register each, in functions compiled for AVX-512 alone
// (PLAB_LANES_TARGET) and run only where blockPassKernel() is Avx512; a block of 16 is too short
// for the auto-vectoriser. Not for AVX2 or SSE copies: without a 64-byte vector mode GCC 12 lowers
// a comparison of these vectors one element at a time (the plain loops, vectorised by the compiler,
// are about twice as fast there). For AVX2 the record exchanges, the folds and the span helpers
// also come in eight lanes (one AVX2 register), for functions compiled for x86-64-v3 alone
// (PLAB_LANES8_TARGET, run where it is Avx2): the plain loops of a block's facts do not vectorise
// (GCC keeps them scalar, cmov by cmov). |x| bits are below 2^31, so signed lanes order them as
// unsigned ones would (x86 has no unsigned vector compare before AVX-512: GCC would go element by
// element), and two comparisons are never combined bitwise (GCC 12 then also goes element by
// element with AVX-512 masks): selects and single comparisons only. Integer and exact float
// operations, so the same bits as the scalar loops. Not under nvcc: the GPU runs the scalar loops.
#pragma once

#include "util/cpu_features.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace plab::blocks {
// The path the block passes and the block statistics' groups take (read once; defined in
// block_range_passes.cpp): Avx512 (the 16-lane PLAB_LANES_TARGET functions) where the CPU also
// has AVX-512 CD and autoCpuKernel() is Avx512; Avx2 (the 8-lane PLAB_LANES8_TARGET ones) where
// autoCpuKernel() is at least Avx2, PLAB_CPU_KERNEL=avx2 on an AVX-512 CPU included; else Generic,
// the plain loops (always, without PLAB_BLOCK_LANES).
CpuKernel blockPassKernel();
} // namespace plab::blocks

// GCC only: Clang refuses (as an error) a call that passes a 64-byte vector from a function
// compiled for AVX-512 to one that is not, even one always inlined, which every lane helper is;
// a Clang build (the fuzz targets') takes the plain loops.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && defined(__x86_64__)
#define PLAB_BLOCK_LANES 1
#include "util/lane_exchange.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi" // always inlined: no vector crosses a call

#define PLAB_LANE_INLINE __attribute__((always_inline)) inline
// The functions that use the lanes: compiled for x86-64-v4 alone, called where
// blockPassKernel() is Avx512.
#define PLAB_LANES_TARGET __attribute__((target("arch=x86-64-v4")))
// The functions that use the eight-lane span helpers: x86-64-v3 alone, where it is Avx2.
#define PLAB_LANES8_TARGET __attribute__((target("arch=x86-64-v3")))

namespace plab::blocks::lanes {

using I16 = std::int32_t __attribute__((vector_size(64)));
using U16 = std::uint32_t __attribute__((vector_size(64))); // for wrapping sums only
using F16 = float __attribute__((vector_size(64)));
using I8 = std::int32_t __attribute__((vector_size(32)));
using U8 = std::uint32_t __attribute__((vector_size(32)));
using F8 = float __attribute__((vector_size(32)));
// The vector types of a width, for the span helpers that take either.
template <int W>
struct Lanes;
template <>
struct Lanes<16> {
    using I = I16;
    using U = U16;
    using F = F16;
};
template <>
struct Lanes<8> {
    using I = I8;
    using U = U8;
    using F = F8;
};

template <class I = I16>
PLAB_LANE_INLINE I absBits(const float* p) {
    I v;
    __builtin_memcpy(&v, p, sizeof v);
    return v & 0x7FFFFFFF;
}
template <class I>
PLAB_LANE_INLINE I maxOf(I a, I b) {
    return a > b ? a : b;
}
template <class I>
PLAB_LANE_INLINE I minOf(I a, I b) {
    return a < b ? a : b;
}
// Max, min and sum as function objects of either width, for foldEach and foldAcross.
struct Max {
    template <class I>
    PLAB_LANE_INLINE I operator()(I a, I b) const {
        return maxOf(a, b);
    }
};
struct Min {
    template <class I>
    PLAB_LANE_INLINE I operator()(I a, I b) const {
        return minOf(a, b);
    }
};
struct Plus {
    template <class I>
    PLAB_LANE_INLINE I operator()(I a, I b) const {
        return a + b;
    }
};
// One vector's lanes folded into lane 0 by halving shuffles; sixteen lanes first fold their two
// halves into eight.
template <class Op>
PLAB_LANE_INLINE std::uint32_t foldAcross(I8 v, Op op) {
    v = op(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3));
    v = op(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 2, 3, 0, 1));
    v = op(v, __builtin_shufflevector(v, v, 1, 0, 1, 0, 1, 0, 1, 0));
    return static_cast<std::uint32_t>(v[0]);
}
template <class Op>
PLAB_LANE_INLINE std::uint32_t foldAcross(I16 v, Op op) {
    const I8 low = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
    const I8 high = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    return foldAcross(op(low, high), op);
}
template <class I>
PLAB_LANE_INLINE std::uint32_t maxAcross(I v) {
    return foldAcross(v, Max{});
}
template <class I>
PLAB_LANE_INLINE std::uint32_t minAcross(I v) {
    return foldAcross(v, Min{});
}
template <class I>
PLAB_LANE_INLINE std::uint32_t sumAcross(I v) {
    return foldAcross(v, Plus{});
}

// foldEach's level kLevel on one pair of partials: a and b each hold the partial folds of
// 2^(kLevel - 1) consecutive vectors (block b's partials ahead of block b + 1's), the result
// those of all 2^kLevel, halved. Level 1 pairs two vectors as they come.
template <int kLevel, class Op>
PLAB_LANE_INLINE I16 foldPair(I16 a, I16 b, Op op) {
    static_assert(kLevel >= 1 && kLevel <= 4, "sixteen lanes fold in four levels");
    if constexpr (kLevel == 1) // [a: 8 partials | b: 8 partials]
        return op(
            __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23),
            __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30,
                                    31));
    else if constexpr (kLevel == 2) // 4 partials each of 4 blocks
        return op(
            __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27),
            __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30,
                                    31));
    else if constexpr (kLevel == 3) // 2 partials each of 8 blocks
        return op(
            __builtin_shufflevector(a, b, 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29),
            __builtin_shufflevector(a, b, 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30,
                                    31));
    else // one each
        return op(__builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                          28, 30),
                  __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27,
                                          29, 31));
}
// The same for eight lanes, in three levels.
template <int kLevel, class Op>
PLAB_LANE_INLINE I8 foldPair(I8 a, I8 b, Op op) {
    static_assert(kLevel >= 1 && kLevel <= 3, "eight lanes fold in three levels");
    if constexpr (kLevel == 1) // [a: 4 partials | b: 4 partials]
        return op(__builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11),
                  __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15));
    else if constexpr (kLevel == 2) // 2 partials each of 4 blocks
        return op(__builtin_shufflevector(a, b, 0, 1, 4, 5, 8, 9, 12, 13),
                  __builtin_shufflevector(a, b, 2, 3, 6, 7, 10, 11, 14, 15));
    else // one each
        return op(__builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14),
                  __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15));
}

// W vectors (16 or 8) folded to one whose lane k is the fold of v[k]'s lanes (v is
// overwritten): pairs of vectors halve their partials level by level, 15 operations where 16
// separate folds take 64 (7 and 24 for eight), and the result lands in lanes ready for the next
// step.
template <class I, std::size_t W, class Op>
PLAB_LANE_INLINE I foldEach(I (&v)[W], Op op = {}) {
    static_assert(W == 16 || W == 8, "sixteen or eight lanes");
    for (std::size_t k = 0; k < W / 2; ++k)
        v[k] = foldPair<1>(v[2 * k], v[2 * k + 1], op);
    for (std::size_t k = 0; k < W / 4; ++k)
        v[k] = foldPair<2>(v[2 * k], v[2 * k + 1], op);
    if constexpr (W == 8) {
        return foldPair<3>(v[0], v[1], op);
    } else {
        for (std::size_t k = 0; k < 2; ++k)
            v[k] = foldPair<3>(v[2 * k], v[2 * k + 1], op);
        return foldPair<4>(v[0], v[1], op);
    }
}

// foldEach's result for vectors made one at a time by leaf(k), k = first .. first + kCount - 1,
// folded as they come (depth first: the same pairs at the same levels, so the same lanes):
// one partial per level waits at a time, where foldEach needs all of them at once (for sixteen
// vectors of three kinds, more than the registers hold). combine(level, a, b) folds two partials
// of a level (std::integral_constant level 1 ..), field by field where leaf gives several.
template <std::size_t kCount, class Leaf, class Combine>
PLAB_LANE_INLINE auto foldAsMade(const Leaf& leaf, const Combine& combine, std::size_t first = 0) {
    if constexpr (kCount == 1) {
        return leaf(first);
    } else {
        constexpr int kLevel = kCount == 2 ? 1 : kCount == 4 ? 2 : kCount == 8 ? 3 : 4;
        static_assert(kCount == std::size_t{1} << kLevel, "a power of two up to 16");
        const auto a = foldAsMade<kCount / 2>(leaf, combine, first);
        const auto b = foldAsMade<kCount / 2>(leaf, combine, first + kCount / 2);
        return combine(std::integral_constant<int, kLevel>{}, a, b);
    }
}

// Sixteen records of 8 words (v[j]: records 2j and 2j+1, as loaded from memory) to one vector
// per word: v[w] lane l then holds word w of record recordOfLane(l); recordsOfWords turns them
// back. Three rounds of two-vector shuffles (util/lane_exchange.h): 24 shuffles where 128 single
// words would each be moved between a vector and memory. Eight records in eight lanes (v[j]:
// record j) the same way, a plain transpose: lane l holds record l.
template <class I>
PLAB_LANE_INLINE void wordsOfRecords(I (&v)[8]) {
    lane_exchange::exchangeRounds(v);
}
template <class I>
PLAB_LANE_INLINE void recordsOfWords(I (&v)[8]) {
    lane_exchange::exchangeRoundsBack(v);
}
// The records' 8 vectors loaded from (and stored to) memory one whole vector each, as vector
// values: a memcpy of the array went through a stack copy in 16-byte pieces, and the vector
// loads from it then waited for the pieces (a store-to-load forward that fails: 15-17% of
// countGroups8's samples under perf).
template <class I>
PLAB_LANE_INLINE void loadRecords(const void* from, I (&v)[8]) {
    typedef I Unaligned __attribute__((aligned(4), may_alias));
    const auto* p = static_cast<const Unaligned*>(from);
    for (int j = 0; j < 8; ++j)
        v[j] = p[j];
}
template <class I>
PLAB_LANE_INLINE void storeRecords(void* to, const I (&v)[8]) {
    typedef I Unaligned __attribute__((aligned(4), may_alias));
    auto* p = static_cast<Unaligned*>(to);
    for (int j = 0; j < 8; ++j)
        p[j] = v[j];
}
constexpr std::size_t recordOfLane(std::size_t lane) {
    return ((lane & 7) << 1) | (lane >> 3);
}
// A vector whose lane k belongs to record k, in wordsOfRecords' lane order.
template <std::size_t... L>
PLAB_LANE_INLINE I16 inRecordLaneOrder(I16 v, std::index_sequence<L...>) {
    return __builtin_shufflevector(v, v, recordOfLane(L)...);
}
PLAB_LANE_INLINE I16 inRecordLaneOrder(I16 v) {
    return inRecordLaneOrder(v, std::make_index_sequence<16>{});
}
PLAB_LANE_INLINE I8 inRecordLaneOrder(I8 v) {
    return v;
}

// The three block passes over whole chunks of W elements (n a multiple of W: 16, or 8 for
// AVX2), their per-lane results left unfolded: block_kernels.h's spans fold them for one block, the
// 16-block groups (block_range_passes.cpp) fold 16 blocks' at once with foldEach.
inline constexpr std::int32_t kInfBits = 0x7F800000;

// Largest non-NaN |x|, largest finite |x|, smallest finite nonzero |x| (Inf bits: none) and the
// nonzero non-NaN count (as -1 per element), per lane, as |x| bits. Each pass takes kCounts:
// false for a cast whose statistics nobody reads (ScaleBlocks::scalesOnly), which then finds the
// two amaxes only and counts nothing (its counts stay 0).
template <int W>
struct LaneFactsOf {
    using I = typename Lanes<W>::I;
    I amax{}, finite{}, small = I{} + kInfBits, nonzero{};
};
using LaneFacts = LaneFactsOf<16>;

template <bool kCounts = true, int W>
PLAB_LANE_INLINE void scanLanes(const float* p, std::size_t n, LaneFactsOf<W>& f) {
    using I = typename Lanes<W>::I;
    for (std::size_t i = 0; i < n; i += W) {
        const I a = absBits<I>(p + i);
        const I kept = a <= kInfBits ? a : 0, keptFinite = a < kInfBits ? a : 0;
        f.amax = maxOf(f.amax, kept);
        f.finite = maxOf(f.finite, keptFinite);
        if constexpr (kCounts) {
            f.small = minOf(f.small, keptFinite != 0 ? keptFinite : kInfBits);
            f.nonzero -= kept != 0;
        }
    }
}

// scanLanes' facts but the finite amax, in fewer operations, for the 16-block groups (which
// find the finite amax apart, for groups with an Inf). |x| + 0x7FFFFF, wrapped and read signed,
// puts the nonzero non-NaN |x| (Inf included) above 0x7FFFFF, zero at it and NaN below 0; Inf
// lands on 0x7FFFFFFF, the largest: one comparison tells a live element, and the smallest
// finite nonzero is the smallest shifted value (0x7FFFFFFF: none; liveMinNonzero undoes it).
inline constexpr std::int32_t kLiveShift = 0x7FFFFF;
template <int W>
struct LiveFactsOf {
    using I = typename Lanes<W>::I;
    I amax{}, shiftedMin = I{} + 0x7FFFFFFF, nonzero{};
};
template <int W>
PLAB_LANE_INLINE void scanLive(const float* p, std::size_t n, LiveFactsOf<W>& f) {
    using I = typename Lanes<W>::I;
    using U = typename Lanes<W>::U;
    for (std::size_t i = 0; i < n; i += W) {
        const I a = absBits<I>(p + i);
        const I shifted = (I)((U)a + static_cast<std::uint32_t>(kLiveShift));
        const I live = shifted > kLiveShift;
        f.nonzero -= live;
        f.amax = maxOf(f.amax, live ? a : 0);
        f.shiftedMin = minOf(f.shiftedMin, live ? shifted : 0x7FFFFFFF);
    }
}
// The smallest finite nonzero |x| bits from a folded shiftedMin (0: none).
template <class I>
PLAB_LANE_INLINE I liveMinNonzero(I shiftedMin) {
    return shiftedMin == 0x7FFFFFFF ? I{} : shiftedMin - kLiveShift;
}
// Largest finite |x| per lane (scanLanes' finite).
template <int W>
PLAB_LANE_INLINE typename Lanes<W>::I finiteAmaxLanes(const float* p, std::size_t n) {
    using I = typename Lanes<W>::I;
    I finite{};
    for (std::size_t i = 0; i < n; i += W) {
        const I a = absBits<I>(p + i);
        finite = maxOf(finite, a < kInfBits ? a : 0);
    }
    return finite;
}
// Whether any lane of v is nonzero.
template <class I>
PLAB_LANE_INLINE bool anyLane(I v) {
    return maxAcross(-(v != 0)) != 0; // 1 where set (a comparison's lanes are -1)
}

// out = in * toElement; per lane, how many scaled values have clip <= |x| <= Inf (clip > 0),
// |x| being the bits under magnitudeMask (ScaleBlocks::magnitudeMask: with the sign kept, an
// unsigned format's negative values never count).
template <bool kCounts = true, int W = 16>
PLAB_LANE_INLINE typename Lanes<W>::I scaleLanes(const float* in, float* out, std::size_t n,
                                                 float toElement, std::int32_t clip,
                                                 std::int32_t magnitudeMask) {
    using I = typename Lanes<W>::I;
    using F = typename Lanes<W>::F;
    I count{};
    for (std::size_t i = 0; i < n; i += W) {
        F x;
        __builtin_memcpy(&x, in + i, sizeof x);
        const F scaled = x * toElement;
        __builtin_memcpy(out + i, &scaled, sizeof scaled);
        if constexpr (kCounts) {
            const I a = (I)scaled & magnitudeMask;
            const I kept = a <= kInfBits ? a : 0; // NaN out (a kept sign reads as negative)
            count -= kept >= clip;
        }
    }
    return count;
}

// values = (values * decoded) / tensorScale; per lane, how many results are nonzero and not NaN
// (scanLive's shifted comparison). kUnitScale: tensorScale is 1 (MX and FP32 blocks), and x / 1
// is x: no division.
template <bool kCounts = true, bool kUnitScale = false, int W = 16>
PLAB_LANE_INLINE typename Lanes<W>::I dequantizeLanes(float* values, std::size_t n, float decoded,
                                                      float tensorScale) {
    using I = typename Lanes<W>::I;
    using U = typename Lanes<W>::U;
    using F = typename Lanes<W>::F;
    I count{};
    for (std::size_t i = 0; i < n; i += W) {
        F x;
        __builtin_memcpy(&x, values + i, sizeof x);
        const F v = kUnitScale ? x * decoded : (x * decoded) / tensorScale;
        __builtin_memcpy(values + i, &v, sizeof v);
        if constexpr (kCounts) {
            const U a = (U)v & 0x7FFFFFFFu;
            count -= (I)(a + static_cast<std::uint32_t>(kLiveShift)) > kLiveShift;
        }
    }
    return count;
}

} // namespace plab::blocks::lanes

#pragma GCC diagnostic pop
#endif
