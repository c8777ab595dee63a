// Per-layer analytic gradient scaling (Zhao, Vogel, Ahmed, Luk, IJCAI 2020): during backprop each
// layer picks the scale of the activation gradient it passes down from the statistics of its
// incoming gradient g and its weights W, so that at most ~0.1% of a normal distribution of that
// spread underflows the format, and the matrix product cannot overflow it.
#pragma once

#include "numerics/format_spec.h"
#include "numerics/tensor_moments.h"

#include <cstddef>
#include <span>

namespace plab {

struct PerLayerScaleLimits {
    double perLayerCap = 16.0;     // Zhao et al.'s code: at most x16 per layer
    double cumulativeCap = 1024.0; // and x1024 over the whole backward pass
};

// The scale for the gradient a layer passes down. fanIn: products summed per output element
// (the layer's output features); `format` is the format that gradient is stored in.
// sigma_o = sqrt((s_g^2 + m_g^2)(s_W^2 + m_W^2)); s_uf = u_min / (T sigma_o) with
// T = sqrt(2) erfinv(1e-3), at least 1; s_of = (v_max / n) / (max|g| max|W|);
// scale = min(s_uf, s_of), capped, rounded down to a power of two.
double perLayerScale(const TensorMoments& g, const TensorMoments& w, std::size_t fanIn,
                     const FormatSpec& format, double cumulativeSoFar,
                     const PerLayerScaleLimits& limits = {});

} // namespace plab
