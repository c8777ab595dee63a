// The loss scaler a config asks for (its scaling policy and settings): one factory for the
// trainers, the GPT's run and the Python module's LossScaler.
#pragma once

#include "recipe/casting_settings.h"
#include "recipe/loss_scaler.h"

#include <memory>

namespace plab {

std::unique_ptr<LossScaler> makeLossScaler(const CastingSettings& config);

} // namespace plab
