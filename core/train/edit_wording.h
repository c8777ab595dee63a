// How a run's record words a change of its settings while it goes (the app's slider, a policy
// or recipe edit, a replayed timeline's edit, a command to a steered PyTorch script): the one
// wording of each change event (issue 67 item 1), for the app's session and an emulated run
// alike.
#pragma once

#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <string>

namespace plab {

struct EditWording {
    std::string type;    // the event's type: scale, learning_rate, policy or recipe
    std::string message; // "loss scale set to 4096 (2^12)", "learning rate set to 0.02",
                         // "scaling policy set to dynamic: scaling.policy: static -> dynamic",
                         // "precision recipe changed: recipe.weights.format: fp16 -> bf16"
};

// `patch` took the config from `before` to `after`.
EditWording describeEdit(const TrainConfig& before, const TrainConfig& after,
                         const nlohmann::json& patch);

// "4096 (2^12)", "9741.98 (2^13.25)" (the slider's quarter binades), or the number alone.
std::string scaleText(double scale);

// Whether the patch sets the loss scale alone ({"scaling": {"scale": S}}).
bool setsOnlyTheScale(const nlohmann::json& patch);

} // namespace plab
