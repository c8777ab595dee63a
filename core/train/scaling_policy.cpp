// Lookups in kScalingPolicies.
#include "train/scaling_policy.h"

namespace plab {

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
