// What the engine checks share: seeded test values, host data mirrored into an engine's memory,
// and bit-level comparisons of tensors and statistics.
#pragma once

#include "engine/tensor_ops.h"
#include "engine_parity.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>

#include <cstring>
#include <random>
#include <vector>

namespace plab::parity {

inline std::vector<float> randomValues(std::size_t n, std::uint32_t seed, float sd = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sd);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

// Host data mirrored into an engine's memory.
struct Mirror {
    TensorOps& ops;
    Tensor t;
    Mirror(TensorOps& o, const std::vector<float>& host) : ops(o), t(o.allocate(host.size())) {
        ops.upload(t, host.data());
    }
    std::vector<float> read() const {
        std::vector<float> host(t.size);
        ops.download(host.data(), t);
        return host;
    }
};

inline bool bitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Bit for bit, except that any NaN equals any NaN (a GPU's NaN has its own payload).
inline bool sameBitsOrBothNaN(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
               return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y) ||
                      (std::isnan(x) && std::isnan(y));
           });
}

inline bool sameStats(const QuantStats& a, const QuantStats& b) {
    return a.counts == b.counts && a.histogram == b.histogram && a.amax == b.amax;
}

inline std::string describe(const std::string& what, double error, double bound) {
    char line[256];
    std::snprintf(line, sizeof line, "%s: normalised error %.3g > %.3g", what.c_str(), error,
                  bound);
    return line;
}

inline void compare(Report& report, const std::string& what, const std::vector<float>& got,
                    const std::vector<float>& want, double bound) {
    const double e = normalisedError(got, want);
    report.expect(e <= bound, describe(what, e, bound));
}

} // namespace plab::parity
