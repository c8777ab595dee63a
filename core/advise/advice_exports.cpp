// The advice as the project's recipe, and the export kinds.
#include "advise/advice_exports.h"

#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "train/config_json.h"
#include "train/recipe_candidates.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace plab {
namespace {

// How a recipe says a ladder entry for one role: the role's format (a name, or a format with its
// rounding) and, for a scaled entry (a block format, a recipe candidate), the layer's scaling.
struct RecipeFormat {
    nlohmann::json element;
    nlohmann::json scaling; // null: an element format, cast as it was judged (unscaled)
};

RecipeFormat recipeFormatOf(const std::string& format, TensorRole role) {
    if (const RecipeCandidate* candidate = findRecipeCandidate(format)) {
        // As the watcher judged it: the candidate's preset, every module alike.
        const TrainConfig config = candidateConfig(*candidate);
        const QuantConfig& q = config.recipe.roles[static_cast<std::size_t>(role)];
        nlohmann::json element = q.format.name;
        if (q.rounding != Rounding::NearestEven)
            element = {{"format", q.format.name}, {"rounding", std::string(toString(q.rounding))}};
        return {element, tensorScalingJson(config.tensorScaling())};
    }
    const BlockFormat* block = findBlockFormat(format);
    if (block == nullptr)
        return {format, nullptr};
    const BlockScheme& s = block->scheme;
    // The watcher's what-if casts blocks along rows (no weight tiles, no Hadamard): so does the
    // recipe, so that the run does what was judged.
    nlohmann::json scaling = {{"block_size", s.blockSize}, {"weight_tiles", false}};
    switch (s.kind) {
    case BlockScaleKind::Nvfp4:
        scaling["policy"] = "nvfp4";
        break;
    case BlockScaleKind::Mx:
        scaling["policy"] = "mx";
        scaling["scale_rounding"] = std::string(toString(s.scaleRounding));
        break;
    case BlockScaleKind::Fp32:
        scaling["policy"] = "blockwise";
        break;
    }
    return {block->element.name, scaling};
}

} // namespace

