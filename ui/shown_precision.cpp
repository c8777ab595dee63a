// ShownPrecision from a config, or from the format a watched run is judged in.
#include "shown_precision.h"

#include "numerics/format_spec.h"
#include "train/recipe_candidates.h"

namespace plab {

ShownPrecision ShownPrecision::of(const TrainConfig& config) {
    ShownPrecision shown;
    shown.recipe = config.recipe;
    shown.scalingPolicy = config.scalingPolicy;
    shown.blockScheme = config.blockScheme();
    shown.amaxMargin = config.tensors.amaxMargin;
    return shown;
}

ShownPrecision ShownPrecision::forStage(int stage,
                                        const std::vector<std::string>& stageNames) const {
    const TensorScaling* own = recipe.stageScalingOverride(stage, stageNames);
    if (own == nullptr)
        return *this;
    ShownPrecision shown = *this;
    if (own->scalesTensors()) // a stage scaled to its own amax: the loss scale does not move it
        shown.scalingPolicy = own->policy;
    shown.blockScheme = own->blockScheme();
    shown.amaxMargin = own->amaxMargin;
    return shown;
}

ShownPrecision ShownPrecision::judgedIn(const std::string& format) {
    ShownPrecision shown;
    // A block format or a recipe candidate scales the values in its cast: the recorded
    // histogram (of the values before) would not fit its element bands.
    const bool scaledInCast =
        findBlockFormat(format) != nullptr || findRecipeCandidate(format) != nullptr;
    const QuantConfig q =
        QuantConfig::forFormat(parseFormat(scaledInCast ? std::string("fp32") : format));
    for (QuantConfig& role : shown.recipe.roles)
        role = q;
    shown.scalingPolicy = ScalingPolicy::Static;
    return shown;
}

} // namespace plab
