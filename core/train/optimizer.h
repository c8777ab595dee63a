// Optimisers: SGD with momentum and weight decay, and Adam. They see unscaled gradients, and keep
// their state (momentum, Adam moments) in the recipe's optimiser-state format.
#pragma once

#include "numerics/quantizer.h"

#include <span>
#include <vector>

namespace plab {

enum class OptimizerKind;

struct OptimizerSettings {
    OptimizerKind kind;
    double momentum = 0.9, weightDecay = 0.0;
    double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
};

class Optimizer {
public:
    Optimizer(const OptimizerSettings& settings, std::size_t parameterCount);

    // For the parameters at [offset, offset + grad.size()): update = lr * direction, to be
    // subtracted from the master weights. step is 1-based (Adam's bias correction).
    void computeUpdate(std::int64_t step, std::size_t offset, std::span<const float> grad,
                       std::span<const float> master, std::span<float> update, double lr,
                       const Quantizer& stateFormat, QuantStats* stateStats,
                       const QuantizeOptions& options);

private:
    OptimizerSettings m_settings;
    std::vector<float> m_first, m_second;
};

} // namespace plab
