#include "recipe/casting_settings.h"

namespace plab {

void CastingSettings::setScalingFrom(const CastingSettings& o) {
    scalingPolicy = o.scalingPolicy;
    lossScale = o.lossScale;
    dynamic = o.dynamic;
    perLayerCap = o.perLayerCap;
    cumulativeCap = o.cumulativeCap;
    tensors = o.tensors;
    hadamard = o.hadamard;
}

std::optional<BlockScheme> CastingSettings::blockScheme() const {
    return tensorScaling().blockScheme();
}

TensorScaling CastingSettings::tensorScaling() const {
    TensorScaling t = tensors;
    t.policy = isAmaxScaling(scalingPolicy) || isBlockScaling(scalingPolicy) ? scalingPolicy
                                                                             : ScalingPolicy::None;
    return t;
}

} // namespace plab
