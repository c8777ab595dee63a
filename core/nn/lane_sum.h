// A sum whose order is fixed and which vectorises, written once for the CPU layers and the GPU
// engine's kernel bodies (plain C++, __host__ __device__ under nvcc).
#pragma once

#include "numerics/philox.h" // PLAB_HOST_DEVICE

#include <cstddef>

namespace plab {

// Sum of v[0, n) in 8 fixed partial sums (element i into sum i % 8), paired at the end: a loop
// that vectorises, in the same order on every CPU and on a GPU.
inline PLAB_HOST_DEVICE float laneSum(const float* v, std::size_t n) {
    float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (std::size_t l = 0; l < 8; ++l)
            lanes[l] += v[i + l];
    for (std::size_t l = 0; i < n; ++i, ++l)
        lanes[l] += v[i];
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

// Sum of a[i] * b[i] over [0, n) in laneSum's order (each product rounded, then added).
inline PLAB_HOST_DEVICE float laneDot(const float* a, const float* b, std::size_t n) {
    float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (std::size_t l = 0; l < 8; ++l)
            lanes[l] += a[i + l] * b[i + l];
    for (std::size_t l = 0; i < n; ++i, ++l)
        lanes[l] += a[i] * b[i];
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

} // namespace plab