nlohmann::json adviceRecipe(const RunAdvice& advice) {
    constexpr TensorRole kRoles[] = {TensorRole::Weights, TensorRole::Activations,
                                     TensorRole::ActivationGradients, TensorRole::WeightGradients};
    // Per role, the recipe format of each stage, and how many stages took each; per stage, the
    // scaled entry its scaled roles take and its scaling (a layer's own scaling, config.md).
    std::map<TensorRole, std::map<std::size_t, nlohmann::json>> byStage;
    std::map<TensorRole, std::map<nlohmann::json, int>> votes;
    std::map<std::size_t, std::pair<std::string, nlohmann::json>> stageScaled; // entry, scaling
    auto isProduct = [&](std::size_t stage) {
        return stage >= advice.products.size() || advice.products[stage];
    };
    for (const RoleAdvice& r : advice.roles) {
        if (!isProduct(r.stage))
            continue; // a LayerNorm's weights: no product the recipe casts
        const std::string chosen = r.chosen.empty() ? "fp32" : r.chosen;
        const RecipeFormat f = recipeFormatOf(chosen, r.role);
        if (!f.scaling.is_null()) {
            const auto [it, first] = stageScaled.try_emplace(r.stage, chosen, f.scaling);
            if (!first && it->second.first != chosen)
                throw std::invalid_argument(
                    "the advice takes two scaled recipes in " + r.module + " (" + it->second.first +
                    " and " + chosen +
                    "): a layer scales under one policy; advise again with one of them in "
                    "--ladder");
        }
        byStage[r.role][r.stage] = f.element;
        ++votes[r.role][f.element];
    }
    // A scaled layer scales every narrow product input: a format judged unscaled (E4M3 at the
    // loss scale) in the same layer would be cast otherwise than it was judged. (A weight
    // gradient, a product's output, no layer scaling touches.)
    for (const RoleAdvice& r : advice.roles)
        if (const auto scaled = stageScaled.find(r.stage);
            scaled != stageScaled.end() && isProduct(r.stage) && isProductInput(r.role) &&
            !r.chosen.empty() && !ladderCastsScaled(r.chosen) &&
            parseFormat(r.chosen).hasNarrowRange())
            throw std::invalid_argument(
                "the advice takes " + scaled->second.first + " (scaled) and " + r.chosen +
                " unscaled in " + r.module + " (" + std::string(toString(r.role)) +
                "): a layer scales every narrow role under one policy; advise again with "
                "a ladder of " +
                scaled->second.first + " and wide formats, or without it");
    nlohmann::json recipe = nlohmann::json::object();
    std::map<TensorRole, nlohmann::json> base;
    for (TensorRole role : kRoles) {
        int best = 0;
        for (const auto& [format, n] : votes[role])
            if (n > best) {
                best = n;
                base[role] = format;
            }
        if (best > 0)
            recipe[toString(role)] = base[role];
    }
    // Per-layer exceptions, one entry per stage that differs somewhere.
    std::map<std::size_t, nlohmann::json> exceptions;
    auto recipeName = [&](std::size_t stage) {
        return stage < advice.recipeNames.size() ? advice.recipeNames[stage] : std::string();
    };
    for (TensorRole role : kRoles)
        for (const auto& [stage, format] : byStage[role])
            if (format != base[role])
                exceptions[stage][toString(role)] = format;
    // A scaled layer's own scaling; the run's is its loss scaler.
    const auto scalingOf = [&](std::size_t stage) {
        const auto scaled = stageScaled.find(stage);
        return scaled == stageScaled.end() ? nlohmann::json{{"policy", "none"}}
                                           : scaled->second.second;
    };
    for (const auto& [stage, scaled] : stageScaled)
        exceptions[stage]["scaling"] = scaled.second;
    if (advice.watched) {
        // emulate's module patterns also match a module's children ("attn" matches
        // "attn.out_proj"): a child of an exception gets an entry of its own, every role, and
        // entries go parents first (later entries win), so each module takes its own advice.
        std::vector<std::size_t> parents;
        for (const auto& [stage, roles] : exceptions)
            parents.push_back(stage);
        for (const auto& [stage, format] : byStage[TensorRole::Weights])
            for (std::size_t parent : parents)
                if (parent != stage && recipeName(stage).rfind(recipeName(parent) + ".", 0) == 0)
                    for (TensorRole role : kRoles) {
                        if (const auto f = byStage[role].find(stage); f != byStage[role].end())
                            exceptions[stage][toString(role)] = f->second;
                        exceptions[stage]["scaling"] = scalingOf(stage);
                    }
    }
    std::vector<std::size_t> order;
    for (const auto& [stage, roles] : exceptions)
        order.push_back(stage);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return recipeName(a).size() < recipeName(b).size();
    });
    nlohmann::json overrides = nlohmann::json::array();
    for (std::size_t stage : order) {
        nlohmann::json entry = advice.watched ? nlohmann::json{{"modules", recipeName(stage)}}
                                              : nlohmann::json{{"stage", static_cast<int>(stage)}};
        entry.update(exceptions[stage]);
        overrides.push_back(entry);
    }
    if (!overrides.empty())
        recipe["overrides"] = overrides;
    nlohmann::json scaling;
    if (advice.scaleVaried)
        scaling = {{"policy", "dynamic"}, {"scale", advice.lossScale}};
    else if (advice.lossScale != 1.0)
        scaling = {{"policy", "static"}, {"scale", advice.lossScale}};
    else
        scaling = {{"policy", "none"}};
    if (!advice.runConfig.is_object())
        return {{"recipe", recipe}, {"scaling", scaling}};
    // A trained run: its whole config (model, data, training), the advised recipe in place of
    // its own, without the timeline of edits its recipe went through.
    nlohmann::json config = advice.runConfig;
    config.erase("timeline");
    config["recipe"] = recipe;
    config["scaling"] = scaling;
    return config;
}

namespace {

struct ExportKind {
    const char* name;
    std::string (*write)(const RunAdvice&);
};
// The kinds kAdviceExportKinds names, in its order.
constexpr ExportKind kExportKinds[] = {
    {"recipe", [](const RunAdvice& a) { return adviceRecipe(a).dump(2) + "\n"; }},
    {"te-yaml", [](const RunAdvice& a) { return adviceTeYaml(a, TeFeatureNames::Quantization); }},
    {"te-yaml-fp8", [](const RunAdvice& a) { return adviceTeYaml(a, TeFeatureNames::Fp8); }},
    {"megatron", [](const RunAdvice& a) { return adviceMegatron(a); }},
    {"torchao", [](const RunAdvice& a) { return adviceTorchao(a); }},
};

const ExportKind& exportKind(const std::string& kind) {
    for (const ExportKind& k : kExportKinds)
        if (kind == k.name)
            return k;
    throw std::invalid_argument("--export: \"" + kind.substr(0, 40) + "\": expected " +
                                std::string(kAdviceExportKinds));
}

} // namespace

void checkAdviceExportKind(const std::string& kind) {
    exportKind(kind);
}

std::string adviceExport(const RunAdvice& advice, const std::string& kind) {
    return exportKind(kind).write(advice);
}

} // namespace plab
