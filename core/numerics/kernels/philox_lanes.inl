// Included by quantize_kernel.inl inside its anonymous namespace, once per instruction set
// (PLAB_VECTOR_BYTES set by the including kernel file): internal linkage, so the per-ISA copies
// never meet at link time. Not a header of its own.
// Needs vector_lanes.inl (VU, splat, laneIndex, toU) before it.

// Philox4x32-10 for kLanes consecutive counters at once: the same function as
// plab::philox::generate (tests hold them equal), one counter per vector lane.
typedef std::uint64_t VU64 __attribute__((vector_size(PLAB_VECTOR_BYTES * 2)));
typedef std::uint64_t VU64Half __attribute__((vector_size(PLAB_VECTOR_BYTES)));

// 32x32 -> 64-bit products of every lane with k, as (hi, lo) halves. On x86 the even and odd
// lanes go through one unsigned 32-bit multiply each (pmuludq); GCC's generic 64-bit vector
// multiply would emulate a full 64x64 product instead.
inline void mulHiLo(VU a, std::uint32_t k, VU& hi, VU& lo) {
#if defined(__AVX512F__) && PLAB_VECTOR_BYTES == 64
    const VU64Half even = (VU64Half)_mm512_mul_epu32((__m512i)a, _mm512_set1_epi32(int(k)));
    const VU64Half odd =
        (VU64Half)_mm512_mul_epu32((__m512i)((VU64Half)a >> 32), _mm512_set1_epi32(int(k)));
#elif defined(__AVX2__) && PLAB_VECTOR_BYTES == 32
    const VU64Half even = (VU64Half)_mm256_mul_epu32((__m256i)a, _mm256_set1_epi32(int(k)));
    const VU64Half odd =
        (VU64Half)_mm256_mul_epu32((__m256i)((VU64Half)a >> 32), _mm256_set1_epi32(int(k)));
#elif defined(__SSE2__) && PLAB_VECTOR_BYTES == 16
    const VU64Half even = (VU64Half)_mm_mul_epu32((__m128i)a, _mm_set1_epi32(int(k)));
    const VU64Half odd =
        (VU64Half)_mm_mul_epu32((__m128i)((VU64Half)a >> 32), _mm_set1_epi32(int(k)));
#else
    const VU64 p = __builtin_convertvector(a, VU64) * std::uint64_t{k};
    hi = __builtin_convertvector(p >> 32, VU);
    lo = __builtin_convertvector(p, VU);
    return;
#endif
#if defined(__SSE2__)
    constexpr std::uint64_t kLow = 0xFFFFFFFFull;
    lo = (VU)((even & kLow) | (odd << 32));
    hi = (VU)((even >> 32) | (odd & ~kLow));
#endif
}

inline void philoxLanes(std::uint64_t firstCounter, std::uint64_t stream, std::uint64_t seed,
                        VU out[4]) {
    const auto lo = static_cast<std::uint32_t>(firstCounter);
    VU c0 = splat(lo) + laneIndex();
    VU c1 = splat(static_cast<std::uint32_t>(firstCounter >> 32)) + (toU(c0 < lo) & 1u);
    VU c2 = splat(static_cast<std::uint32_t>(stream));
    VU c3 = splat(static_cast<std::uint32_t>(stream >> 32));
    std::uint32_t k0 = static_cast<std::uint32_t>(seed);
    std::uint32_t k1 = static_cast<std::uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        VU hi0, lo0, hi1, lo1;
        mulHiLo(c0, 0xD2511F53u, hi0, lo0);
        mulHiLo(c2, 0xCD9E8D57u, hi1, lo1);
        const VU n0 = hi1 ^ c1 ^ k0;
        const VU n2 = hi0 ^ c3 ^ k1;
        c1 = lo1;
        c3 = lo0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

// Lanes [0, kLanes/2) or [kLanes/2, kLanes) of a and b, interleaved: a0 b0 a1 b1 ... (Half 0),
// as 32-bit lanes, or (VU64Half) as 64-bit pairs of them.
template <std::size_t kHalf, class V, std::size_t... I>
inline V interleave(V a, V b, std::index_sequence<I...>) {
    constexpr std::size_t n = sizeof...(I);
    return __builtin_shufflevector(
        a, b, ((I % 2 == 0) ? kHalf * n / 2 + I / 2 : n + kHalf * n / 2 + I / 2)...);
}
template <std::size_t kHalf>
inline VU interleave32(VU a, VU b) {
    return interleave<kHalf>(a, b, std::make_index_sequence<kLanes>{});
}
template <std::size_t kHalf>
inline VU interleave64(VU a, VU b) {
    return (VU)interleave<kHalf>((VU64Half)a, (VU64Half)b, std::make_index_sequence<kLanes / 2>{});
}

// Philox's four words of kLanes counters (w[k] lane l: word k of counter l) in element order:
// out[j] holds words 4 * c + k for the counters c of [j * kLanes / 4, (j + 1) * kLanes / 4).
// Two rounds of interleaving, as vector shuffles.
inline void wordsInElementOrder(const VU w[4], VU out[4]) {
    const VU lo01 = interleave32<0>(w[0], w[1]), hi01 = interleave32<1>(w[0], w[1]);
    const VU lo23 = interleave32<0>(w[2], w[3]), hi23 = interleave32<1>(w[2], w[3]);
    out[0] = interleave64<0>(lo01, lo23);
    out[1] = interleave64<1>(lo01, lo23);
    out[2] = interleave64<0>(hi01, hi23);
    out[3] = interleave64<1>(hi01, hi23);
}
