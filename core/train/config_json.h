// The pieces config.json is written from (TrainConfig::toJson), for writers of a part of a
// config: the advice's recipe export writes a layer's formats and scaling with them.
#pragma once

#include "numerics/rounding.h"
#include "recipe/tensor_scaling.h"

#include <nlohmann/json.hpp>

namespace plab {

// A role's format as config.json writes it (format, rounding, overflow).
nlohmann::json quantJson(const QuantConfig& c);
// A layer's own scaling as an override writes it, and the run's scaling.* keys for it.
nlohmann::json tensorScalingJson(const TensorScaling& t);

} // namespace plab
