// Per-tensor scaling of the tensors an FP8 GEMM reads (weights, activations, activation
// gradients): NVIDIA Transformer Engine's amax scaling, scale = (format max / amax) / 2^margin
// with amax of the current tensor or the max (or most recent) of a history of past amaxes. The
// tensor is scaled, quantised (counted as the format sees it) and unscaled. Block scaling (MX,
// NVFP4, FP32 blocks) is numerics/block_quantizer.h.
#pragma once

#include "numerics/quantizer.h"

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace plab {

// Past amaxes of one tensor, newest last, at most `length` of them.
class AmaxHistory {
public:
    explicit AmaxHistory(std::size_t length = 1024) : m_length(length) {}
    void push(double amax);
    bool empty() const { return m_values.empty(); }
    double max() const;
    double mostRecent() const { return m_values.empty() ? 0.0 : m_values.back(); }
    std::size_t size() const { return m_values.size(); }
    std::size_t length() const { return m_length; }
    // Oldest first: what a checkpoint keeps, and restores with assign().
    std::vector<double> values() const { return {m_values.begin(), m_values.end()}; }
    void assign(const std::vector<double>& values) {
        m_values.assign(values.begin(), values.end());
        while (m_values.size() > m_length)
            m_values.pop_front();
    }

private:
    std::size_t m_length;
    std::deque<double> m_values;
};

double amaxOf(std::span<const float> values);             // largest finite |x|
void scaleInPlace(std::span<float> values, float factor); // x *= factor, vectorised

// (format max / amax) / 2^margin, at most 2^126; 1 when amax is 0 or not finite, or the format
// has FP32's exponent range (BF16, FP32: nothing to scale into).
double amaxScale(double amax, const FormatSpec& format, int margin);

// out <- Q(in * scale) / scale, counting what the format sees (in may be out), in the
// quantiser's one pass (QuantizeOptions::inputScale/outputScale). When inputAmax is given it
// receives amaxOf(in), a read of its own before the cast.
void quantizeScaled(const Quantizer& q, std::span<const float> in, std::span<float> out,
                    double scale, QuantStats* stats, const QuantizeOptions& options,
                    double* inputAmax = nullptr);

} // namespace plab
