// A dense, deterministic set of float32 inputs that contains every rounding tie and boundary of
// every format up to 16 bits: all signs and exponents, all top-10 mantissa patterns (so every
// tie and half-ulp position of formats with <= 10 mantissa bits), each with low-bit patterns
// around the FP16/TF32 rounding position (ties, one below, one above) and a scrambled one.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace plab::test {

inline std::vector<float> denseInputs() {
    static const std::uint32_t kLowPatterns[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x1FFF};
    std::vector<float> values;
    values.reserve(2 * 256 * 1024 * 7);
    std::uint32_t scramble = 0x9E3779B9u;
    for (std::uint32_t sign = 0; sign < 2; ++sign)
        for (std::uint32_t exponent = 0; exponent < 256; ++exponent)
            for (std::uint32_t top = 0; top < 1024; ++top) {
                const std::uint32_t base = (sign << 31) | (exponent << 23) | (top << 13);
                for (std::uint32_t low : kLowPatterns)
                    values.push_back(std::bit_cast<float>(base | low));
                scramble = scramble * 1664525u + 1013904223u;
                values.push_back(std::bit_cast<float>(base | (scramble >> 19)));
            }
    return values;
}

} // namespace plab::test
