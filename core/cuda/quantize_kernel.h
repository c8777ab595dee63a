// The CUDA quantise-with-counting kernel's launcher (host side of quantize_kernel.cu). Device
// pointers only; statistics are merged into DeviceCounters on the device, block by block.
#pragma once

#include "numerics/quant_stats.h"
#include "numerics/quantize_element.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace plab::cuda {

// Global-memory statistics of one or more launches: class counts, amax as float bits (|x| of
// non-NaN inputs, so the bits order as the values do) and the log2 histogram of the inputs.
struct DeviceCounters {
    unsigned long long counts[kQuantClassCount];
    unsigned long long histogram[kHistBinCount];
    unsigned int amaxBits;
};

// The same statistics as the CPU's QuantStats (host side, after the copy back).
inline QuantStats toQuantStats(const DeviceCounters& c) {
    QuantStats s;
    for (std::size_t k = 0; k < kQuantClassCount; ++k)
        s.counts[k] = c.counts[k];
    for (std::size_t b = 0; b < kHistBinCount; ++b)
        s.histogram[b] = c.histogram[b];
    std::memcpy(&s.amax, &c.amaxBits, sizeof s.amax);
    return s;
}

struct QuantizeLaunch {
    ElementRule rule;
    bool stochastic = false;
    std::uint64_t seed = 0, stream = 0, firstIndex = 0;
    const float* in = nullptr;
    float* out = nullptr;
    std::size_t n = 0;
    DeviceCounters* counters = nullptr; // null: values only
    void* cudaStream = nullptr;         // cudaStream_t; null: the default stream
    int multiprocessors = 1;            // sizes the grid
};

// Enqueues the kernel; returns the cudaError_t of the launch as an int (0 = success).
int launchQuantize(const QuantizeLaunch& launch);

} // namespace plab::cuda
