// Included by quantize_kernel.inl inside its anonymous namespace, once per instruction set
// (PLAB_VECTOR_BYTES set by the including kernel file): internal linkage, so the per-ISA copies
// never meet at link time. Not a header of its own.

// One SIMD register of lanes, through GCC/Clang vector extensions: explicit vectorisation that
// compiles to AVX-512, AVX2 or SSE2 from this one source. Comparisons give 0 / -1 lane masks.
#ifndef PLAB_VECTOR_BYTES
#error "the including file sets PLAB_VECTOR_BYTES"
#endif
constexpr std::size_t kLanes = PLAB_VECTOR_BYTES / 4;
typedef std::uint32_t VU __attribute__((vector_size(PLAB_VECTOR_BYTES)));
typedef std::int32_t VI __attribute__((vector_size(PLAB_VECTOR_BYTES)));
typedef float VF __attribute__((vector_size(PLAB_VECTOR_BYTES)));
typedef std::uint8_t VB __attribute__((vector_size(kLanes))); // one byte per lane

inline VU splat(std::uint32_t v) {
    return VU{} + v;
}
inline VI splat(std::int32_t v) {
    return VI{} + v;
}
inline VU bitsOf(VF v) {
    VU u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}
inline VF floatOf(VU u) {
    VF f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
inline VU laneIndex() {
    VU v;
    for (std::size_t l = 0; l < kLanes; ++l)
        v[l] = static_cast<std::uint32_t>(l);
    return v;
}
// C-style casts between vector types of one size reinterpret the bits (GCC/Clang semantics).
inline VU toU(VI v) {
    return (VU)v;
}
inline VI toI(VU v) {
    return (VI)v;
}
inline VF asFloat(VI v) {
    return (VF)v;
}
inline VI asInt(VF v) {
    return (VI)v;
}
inline VF splatF(float v) {
    return VF{} + v;
}

// clipped[0, len) = 1 where mask (a lane mask: 0 or all ones) is set, else 0.
inline void storeFlags(std::uint8_t* clipped, VU mask, std::size_t len) {
    const VB flags = __builtin_convertvector(mask & 1u, VB);
    std::memcpy(clipped, &flags, len);
}

// Whether any lane of a 0 / -1 lane mask is set: one mask move and test, not a lane loop.
inline bool anyLane(VI mask) {
#if defined(__AVX512F__) && PLAB_VECTOR_BYTES == 64
    return _mm512_movepi32_mask((__m512i)mask) != 0;
#elif defined(__AVX__) && PLAB_VECTOR_BYTES == 32
    return _mm256_movemask_ps((__m256)mask) != 0;
#elif defined(__SSE2__) && PLAB_VECTOR_BYTES == 16
    return _mm_movemask_ps((__m128)mask) != 0;
#else
    VI any = mask;
    for (std::size_t l = 1; l < kLanes; ++l)
        any[0] |= mask[l];
    return any[0] != 0;
#endif
}
