#include "train/edit_wording.h"

#include "record/record_number.h"

#include <cmath>
#include <cstdio>

namespace plab {

std::string scaleText(double scale) {
    char number[32];
    std::snprintf(number, sizeof number, "%.6g", scale);
    const double quarters = std::log2(scale) * 4.0;
    if (!std::isfinite(quarters) || quarters != std::round(quarters))
        return number;
    char power[64];
    std::snprintf(power, sizeof power, "%s (2^%g)", number, quarters / 4.0);
    return power;
}

bool setsOnlyTheScale(const nlohmann::json& patch) {
    if (!patch.is_object() || patch.size() != 1 || !patch.contains("scaling"))
        return false;
    const nlohmann::json& scaling = patch.at("scaling");
    return scaling.is_object() && scaling.size() == 1 && scaling.contains("scale");
}

EditWording describeEdit(const TrainConfig& before, const TrainConfig& after,
                         const nlohmann::json& patch) {
    if (setsOnlyTheScale(patch))
        return {"scale", "loss scale set to " + scaleText(after.lossScale)};
    if (patch.is_object() && patch.size() == 1 && patch.contains("train"))
        return {"learning_rate", "learning rate set to " + recordNumber(after.learningRate)};
    const std::string change = describeConfigChange(before.toJson(), after.toJson());
    if (patch.contains("recipe"))
        return {"recipe", change.empty() ? std::string("precision recipe set (no change)")
                                         : "precision recipe changed: " + change};
    return {"policy", "scaling policy set to " + std::string(toString(after.scalingPolicy)) +
                          (change.empty() ? std::string(" (no change)") : ": " + change)};
}

} // namespace plab
