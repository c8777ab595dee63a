// The parts in their one order; each by the config's own merge and setting rules.
#include "train/run_config_builder.h"

#include "train/presets.h"
#include "train/train_config.h"

#include <filesystem>

namespace plab {

namespace {

// A data folder or text file named relative to here, made absolute: the run's config.json
// then replays from any directory. Names (synthetic, fashion-mnist, fortunes) stay names.
std::string absoluteDataSource(const std::string& source) {
    if (source == "synthetic" || source == "fashion-mnist" || source == "fortunes")
        return source;
    const bool text = source.rfind("text:", 0) == 0;
    const std::filesystem::path path = text ? source.substr(5) : source;
    if (path.empty() || path.is_absolute())
        return source;
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
    if (ec)
        return source;
    return (text ? "text:" : "") + absolute.string();
}

} // namespace

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
    // However it was given (--data, a config file, --set, a grid value).
    if (j.contains("data") && j["data"].is_object() && j["data"].contains("source") &&
        j["data"]["source"].is_string())
        j["data"]["source"] = absoluteDataSource(j["data"]["source"].get<std::string>());
    if (!parts.device.empty())
        j["device"] = parts.device;
    return j;
}

} // namespace plab
