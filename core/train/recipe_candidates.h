// Recipe candidates: the frameworks' FP8 and FP4 training recipes as whole casts (a format per
// role and its per-tensor or per-block scaling), which the PyTorch watcher judges a tensor in
// beside plain formats and the advisor advises, so that an answer is judged the way Transformer
// Engine or torchao will cast rather than unscaled. Each candidate is one of the core's presets
// without its per-layer exceptions, so that it casts exactly as a run under that preset does (the
// one RecipeCaster). docs/advise.md says what each stands for and what it does not model.
#pragma once

#include "numerics/tensor_role.h"
#include "train/train_config.h"

#include <span>
#include <string_view>

namespace plab {

struct RecipeCandidate {
    std::string_view name;      // as `formats=` and `--ladder` name it: "fp8-current"
    std::string_view preset;    // the preset whose recipe and scaling it casts with
    std::string_view standsFor; // the framework recipe it stands for, one line
};

// Narrowest first: the advisor's default ladder takes them in this order.
std::span<const RecipeCandidate> recipeCandidates();
// The candidate of that name, or null (a plain format, or nothing).
const RecipeCandidate* findRecipeCandidate(std::string_view name);

// The candidate's casts as a run's config: its preset's recipe (every module alike: the
// preset's per-layer exceptions dropped) and its tensor scaling; the loss scaler none.
TrainConfig candidateConfig(const RecipeCandidate& candidate);

// The roles a candidate judges: the three products' inputs (weights, activations, activation
// gradients). A weight gradient is the weight-gradient product's output, which the frameworks
// keep in BF16 or FP32: a candidate has no cast of it to judge.
inline bool candidateJudges(TensorRole role) {
    return role == TensorRole::Weights || role == TensorRole::Activations ||
           role == TensorRole::ActivationGradients;
}

} // namespace plab
