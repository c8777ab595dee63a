// moments(): one vectorisable pass over a tensor for its mean, spread and largest magnitude.
#include "numerics/tensor_moments.h"

#include <algorithm>
#include <cmath>

namespace plab {

TensorMoments moments(std::span<const float> values) {
    TensorMoments m;
    if (values.empty())
        return m;
    // Sixteen float lanes per block (vectorisable), blocks summed in double: ample precision for
    // a scale that is rounded to a power of two.
    constexpr std::size_t kLanes = 16, kBlock = 4096;
    double sum = 0.0, sumSq = 0.0;
    float maxAbs = 0.0f;
    for (std::size_t start = 0; start < values.size(); start += kBlock) {
        const std::size_t end = std::min(values.size(), start + kBlock);
        float s[kLanes] = {}, q[kLanes] = {}, mx[kLanes] = {};
        std::size_t i = start;
        for (; i + kLanes <= end; i += kLanes)
            for (std::size_t j = 0; j < kLanes; ++j) {
                const float v = values[i + j];
                s[j] += v;
                q[j] += v * v;
                const float a = std::fabs(v);
                mx[j] = a > mx[j] ? a : mx[j];
            }
        for (; i < end; ++i) {
            s[0] += values[i];
            q[0] += values[i] * values[i];
            mx[0] = std::max(mx[0], std::fabs(values[i]));
        }
        for (std::size_t j = 0; j < kLanes; ++j) {
            sum += s[j];
            sumSq += q[j];
            maxAbs = std::max(maxAbs, mx[j]);
        }
    }
    const auto n = static_cast<double>(values.size());
    m.mean = sum / n;
    m.stdDev = std::sqrt(std::max(0.0, sumSq / n - m.mean * m.mean));
    m.maxAbs = maxAbs;
    return m;
}

} // namespace plab
