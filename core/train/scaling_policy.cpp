// Lookups in kScalingPolicies.
#include "train/scaling_policy.h"

#include "train/precision_recipe.h"

namespace plab {

bool lossScaleMovesCast(ScalingPolicy policy, TensorRole role, int exponentBits) {
    if (role != TensorRole::ActivationGradients && role != TensorRole::WeightGradients)
        return false;
    switch (policy) {
    case ScalingPolicy::AmaxCurrent:
    case ScalingPolicy::AmaxDelayed:
    case ScalingPolicy::Mx:
    case ScalingPolicy::Nvfp4:
    case ScalingPolicy::Blockwise:
        // A format with FP32's exponent range is not rescaled (an amax scale of 1, a plain cast
        // under blocks).
        return role == TensorRole::WeightGradients || exponentBits >= 8;
    case ScalingPolicy::None:     // the slider still sets the scale a `none` run multiplies by
    case ScalingPolicy::PerLayer: // its factors (>= 1, capped) absorb part of the loss scale
    case ScalingPolicy::Static:
    case ScalingPolicy::Dynamic:
    case ScalingPolicy::Enhanced:
        break;
    }
    return true;
}

const ScalingPolicyInfo& info(ScalingPolicy policy) {
    for (const ScalingPolicyInfo& p : kScalingPolicies)
        if (p.policy == policy)
            return p;
    return kScalingPolicies[1]; // unreachable: every enumerator has a row
}

std::string_view toString(ScalingPolicy policy) {
    return info(policy).name;
}

std::optional<ScalingPolicy> parseScalingPolicy(std::string_view name) {
    for (const ScalingPolicyInfo& p : kScalingPolicies)
        if (name == p.name)
            return p.policy;
    return std::nullopt;
}

std::string scalingPolicyNames() {
    std::string out;
    const std::size_t n = std::size(kScalingPolicies);
    for (std::size_t i = 0; i < n; ++i)
        out += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(kScalingPolicies[i].name);
    return out;
}

} // namespace plab
