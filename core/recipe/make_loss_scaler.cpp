#include "recipe/make_loss_scaler.h"

#include "recipe/dynamic_scaler.h"

namespace plab {

std::unique_ptr<LossScaler> makeLossScaler(const CastingSettings& config) {
    if (info(config.scalingPolicy).adaptsLossScale) { // dynamic, enhanced
        DynamicScalerSettings d = config.dynamic;
        d.initialScale = config.lossScale;
        d.enhanced = config.scalingPolicy == ScalingPolicy::Enhanced;
        return std::make_unique<DynamicScaler>(d);
    }
    // none: scale 1; static: the given scale; the tensor-scaling policies keep the loss scale
    // and rescale their tensors.
    return std::make_unique<StaticScaler>(
        config.scalingPolicy == ScalingPolicy::None ? 1.0 : config.lossScale, config.scalingPolicy);
}

} // namespace plab
