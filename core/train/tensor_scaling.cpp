// Amax scaling around the fused quantiser.
#include "train/tensor_scaling.h"

#include "util/thread_pool.h"

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

double amaxOf(std::span<const float> values) {
    // On the bits: |x| orders like its bit pattern, and an integer max vectorises where a float
    // max with NaN rules does not. Inf and NaN (bits >= 0x7F800000) are skipped.
    std::uint32_t m = 0;
    for (float v : values) {
        const std::uint32_t a = std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFu;
        const std::uint32_t finite = a < 0x7F800000u ? a : 0u;
        m = finite > m ? finite : m;
    }
    return std::bit_cast<float>(m);
}

double amaxScale(double amax, const FormatSpec& format, int margin) {
    // A format with FP32's exponent range (BF16, FP32, a stage a recipe keeps wide) needs no
    // scale, and cannot take one: its max over an amax below 1 is past FP32's range (an Inf
    // scale, NaN products).
    if (!(amax > 0.0) || !std::isfinite(amax) || format.exponentBits >= 8)
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
    const std::size_t n = in.size();
    // Scale straight from the input (no copy first), taking the input's amax on the way when
    // asked; then one quantise pass and one unscale pass.
    if (inputAmax != nullptr) {
        std::uint32_t amaxBits = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t a = std::bit_cast<std::uint32_t>(in[i]) & 0x7FFFFFFFu;
            amaxBits = std::max(amaxBits, a < 0x7F800000u ? a : 0u);
            out[i] = in[i] * s;
        }
        *inputAmax = std::bit_cast<float>(amaxBits);
    } else if (s != 1.0f) {
        for (std::size_t i = 0; i < n; ++i)
            out[i] = in[i] * s;
    } else if (in.data() != out.data()) {
        std::copy(in.begin(), in.end(), out.begin());
    }
    q.quantize(out, out, stats, options);
    if (s != 1.0f)
        for (float& v : out)
            v *= inverse;
}

} // namespace plab
