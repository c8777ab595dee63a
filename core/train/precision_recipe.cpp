// Role names and the per-stage lookup.
#include "train/precision_recipe.h"

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

const QuantConfig& PrecisionRecipe::stageConfig(int stage,
                                                const std::vector<std::string>& stageNames,
                                                TensorRole role) const {
    const int count = static_cast<int>(stageNames.size());
    std::string_view kind;
    if (stage >= 0 && stage < count) {
        kind = stageNames[static_cast<std::size_t>(stage)];
        kind = kind.substr(kind.rfind('.') == std::string_view::npos ? 0 : kind.rfind('.') + 1);
    }
    return config(stage, count, role, kind);
}

} // namespace plab
