// Philox4x32-10 (Salmon et al., SC'11): the counter-based generator behind stochastic rounding.
// Element i of a quantise call with (seed, stream) takes word i % 4 of
// philox(counter = {i / 4, stream}, key = seed), so its random bits depend on nothing but those
// three numbers: any thread count, any blocking, and the GPU give the same bits.
// tests/numerics check this against Random123's reference implementation; it is written out
// here (internal linkage, no library types) so that per-ISA kernel files can inline it safely
// and CUDA can compile it unchanged.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define PLAB_HOST_DEVICE __host__ __device__
#else
#define PLAB_HOST_DEVICE
#endif

namespace plab::philox {

struct Block {
    std::uint32_t w[4];
};

static inline PLAB_HOST_DEVICE Block generate(std::uint64_t counter, std::uint64_t stream,
                                              std::uint64_t seed) {
    constexpr std::uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
    constexpr std::uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
    std::uint32_t c0 = static_cast<std::uint32_t>(counter);
    std::uint32_t c1 = static_cast<std::uint32_t>(counter >> 32);
    std::uint32_t c2 = static_cast<std::uint32_t>(stream);
    std::uint32_t c3 = static_cast<std::uint32_t>(stream >> 32);
    std::uint32_t k0 = static_cast<std::uint32_t>(seed);
    std::uint32_t k1 = static_cast<std::uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c0;
        const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c2;
        const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
        const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
        c1 = static_cast<std::uint32_t>(p1);
        c3 = static_cast<std::uint32_t>(p0);
        c0 = n0;
        c2 = n2;
        k0 += kWeyl0;
        k1 += kWeyl1;
    }
    return Block{{c0, c1, c2, c3}};
}

// The random word of element `index`.
static inline PLAB_HOST_DEVICE std::uint32_t elementWord(std::uint64_t index, std::uint64_t stream,
                                                         std::uint64_t seed) {
    return generate(index / 4, stream, seed).w[index % 4];
}

} // namespace plab::philox
