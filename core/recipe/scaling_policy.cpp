// Lookups in kScalingPolicies.
#include "recipe/scaling_policy.h"

#include "recipe/precision_recipe.h"

namespace plab {

bool lossScaleMovesCast(ScalingPolicy policy, TensorRole role, int exponentBits) {
    if (role != TensorRole::ActivationGradients && role != TensorRole::WeightGradients)
        return false;
    // The tensor-scaling policies rescale the products' inputs, except in a format with FP32's
    // exponent range (an amax scale of 1, a plain cast under blocks). `none` multiplies by a
    // scale a timeline edit sets (the GUI's slider makes such a run static); per-layer factors
    // (>= 1, capped) absorb only part of it.
    const bool rescaled = (isAmaxScaling(policy) || isBlockScaling(policy)) &&
                          isProductInput(role) && exponentBits < 8; // FormatSpec::hasNarrowRange
    return !rescaled;
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
