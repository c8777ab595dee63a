// The parts in their one order; each by the config's own merge and setting rules.
#include "train/run_config_builder.h"

#include "train/train_config.h"

namespace plab {

nlohmann::json buildRunConfigJson(const RunConfigParts& parts) {
    nlohmann::json j = nlohmann::json::object();
    if (!parts.preset.empty())
        mergeConfig(j, findPreset(parts.preset).json);
    if (!parts.base.empty())
        mergeConfig(j, parts.base);
    for (const std::string& s : parts.settings)
        applySetting(j, s);
    if (parts.seed)
        applySetting(j, "seed=" + std::to_string(*parts.seed));
    if (parts.epochs) {
        applySetting(j, "train.epochs=" + std::to_string(*parts.epochs));
        applySetting(j, "train.steps=0");
    } else if (parts.steps) {
        applySetting(j, "train.steps=" + std::to_string(*parts.steps));
    }
    if (parts.threads)
        applySetting(j, "threads=" + std::to_string(*parts.threads));
    if (!parts.data.empty())
        j["data"]["source"] = parts.data;
    if (!parts.device.empty())
        j["device"] = parts.device;
    return j;
}

} // namespace plab
