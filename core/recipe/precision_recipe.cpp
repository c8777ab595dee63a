// Role names and the per-stage lookup.
#include "recipe/precision_recipe.h"

namespace plab {

PrecisionRecipe::PrecisionRecipe() {
    roles.fill(QuantConfig::forFormat(parseFormat("fp32")));
}

const OverrideKind* findOverrideKind(std::string_view name) {
    for (const OverrideKind& k : kOverrideKinds)
        if (k.name == name)
            return &k;
    return nullptr;
}

const std::optional<QuantConfig>& PrecisionRecipe::siteConfig(std::string_view site,
                                                              TensorRole role) const {
    static const std::optional<QuantConfig> none;
    const auto it = kindOverrides.find(site);
    return it == kindOverrides.end() ? none : it->second[static_cast<std::size_t>(role)];
}

const QuantConfig& PrecisionRecipe::config(int stage, int stageCount, TensorRole role,
                                           std::string_view stageKind,
                                           std::string_view site) const {
    const auto r = static_cast<std::size_t>(role);
    if (!site.empty())
        if (const std::optional<QuantConfig>& q = siteConfig(site, role))
            return *q;
    if (auto it = stageOverrides.find(stage); it != stageOverrides.end() && it->second[r])
        return *it->second[r];
    if (stage == stageCount - 1)
        if (auto it = stageOverrides.find(-1); it != stageOverrides.end() && it->second[r])
            return *it->second[r];
    if (!stageKind.empty())
        if (auto it = kindOverrides.find(stageKind); it != kindOverrides.end() && it->second[r])
            return *it->second[r];
    return roles[r];
}

const TensorScaling* PrecisionRecipe::scalingOverride(int stage, int stageCount,
                                                      std::string_view stageKind) const {
    if (auto it = stageScaling.find(stage); it != stageScaling.end())
        return &it->second;
    if (stage == stageCount - 1)
        if (auto it = stageScaling.find(-1); it != stageScaling.end())
            return &it->second;
    if (!stageKind.empty())
        if (auto it = kindScaling.find(stageKind); it != kindScaling.end())
            return &it->second;
    return nullptr;
}

namespace {

// A stage's kind from its name: the part after the last '.' ("block0.attention" -> attention).
std::string_view kindOfStage(int stage, const std::vector<std::string>& stageNames) {
    if (stage < 0 || stage >= static_cast<int>(stageNames.size()))
        return {};
    const std::string_view name = stageNames[static_cast<std::size_t>(stage)];
    const std::size_t dot = name.rfind('.');
    return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

} // namespace

const QuantConfig& PrecisionRecipe::stageConfig(int stage,
                                                const std::vector<std::string>& stageNames,
                                                TensorRole role) const {
    return config(stage, static_cast<int>(stageNames.size()), role, kindOfStage(stage, stageNames));
}

const TensorScaling*
PrecisionRecipe::stageScalingOverride(int stage, const std::vector<std::string>& stageNames) const {
    return scalingOverride(stage, static_cast<int>(stageNames.size()),
                           kindOfStage(stage, stageNames));
}

} // namespace plab
