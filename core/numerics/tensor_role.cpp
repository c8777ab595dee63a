// The roles' names as configs, records and messages spell them.
#include "numerics/tensor_role.h"

namespace plab {

std::string_view toString(TensorRole role) {
    switch (role) {
    case TensorRole::Weights:
        return "weights";
    case TensorRole::Activations:
        return "activations";
    case TensorRole::ActivationGradients:
        return "activation_gradients";
    case TensorRole::WeightGradients:
        return "weight_gradients";
    case TensorRole::MasterWeights:
        return "master_weights";
    case TensorRole::OptimizerState:
        return "optimizer_state";
    }
    return "?";
}

std::optional<TensorRole> parseRole(std::string_view text) {
    for (TensorRole r : kAllRoles)
        if (toString(r) == text)
            return r;
    return std::nullopt;
}

} // namespace plab
