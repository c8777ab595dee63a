// What the differential fuzz targets share: aborting on a broken invariant (so that libFuzzer
// records the input) and comparing floats bit for bit, every NaN equal to every other.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace plab::fuzz {

[[noreturn]] inline void failCheck(const char* what) {
    std::fputs(what, stderr);
    std::fputc('\n', stderr);
    std::abort();
}

inline bool sameBits(float a, float b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    std::uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    return ua == ub;
}

} // namespace plab::fuzz
