// In-register transposes of 8 vectors through GCC's vector shuffles: round r trades bit r of the
// vector index for bit r of the lane index, so three rounds turn 8 vectors of 8 lanes (a tile of
// a matrix, util/transpose.cpp) into their transpose, or 8 vectors of 16 lanes (16 records of 8
// words, numerics/block_lanes.h) into one vector per word. Each round undoes itself. Always
// inlined: the callers are compiled for AVX2 / AVX-512 too (util/vector_clones.h).
#pragma once

#if defined(__GNUC__)
#include <cstddef>
#include <utility>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi" // always inlined: no vector crosses a call

namespace plab::lane_exchange {

// Lane L of the result: from b when its bit y is set, else from a; at L with bit y set to c.
template <int y, int c, class V, std::size_t... L>
__attribute__((always_inline)) inline V exchangeBit(V a, V b, std::index_sequence<L...>) {
    constexpr std::size_t n = sizeof...(L);
    return __builtin_shufflevector(
        a, b, (((L >> y) & 1) * n + ((L & ~(std::size_t{1} << y)) | (std::size_t{c} << y)))...);
}

template <int r, class V>
__attribute__((always_inline)) inline void exchangeRound(V (&v)[8]) {
    constexpr std::size_t lanes = sizeof(V) / sizeof(V{}[0]);
    constexpr std::size_t bit = std::size_t{1} << r;
    for (std::size_t a = 0; a < 8; ++a) {
        if ((a & bit) != 0)
            continue;
        const V first = v[a], second = v[a | bit];
        v[a] = exchangeBit<r, 0>(first, second, std::make_index_sequence<lanes>{});
        v[a | bit] = exchangeBit<r, 1>(first, second, std::make_index_sequence<lanes>{});
    }
}

template <class V>
__attribute__((always_inline)) inline void exchangeRounds(V (&v)[8]) {
    exchangeRound<0>(v);
    exchangeRound<1>(v);
    exchangeRound<2>(v);
}
template <class V>
__attribute__((always_inline)) inline void exchangeRoundsBack(V (&v)[8]) {
    exchangeRound<2>(v);
    exchangeRound<1>(v);
    exchangeRound<0>(v);
}

} // namespace plab::lane_exchange

#pragma GCC diagnostic pop
#endif
