// Optimisers: SGD with momentum and weight decay, Adam and AdamW. They see unscaled gradients, and
// keep their state (momentum, Adam moments) in the recipe's optimiser-state format.
#pragma once

#include "numerics/quantizer.h"

#include <cstdint>
#include <span>

namespace plab {

// The optimiser's names for configs are train/train_config.h's kOptimizerNames.
enum class OptimizerKind { Sgd, Adam, AdamW };

struct OptimizerSettings {
    OptimizerKind kind;
    double momentum = 0.9, weightDecay = 0.0;
    double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
};

// For one range of parameters: update = lr * direction, to be subtracted from the master
// weights; first (and second, Adam only) are the optimiser's state for the same range, kept in
// stateFormat. step is 1-based (Adam's bias correction).
void computeOptimizerUpdate(const OptimizerSettings& settings, std::int64_t step,
                            std::span<const float> grad, std::span<const float> master,
                            std::span<float> update, std::span<float> first,
                            std::span<float> second, double lr, const Quantizer& stateFormat,
                            QuantStats* stateStats, const QuantizeOptions& options);

// SGD with its momentum and the master weights both in float32: the computeOptimizerUpdate()
// above and then master -= update, in one pass over memory instead of four (the float32 casts
// in between change nothing), with the same operations in the same order, so the momentum and
// master come out the same bit for bit. The update is not kept. With `counts`, it gets the
// nonzero updates and those that left the master unchanged (as TensorOps::applyMasterUpdate
// counts them; its UpdateCounts is this).
struct MasterUpdateCounts {
    std::uint64_t updates = 0, lost = 0;
};
void sgdStepFloat32(const OptimizerSettings& settings, std::span<const float> grad,
                    std::span<float> master, std::span<float> momentum, double lr,
                    MasterUpdateCounts* counts = nullptr);

} // namespace plab
