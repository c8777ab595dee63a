// The loss scaler a config asks for (its scaling policy and settings): one factory for the
// trainers, the GPT's run and the Python module's LossScaler.
#pragma once

#include "train/loss_scaler.h"
#include "train/train_config.h"

#include <memory>

namespace plab {

std::unique_ptr<LossScaler> makeLossScaler(const TrainConfig& config);

} // namespace plab
