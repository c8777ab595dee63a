// CastingSettings: the part of a run's config that decides how each tensor is cast: the
// precision recipe, the scaling policy with its parameters, and the seed the casts' random
// streams (stochastic rounding, the Hadamard signs) derive from. The caster and the loss scalers
// take only this; TrainConfig (train/train_config.h) is a CastingSettings plus the run's data,
// model and training settings, and reads and writes it as config.json's recipe and scaling.*.
#pragma once

#include "numerics/block_scheme.h"
#include "recipe/dynamic_scaler.h"
#include "recipe/precision_recipe.h"
#include "recipe/scaling_policy.h"
#include "recipe/tensor_scaling.h"

#include <cstdint>
#include <optional>

namespace plab {

struct CastingSettings {
    std::uint64_t seed = 1;

    PrecisionRecipe recipe;
    ScalingPolicy scalingPolicy = ScalingPolicy::Static; // recipe/scaling_policy.h
    double lossScale = 1.0;        // static scale, or the dynamic policies' initial one
    DynamicScalerSettings dynamic; // dynamic / enhanced parameters (initialScale unused)
    double perLayerCap = 16.0, cumulativeCap = 1024.0; // per-layer (Zhao et al.)
    // The amax and block policies' settings (margin, history, block size, ...); their policy
    // is scalingPolicy (tensors.policy is unused here: tensorScaling() fills it in).
    TensorScaling tensors;
    // Block policies: the random Hadamard transform of linear layers' weight-gradient operands.
    bool hadamard = false;

    // Takes the scaling.* settings (policy, scale and every policy parameter) from another.
    void setScalingFrom(const CastingSettings& other);
    // The block scheme of a block-scaling policy (nullopt for the others).
    std::optional<BlockScheme> blockScheme() const;
    // The run's per-tensor scaling: `tensors` with the policy when it is an amax or block one
    // (else none); what a stage without an override of its own takes
    // (PrecisionRecipe::scalingOverride).
    TensorScaling tensorScaling() const;
    bool operator==(const CastingSettings&) const = default;
};

} // namespace plab
