// PrecisionRecipe: the format, rounding and overflow mode of every tensor role, with per-stage
// overrides (e.g. first and last layer kept in FP16, as in Mellempudi et al.) and the optional
// emulation of a narrow matrix-product accumulator.
#pragma once

#include "numerics/rounding.h"

#include <array>
#include <map>
#include <optional>
#include <string_view>

namespace plab {

enum class TensorRole {
    Weights,             // weights as used in forward (quantised from the master copy)
    Activations,         // each stage's output, as the next stage reads it
    ActivationGradients, // gradient arriving at each stage from above, loss-scaled
    WeightGradients,     // loss-scaled weight gradients
    MasterWeights,       // the copy the optimiser updates
    OptimizerState,      // momentum / Adam moments
};
inline constexpr std::size_t kRoleCount = 6;
inline constexpr std::array kAllRoles = {
    TensorRole::Weights,         TensorRole::Activations,   TensorRole::ActivationGradients,
    TensorRole::WeightGradients, TensorRole::MasterWeights, TensorRole::OptimizerState};
std::string_view toString(TensorRole role); // "weights", "activation_gradients", ...
std::optional<TensorRole> parseRole(std::string_view text);

struct PrecisionRecipe {
    std::array<QuantConfig, kRoleCount> roles; // defaults: fp32, nearest-even
    // Keyed by stage index; -1 means the last stage.
    std::map<int, std::array<std::optional<QuantConfig>, kRoleCount>> stageOverrides;
    std::optional<QuantConfig> accumulation; // none: FP32 accumulation
    int accumulateEvery = 0;                 // products between roundings of the running sum
    // Promotion (DeepSeek-V3): chunks of this many products summed in the accumulation format,
    // rounded after every addition, each chunk's sum added to an FP32 total. 0: off (`every`).
    int promoteEvery = 0;

    PrecisionRecipe();
    const QuantConfig& config(int stage, int stageCount, TensorRole role) const;
    bool operator==(const PrecisionRecipe&) const = default;
};

} // namespace plab
