// QuantStats helpers and the reference definition of the log2 histogram bins.
#include "numerics/quant_stats.h"

#include "util/vector_clones.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace plab {

const char* toString(QuantClass c) {
    switch (c) {
    case QuantClass::Zero:
        return "zero";
    case QuantClass::Underflow:
        return "underflow";
    case QuantClass::Subnormal:
        return "subnormal";
    case QuantClass::Normal:
        return "normal";
    case QuantClass::Overflow:
        return "overflow";
    case QuantClass::NaN:
        return "nan";
    }
    return "?";
}

int histogramBin(float x) {
    if (std::isnan(x))
        return kHistNanBin;
    if (std::isinf(x))
        return kHistInfBin;
    if (x == 0.0f)
        return kHistZeroBin;
    // Double log2 of a float is far more precise than the distance from any float to a
    // quarter-binade edge, so the floor is exact.
    const double quarters =
        std::floor(std::log2(std::fabs(static_cast<double>(x))) * kHistBinsPerBinade);
    return 1 + static_cast<int>(quarters) - kHistMinExponent * kHistBinsPerBinade;
}

double histogramBinLowerLog2(int bin) {
    return kHistMinExponent + static_cast<double>(bin - 1) / kHistBinsPerBinade;
}

std::uint64_t QuantStats::total() const {
    std::uint64_t sum = 0;
    for (std::uint64_t c : counts)
        sum += c;
    return sum;
}

double QuantStats::fraction(QuantClass c) const {
    const std::uint64_t n = total();
    return n == 0 ? 0.0 : static_cast<double>(count(c)) / static_cast<double>(n);
}

double flushedShare(const ClassCounts& counts) {
    std::uint64_t total = 0;
    for (std::uint64_t c : counts)
        total += c;
    const std::uint64_t nonzero = total - counts[static_cast<std::size_t>(QuantClass::Zero)];
    const std::uint64_t flushed = counts[static_cast<std::size_t>(QuantClass::Underflow)];
    return nonzero == 0 ? 0.0 : static_cast<double>(flushed) / static_cast<double>(nonzero);
}

double QuantStats::flushedShare() const {
    return plab::flushedShare(counts);
}

void QuantStats::merge(const QuantStats& other) {
    for (std::size_t i = 0; i < counts.size(); ++i)
        counts[i] += other.counts[i];
    for (std::size_t i = 0; i < histogram.size(); ++i)
        histogram[i] += other.histogram[i];
    // NaN never enters amax, so a plain max suffices.
    amax = std::max(amax, other.amax);
    error.merge(other.error);
}

namespace {

// Eight partial sums (element i into sum i % 8) per chunk: a fixed order, so the same result on
// every path. The eight lanes are one vector of doubles (GCC's vector extensions, lowered per
// target_clones copy; written out because GCC left the plain loop scalar, which made this pass
// ~12% of a full-FP8 step with statistics every step). Branch-free: a non-finite pair
// contributes zeros. The file is compiled without fused multiply-adds, so every copy, and the
// scalar tail, does the same arithmetic (as the quantise kernels' fused sums do).
PLAB_VECTOR_CLONES
ErrorLanes sumChunk(const float* input, const float* output, std::size_t n) {
    constexpr std::size_t kLanes = kErrorLanes;
    ErrorLanes c{};
    std::uint64_t count[kLanes] = {};
    std::size_t i = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    using F8 = float __attribute__((vector_size(32)));
    using I8 = std::int32_t __attribute__((vector_size(32)));
    using D8 = double __attribute__((vector_size(64)));
    constexpr std::int32_t kExponent = 0x7F800000;
    D8 vs{}, ve{}, vo{};
    I8 vc{};
    for (; i + kLanes <= n; i += kLanes) {
        F8 x, q;
        std::memcpy(&x, input + i, sizeof x);
        std::memcpy(&q, output + i, sizeof q);
        const I8 ex = (I8)x & kExponent, eq = (I8)q & kExponent;
        // Non-finite when either exponent is all ones: one comparison of their maximum (GCC
        // splits two combined comparisons into scalar code).
        const I8 finite = (ex > eq ? ex : eq) != kExponent;
        const D8 xd = __builtin_convertvector(finite ? x : F8{}, D8);
        const D8 qd = __builtin_convertvector(finite ? q : F8{}, D8);
        vc -= finite;
        vs += xd * xd;
        ve += (qd - xd) * (qd - xd);
        vo += qd * qd;
    }
    for (std::size_t lane = 0; lane < kLanes; ++lane) {
        c.signal[lane] = vs[lane];
        c.error[lane] = ve[lane];
        c.output[lane] = vo[lane];
        count[lane] = static_cast<std::uint32_t>(vc[lane]);
    }
#endif
    auto add = [&](std::size_t k, std::size_t lane) {
        const bool finite = (std::bit_cast<std::uint32_t>(input[k]) & 0x7F800000u) != 0x7F800000u &&
                            (std::bit_cast<std::uint32_t>(output[k]) & 0x7F800000u) != 0x7F800000u;
        const double x = finite ? input[k] : 0.0f, q = finite ? output[k] : 0.0f;
        count[lane] += finite ? 1u : 0u;
        c.signal[lane] += x * x;
        c.error[lane] += (q - x) * (q - x);
        c.output[lane] += q * q;
    };
    for (; i + kLanes <= n; i += kLanes) // without vector extensions
        for (std::size_t lane = 0; lane < kLanes; ++lane)
            add(i + lane, lane);
    for (std::size_t lane = 0; i < n; ++i, ++lane)
        add(i, lane);
    for (std::size_t lane = 0; lane < kLanes; ++lane)
        c.count += count[lane];
    return c;
}

} // namespace

QuantError measureError(std::span<const float> input, std::span<const float> output) {
    const std::size_t n = std::min(input.size(), output.size());
    ErrorLanes lanes{};
    for (std::size_t begin = 0; begin < n; begin += kErrorChunk)
        lanes.add(sumChunk(input.data() + begin, output.data() + begin,
                           std::min(kErrorChunk, n - begin)));
    return lanes.total();
}

void ErrorLanes::add(const ErrorLanes& chunk) {
    for (std::size_t lane = 0; lane < kErrorLanes; ++lane) {
        signal[lane] += chunk.signal[lane];
        error[lane] += chunk.error[lane];
        output[lane] += chunk.output[lane];
    }
    count += chunk.count;
}

QuantError ErrorLanes::total() const {
    QuantError e;
    e.count = count;
    for (std::size_t lane = 0; lane < kErrorLanes; ++lane) {
        e.signalSq += signal[lane];
        e.errorSq += error[lane];
        e.outputSq += output[lane];
    }
    return e;
}

double QuantError::mse() const {
    return count == 0 ? std::numeric_limits<double>::quiet_NaN()
                      : errorSq / static_cast<double>(count);
}

double QuantError::sqnrDb() const {
    if (count == 0)
        return std::numeric_limits<double>::quiet_NaN();
    if (errorSq == 0.0)
        return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(signalSq / errorSq);
}

double QuantError::normRelativeError() const {
    if (count == 0 || signalSq == 0.0)
        return count == 0 || outputSq != 0.0 ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    return (std::sqrt(outputSq) - std::sqrt(signalSq)) / std::sqrt(signalSq);
}

void QuantError::merge(const QuantError& o) {
    count += o.count;
    signalSq += o.signalSq;
    errorSq += o.errorSq;
    outputSq += o.outputSq;
}

} // namespace plab
