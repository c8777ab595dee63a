// The recipe candidates' table and their configs.
#include "train/recipe_candidates.h"

#include "train/presets.h"

#include <algorithm>
#include <array>

namespace plab {
namespace {

constexpr std::array<RecipeCandidate, 5> kCandidates = {{
    {"nvfp4", "nvfp4",
     "Transformer Engine's NVFP4BlockScaling: E2M1 in 1x16 blocks with E4M3 scales under an FP32 "
     "tensor scale, weights in 16x16 tiles, stochastic rounding on gradients"},
    {"mxfp8", "mxfp8-ceil",
     "Transformer Engine's MXFP8BlockScaling: E4M3 in both passes, 1x32 blocks with E8M0 scales "
     "rounded up"},
    {"fp8-block", "fp8-blockwise",
     "Transformer Engine's Float8BlockScaling (DeepSeek-V3): E4M3, 1x128 blocks for activations "
     "and gradients, 128x128 weight tiles, FP32 scales"},
    {"fp8-delayed", "fp8-hybrid-delayed",
     "Transformer Engine's DelayedScaling (HYBRID, amax history 1024, max, margin 0): E4M3 "
     "forward, E5M2 gradients, per-tensor scales"},
    {"fp8-current", "fp8-hybrid-current",
     "Transformer Engine's Float8CurrentScaling (HYBRID) and torchao's tensorwise Float8: E4M3 "
     "forward, E5M2 gradients, each tensor scaled to its own amax"},
}};

} // namespace

std::span<const RecipeCandidate> recipeCandidates() {
    return kCandidates;
}

const RecipeCandidate* findRecipeCandidate(std::string_view name) {
    const auto it = std::find_if(kCandidates.begin(), kCandidates.end(),
                                 [&](const RecipeCandidate& c) { return c.name == name; });
    return it == kCandidates.end() ? nullptr : &*it;
}

TrainConfig candidateConfig(const RecipeCandidate& candidate) {
    TrainConfig config = configFromJson(findPreset(std::string(candidate.preset)).json);
    // Every module alike (the preset's exceptions dropped): the advice chooses per module.
    config.recipe.stageOverrides.clear();
    config.recipe.kindOverrides.clear();
    config.recipe.stageScaling.clear();
    config.recipe.kindScaling.clear();
    // Transformer Engine's DelayedScaling casts a tensor's first step at scale 1 (its amax
    // history empty); the core's own fp8-hybrid-delayed preset starts from the tensor's amax.
    if (candidate.name == "fp8-delayed")
        config.tensors.amaxFirstScaleOne = true;
    return config;
}

} // namespace plab
