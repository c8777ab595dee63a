// Amax scaling around the fused quantiser.
#include "numerics/amax_scaling.h"

#include "util/thread_pool.h"
#include "util/vector_clones.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace plab {

void AmaxHistory::push(double amax) {
    m_values.push_back(amax);
    while (m_values.size() > m_length)
        m_values.pop_front();
}

double AmaxHistory::max() const {
    double m = 0.0;
    for (double v : m_values)
        m = std::max(m, v);
    return m;
}

namespace {

// The passes beside the quantiser, cloned for AVX2 / AVX-512 (the baseline's SSE2 has no
// unsigned 32-bit max, so its amax went element by element): a multiply or an integer max per
// element, the same bits at any width.
// On the bits: |x| orders like its bit pattern, and an integer max vectorises where a float max
// with NaN rules does not. Inf and NaN (bits >= 0x7F800000) are skipped, by a mask made of the
// comparison's 0 or 1: a select on it inside the max's select is what GCC 12 leaves scalar.
inline std::uint32_t finiteBits(std::uint32_t absBits) {
    return absBits & (0u - static_cast<std::uint32_t>(absBits < 0x7F800000u));
}

PLAB_VECTOR_CLONES
std::uint32_t finiteAmaxBits(const float* values, std::size_t n) {
    std::uint32_t m = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t a = std::bit_cast<std::uint32_t>(values[i]) & 0x7FFFFFFFu;
        m = std::max(m, finiteBits(a));
    }
    return m;
}

PLAB_VECTOR_CLONES
void scaleValuesInPlace(float* values, std::size_t n, float s) {
    for (std::size_t i = 0; i < n; ++i)
        values[i] *= s;
}

} // namespace

void scaleInPlace(std::span<float> values, float factor) {
    scaleValuesInPlace(values.data(), values.size(), factor);
}

double amaxOf(std::span<const float> values) {
    return std::bit_cast<float>(finiteAmaxBits(values.data(), values.size()));
}

double amaxScale(double amax, const FormatSpec& format, int margin) {
    // A format with FP32's exponent range (BF16, FP32, a stage a recipe keeps wide) needs no
    // scale, and cannot take one: its max over an amax below 1 is past FP32's range (an Inf
    // scale, NaN products).
    if (!(amax > 0.0) || !std::isfinite(amax) || !format.hasNarrowRange())
        return 1.0;
    // At most 2^126: the scale and its inverse stay normal FP32 numbers even for a tensor of
    // subnormal values.
    return std::min(format.maxFinite() / amax / std::ldexp(1.0, margin), 0x1p126);
}

void quantizeScaled(const Quantizer& q, std::span<const float> in, std::span<float> out,
                    double scale, QuantStats* stats, const QuantizeOptions& options,
                    double* inputAmax) {
    if (in.size() != out.size())
        throw std::invalid_argument("quantizeScaled: input and output sizes differ");
    const auto s = static_cast<float>(scale);
    const auto inverse = static_cast<float>(1.0 / scale);
    // The amax of the input, where asked, is a read of its own (it is the input's, before the
    // scale); scale, cast, count and unscale are the quantiser's one pass (issue 66 item 1:
    // they were three passes over the tensor, each reading and writing all of it).
    if (inputAmax != nullptr)
        *inputAmax = std::bit_cast<float>(finiteAmaxBits(in.data(), in.size()));
    QuantizeOptions fused = options;
    if (s != 1.0f) {
        fused.inputScale = s;
        fused.outputScale = inverse;
    }
    q.quantize(in, out, stats, fused);
}

} // namespace plab
