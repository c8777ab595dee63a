// ShownPrecision: what the views read of a run's settings to draw one of its tensors: the format
// each stage's role is cast to, the scaling policy, the block scheme and the amax margin. A run
// the app trains gives it from its config (of()); a watched PyTorch run, which has no config the
// app could train, from the format its counts are judged in (judgedIn()).
#pragma once

#include "numerics/block_scheme.h"
#include "train/train_config.h"

#include <optional>
#include <string>
#include <vector>

namespace plab {

struct ShownPrecision {
    PrecisionRecipe recipe;
    ScalingPolicy scalingPolicy = ScalingPolicy::None;
    std::optional<BlockScheme> blockScheme;
    int amaxMargin = 0;

    static ShownPrecision of(const TrainConfig& config);
    // Every role in `format`, under a static scale (the slider's preview moves the gradients'
    // histograms). A block format's or a recipe candidate's element bands would not fit the
    // recorded histogram (of the values before their scales), so it is drawn over FP32's bands;
    // the scaled cast's own counts are in the shares line.
    static ShownPrecision judgedIn(const std::string& format);

    // As shown for one stage: where the recipe gives the stage its own per-tensor scaling
    // (recipe/tensor_scaling.h), that scaling's policy, block scheme and margin replace the
    // run's; the loss scale's policy stays the run's for a stage that has none of its own.
    ShownPrecision forStage(int stage, const std::vector<std::string>& stageNames) const;
    // The format `role` of stage `stage` (named by `stageNames`) is cast to.
    const FormatSpec& format(int stage, const std::vector<std::string>& stageNames,
                             TensorRole role) const {
        return recipe.stageConfig(stage, stageNames, role).format;
    }
    bool operator==(const ShownPrecision&) const = default;
};

} // namespace plab
