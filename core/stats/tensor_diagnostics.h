// The per-tensor quantities recent FP8/FP4 training papers watch over training, beside the cast
// counts: the kurtosis of a tensor (heavy tails and outlier growth before FP8 divergence,
// Fishman et al. 2024), and for block formats the spread of the block scales (the standard
// deviation of log2 of the decoded scales) and the blocks whose scale underflowed to zero. The
// others are read from the counts: amax per tensor, and the gradient-to-quantisation-noise ratio
// ||g|| / ||q(g) - g|| = 10^(SQNR/20) (training stops gaining below about sqrt(3), "FP4 all the
// way", 2025).
#pragma once

#include "numerics/block_stats.h"

#include <cstdint>
#include <span>
#include <vector>

namespace plab {

struct TensorDiagnostics {
    // E[(x - mean)^4] / E[(x - mean)^2]^2 over the finite values (3 for a normal distribution);
    // NaN when the values do not vary or there are fewer than two.
    double kurtosis = 0.0;
    std::uint64_t values = 0; // finite values counted
};
// Sums in double, in element order: the same result on every machine (no SIMD reordering).
TensorDiagnostics tensorDiagnostics(std::span<const float> values);

struct BlockScaleSpread {
    // Standard deviation of log2(decoded scale) over the blocks with a nonzero input and a
    // nonzero scale; NaN with fewer than two such blocks.
    double log2StdDev = 0.0;
    std::uint64_t liveBlocks = 0;      // blocks with a nonzero input
    std::uint64_t zeroScaleBlocks = 0; // of those, blocks whose decoded scale is 0
};
BlockScaleSpread blockScaleSpread(const std::vector<BlockInfo>& blocks);

// The gradient-to-noise ratio from a cast's error sums: sqrt(signalSq / errorSq); +Inf for an
// exact cast, NaN when not measured.
double signalToNoiseRatio(const QuantError& error);

} // namespace plab
