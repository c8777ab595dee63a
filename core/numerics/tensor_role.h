// The tensor roles a precision recipe gives a format each: what the quantisers, their counters,
// the snapshots and the record name a cast by. Plain names, below everything that uses them.
#pragma once

#include <array>
#include <cstddef>
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
// The tensors a matrix product reads (weights, activations, activation gradients): those the
// amax and block policies scale, as Transformer Engine scales an FP8 GEMM's inputs.
inline bool isProductInput(TensorRole r) {
    return r == TensorRole::Weights || r == TensorRole::Activations ||
           r == TensorRole::ActivationGradients;
}
std::optional<TensorRole> parseRole(std::string_view text);

} // namespace plab
