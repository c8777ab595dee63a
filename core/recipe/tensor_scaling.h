// TensorScaling: how one layer's product inputs (weights, activations, activation gradients) are
// scaled before their cast: not at all, by one scale per tensor from its amax (Transformer
// Engine's current or delayed scaling), or per block (MX, NVFP4, DeepSeek-V3's blockwise FP8).
// A run has one (the scaling.* settings of an amax or block policy), and a recipe's override may
// give a layer its own (`{"stage": N, "scaling": {"policy": "amax-current"}}`), as Transformer
// Engine's nested autocast and Megatron-LM's precision config mix recipes by layer. The loss
// scaler (none, static, dynamic, enhanced, per-layer) is the run's alone: it is not a layer's.
#pragma once

#include "numerics/block_scheme.h"
#include "recipe/scaling_policy.h"

#include <optional>

namespace plab {

struct TensorScaling {
    ScalingPolicy policy = ScalingPolicy::None; // None, an amax policy or a block policy
    int amaxMargin = 0;                         // amax scaling: 2^-margin of the format's max
    int amaxHistory = 1024;                     // delayed: the history's length
    bool amaxMostRecent = false; // delayed: the most recent amax instead of the history's max
    // delayed: a tensor's first cast, with an empty history, at scale 1 as Transformer Engine's
    // DelayedScaling starts (amax_first_scale "one"), not at its own amax ("own_amax")
    bool amaxFirstScaleOne = false;
    int blockSize = 0; // blocks: elements per block; 0: the policy's (32, 16, 128)
    ScaleRounding scaleRounding = ScaleRounding::Floor; // mx: OCP's floor or TE's ceil
    bool weightTiles = false; // weights in square tiles (nvfp4 and blockwise by default)
    bool pow2Scales = false;  // blockwise: scales rounded to powers of two
    bool fourOverSix = false; // nvfp4: per block, map amax to 4 or 6, whichever errs less

    bool scalesTensors() const { return policy != ScalingPolicy::None; }
    bool scalesBlocks() const { return isBlockScaling(policy); }
    // The block scheme of a block policy (nullopt for the others).
    std::optional<BlockScheme> blockScheme() const;
    bool operator==(const TensorScaling&) const = default;
};

// Whether a layer may take the policy for its own: none, the amax and the block policies. The
// loss-scale policies (static, dynamic, enhanced, per-layer) are the run's.
inline bool isTensorScalingPolicy(ScalingPolicy p) {
    return p == ScalingPolicy::None || isAmaxScaling(p) || isBlockScaling(p);
}

} // namespace plab
