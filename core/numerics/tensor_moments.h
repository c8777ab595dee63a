// The mean, standard deviation and largest |x| of a tensor: what per-layer analytic scaling
// (recipe/per_layer_scaling.h) reads of a gradient and of the weights, and what every engine
// computes (TensorOps::moments).
#pragma once

#include <span>

namespace plab {

struct TensorMoments {
    double mean = 0.0, stdDev = 0.0, maxAbs = 0.0;
};
TensorMoments moments(std::span<const float> values);

} // namespace plab
