// Quantise with counting on the GPU: each thread rounds elements with the same element function
// as the CPU reference (quantize_element.h), taking its random bits from the same Philox stream
// (element i: word i % 4 of philox(i / 4, stream, seed)), so results match the CPU bit for bit.
// Statistics are gathered per block in shared memory (class counts by warp ballots, the
// histogram by shared atomics, amax by warp shuffles) and merged into global memory once per
// block.
#include "cuda/quantize_kernel.h"

#include <cuda_runtime.h>

namespace plab::cuda {
namespace {

constexpr int kThreads = 256;

__device__ unsigned int warpMax(unsigned int v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = max(v, __shfl_down_sync(0xFFFFFFFFu, v, offset));
    return v;
}

template <bool kStats, bool kStochastic>
__global__ void __launch_bounds__(kThreads)
    quantizeKernel(const ElementRule rule, const float* in,
                   float* out, // may be the same (in place)
                   const std::size_t n, const std::uint64_t seed, const std::uint64_t stream,
                   const std::uint64_t firstIndex, DeviceCounters* __restrict__ counters) {
    __shared__ unsigned int hist[kHistBinCount];
    __shared__ unsigned int counts[kQuantClassCount];
    __shared__ unsigned int blockAmax;
    if constexpr (kStats) {
        for (int b = threadIdx.x; b < kHistBinCount; b += blockDim.x)
            hist[b] = 0;
        if (threadIdx.x < kQuantClassCount)
            counts[threadIdx.x] = 0;
        if (threadIdx.x == 0)
            blockAmax = 0;
        __syncthreads();
    }
    const unsigned lane = threadIdx.x & 31u;
    unsigned int amax = 0;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    // Every thread of a warp runs the same number of iterations (the bound is rounded up to a
    // whole warp), so the ballots below always see all 32 lanes.
    const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (std::size_t base = first - lane; base < n; base += stride) {
        const std::size_t i = base + lane;
        const bool active = i < n;
        QuantClass cls = QuantClass::Zero;
        if (active) {
            const float x = in[i];
            std::uint32_t word = 0;
            if constexpr (kStochastic)
                word = philox::elementWord(firstIndex + i, stream, seed);
            out[i] = quantizeElement(rule, x, word, cls);
            if constexpr (kStats) {
                const std::uint32_t bits = __float_as_uint(x);
                atomicAdd(&hist[histogramBinOfBits(bits)], 1u);
                const std::uint32_t a = bits & 0x7FFFFFFFu;
                if (a <= 0x7F800000u) // not NaN
                    amax = max(amax, a);
            }
        }
        if constexpr (kStats) {
            for (int c = 0; c < static_cast<int>(kQuantClassCount); ++c) {
                const unsigned votes =
                    __ballot_sync(0xFFFFFFFFu, active && static_cast<int>(cls) == c);
                if (lane == 0 && votes != 0)
                    atomicAdd(&counts[c], static_cast<unsigned>(__popc(votes)));
            }
        }
    }
    if constexpr (kStats) {
        amax = warpMax(amax);
        if (lane == 0)
            atomicMax(&blockAmax, amax);
        __syncthreads();
        for (int b = threadIdx.x; b < kHistBinCount; b += blockDim.x)
            if (hist[b] != 0)
                atomicAdd(&counters->histogram[b], static_cast<unsigned long long>(hist[b]));
        if (threadIdx.x < kQuantClassCount && counts[threadIdx.x] != 0)
            atomicAdd(&counters->counts[threadIdx.x],
                      static_cast<unsigned long long>(counts[threadIdx.x]));
        if (threadIdx.x == 0)
            atomicMax(&counters->amaxBits, blockAmax);
    }
}

template <bool kStats, bool kStochastic>
int launch(const QuantizeLaunch& l) {
    if (l.n == 0)
        return 0;
    const std::size_t blocksNeeded = (l.n + kThreads - 1) / kThreads;
    // Enough resident blocks to fill the device; the grid-stride loop covers the rest, and fewer
    // blocks mean fewer histogram merges.
    const std::size_t maxBlocks = static_cast<std::size_t>(l.multiprocessors) * 8;
    const unsigned blocks =
        static_cast<unsigned>(blocksNeeded < maxBlocks ? blocksNeeded : maxBlocks);
    quantizeKernel<kStats, kStochastic>
        <<<blocks, kThreads, 0, static_cast<cudaStream_t>(l.cudaStream)>>>(
            l.rule, l.in, l.out, l.n, l.seed, l.stream, l.firstIndex, l.counters);
    return static_cast<int>(cudaGetLastError());
}

} // namespace

int launchQuantize(const QuantizeLaunch& l) {
    const bool stats = l.counters != nullptr;
    if (stats)
        return l.stochastic ? launch<true, true>(l) : launch<true, false>(l);
    return l.stochastic ? launch<false, true>(l) : launch<false, false>(l);
}

} // namespace plab::cuda
