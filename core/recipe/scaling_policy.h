// The scaling policies, as one table: the config parser and writer, the trainer, the GUI's policy
// box (names and tooltips) and the CLI's error messages all read it, so a policy is added in one
// place and no code compares policy names as strings.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace plab {

enum class TensorRole; // recipe/precision_recipe.h

enum class ScalingPolicy {
    None,
    Static,
    Dynamic,
    Enhanced,
    PerLayer,
    AmaxCurrent,
    AmaxDelayed,
    Mx,
    Nvfp4,
    Blockwise
};

struct ScalingPolicyInfo {
    ScalingPolicy policy;
    const char* name;        // as written in configs
    const char* description; // one line, for tooltips and help
    bool adaptsLossScale;    // the policy moves the loss scale itself (dynamic, enhanced)
    // An overflow ends the run: the policy can neither lower the scale nor rescale tensors.
    bool overflowIsDivergence;
};

inline constexpr ScalingPolicyInfo kScalingPolicies[] = {
    {ScalingPolicy::None, "none", "no scaling: the loss scale is 1", false, true},
    {ScalingPolicy::Static, "static", "one fixed loss scale (the slider, scaling.scale)", false,
     true},
    {ScalingPolicy::Dynamic, "dynamic",
     "GradScaler: back off on overflow, grow after growth_interval clean steps", true, false},
    {ScalingPolicy::Enhanced, "enhanced", "dynamic with a rising floor (Mellempudi et al. 2019)",
     true, false},
    {ScalingPolicy::PerLayer, "per-layer", "per-layer analytic gradient scales (Zhao et al. 2020)",
     false, false},
    {ScalingPolicy::AmaxCurrent, "amax-current",
     "per-tensor scales from this step's amax (Transformer Engine, current scaling)", false, false},
    {ScalingPolicy::AmaxDelayed, "amax-delayed",
     "per-tensor scales from an amax history (Transformer Engine, delayed scaling)", false, false},
    {ScalingPolicy::Mx, "mx", "blocks of 32 values with a shared E8M0 scale (OCP MX)", false,
     false},
    {ScalingPolicy::Nvfp4, "nvfp4",
     "blocks of 16 with an E4M3 scale under one FP32 scale per tensor (NVIDIA NVFP4)", false,
     false},
    {ScalingPolicy::Blockwise, "blockwise",
     "blocks of 128 (128x128 tiles for weights) with an FP32 scale amax/max (DeepSeek-V3)", false,
     false},
};

// Whether the policy scales weights, activations and activation gradients in blocks.
inline bool isBlockScaling(ScalingPolicy p) {
    return p == ScalingPolicy::Mx || p == ScalingPolicy::Nvfp4 || p == ScalingPolicy::Blockwise;
}
// Whether it scales them by one amax-derived scale per tensor (Transformer Engine).
inline bool isAmaxScaling(ScalingPolicy p) {
    return p == ScalingPolicy::AmaxCurrent || p == ScalingPolicy::AmaxDelayed;
}

// Whether changing the loss scale moves the values a role's cast sees (and counts), for a role
// cast in a format of `exponentBits` exponent bits. Only gradients carry the loss scale, and not
// where the policy rescales the tensor to its own amax after it: the amax and block policies do
// so for activation gradients in formats narrower than FP32's range (weight gradients they leave
// alone), so there a loss scale changes nothing the cast sees. (Per-layer scaling multiplies the
// loss scale by factors of its own, at least 1 and capped, so it does reach the casts.) The GUI's
// slider preview shifts a histogram only where this holds; test_scalers checks it against
// training.
bool lossScaleMovesCast(ScalingPolicy policy, TensorRole role, int exponentBits);

const ScalingPolicyInfo& info(ScalingPolicy policy);
std::string_view toString(ScalingPolicy policy);
std::optional<ScalingPolicy> parseScalingPolicy(std::string_view name);
// "none, static, dynamic, ... or mx": for error messages.
std::string scalingPolicyNames();

} // namespace plab
