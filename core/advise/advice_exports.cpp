// The advice's three exports.
#include "advise/advice_exports.h"

#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "train/config_json.h"
#include "train/recipe_candidates.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>
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

// Whether a ladder entry is cast scaled (a block format or a recipe candidate).
bool castScaled(const std::string& format) {
    return findRecipeCandidate(format) != nullptr || findBlockFormat(format) != nullptr;
}

const char* teGemm(const std::string& gemm) {
    return gemm == "forward" ? "fprop" : gemm == "data_gradient" ? "dgrad" : "wgrad";
}

std::string regexQuoted(const std::string& name) {
    static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
    return std::regex_replace(name, special, R"(\$&)");
}

// A name as a quoted string literal that YAML (a double-quoted scalar) and Python read back as
// the same text: JSON's escapes (\" \\ \n \u0007) are both languages' too. A module name may
// hold quotes or a newline (a ModuleDict key); unquoted it would end the line or the string and
// write YAML or Python of its own.
std::string quoted(const std::string& text) {
    return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Text for a comment line: a path or name with a line break in it must not end the comment.
std::string commentText(std::string text) {
    for (char& ch : text)
        if (ch == '\n' || ch == '\r')
            ch = ' ';
    return text;
}

std::string describeCriteria(const RunAdvice& a) {
    std::ostringstream s;
    const AdviceCriteria& c = a.criteria;
    s << "ladder ";
    for (std::size_t i = 0; i < c.ladder.size(); ++i)
        s << (i ? "," : "") << c.ladder[i];
    s << "; max flushed " << c.maxFlushed * 100 << "%, max overflow " << c.maxOverflow * 100
      << "%, min SQNR " << c.minSqnrDb << " dB, margin " << c.margin << "; steps " << a.firstStep
      << ".." << a.lastStep;
    return s.str();
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
            !r.chosen.empty() && !castScaled(r.chosen) && parseFormat(r.chosen).hasNarrowRange())
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

std::string adviceTeYaml(const RunAdvice& advice) {
    std::ostringstream y;
    y << "# Precision Lab advice for " << commentText(advice.runDir) << "\n"
      << "# " << describeCriteria(advice) << "\n"
      << "# Transformer Engine precision debug tools (nvidia-dlframework-inspect, TE 2.4 or "
         "later):\n"
      << "# the GEMMs whose operands need more than 8 bits stay in high precision.\n";
    std::map<std::size_t, std::vector<const GemmAdvice*>> wide;
    std::map<std::size_t, std::string> names;
    for (const GemmAdvice& g : advice.gemms) {
        names[g.stage] = g.module;
        if (ladderElementBits(g.format) > 8)
            wide[g.stage].push_back(&g);
    }
    if (wide.empty())
        y << "# every GEMM of every layer may run in FP8: no section needed\n{}\n";
    for (const auto& [stage, gemms] : wide) {
        std::string section = "keep_high_precision_" + names[stage];
        for (char& ch : section)
            if (!std::isalnum(static_cast<unsigned char>(ch)))
                ch = '_';
        y << section << ":\n"
          << "  enabled: True\n"
          << "  layers:\n"
          << "    layer_name_regex_pattern: " << quoted("^" + regexQuoted(names[stage]) + "$")
          << "\n"
          << "  transformer_engine:\n"
          << "    DisableFP8GEMM:\n"
          << "      enabled: True\n"
          << "      gemms: [";
        for (std::size_t i = 0; i < gemms.size(); ++i)
            y << (i ? ", " : "") << teGemm(gemms[i]->gemm);
        y << "]\n"
          << "      # ";
        for (std::size_t i = 0; i < gemms.size(); ++i)
            y << (i ? "; " : "") << teGemm(gemms[i]->gemm) << ": " << gemms[i]->reason;
        y << "\n";
    }
    return y.str();
}

std::string adviceTorchao(const RunAdvice& advice) {
    std::map<std::string, bool> narrow; // module -> all three products in 8 bits or fewer
    for (const GemmAdvice& g : advice.gemms) {
        const bool fits = ladderElementBits(g.format) <= 8;
        const auto [it, added] = narrow.emplace(g.module, fits);
        if (!added)
            it->second = it->second && fits;
    }
    std::ostringstream p;
    p << "# Precision Lab advice for " << commentText(advice.runDir) << "\n"
      << "# " << describeCriteria(advice) << "\n"
      << "# The modules whose three GEMMs may all run in 8 bits or fewer:\n"
      << "FLOAT8_MODULES = {\n";
    for (const auto& [module, fits] : narrow)
        if (fits)
            p << "    " << quoted(module) << ",\n";
    p << "}\n\n\n"
      << "def module_filter_fn(module, fqn):\n"
      << "    \"\"\"torchao.float8.convert_to_float8_training(model, "
         "module_filter_fn=module_filter_fn)\"\"\"\n"
      << "    return fqn in FLOAT8_MODULES\n";
    return p.str();
}

std::string adviceExport(const RunAdvice& advice, const std::string& kind) {
    if (kind == "recipe")
        return adviceRecipe(advice).dump(2) + "\n";
    if (kind == "te-yaml")
        return adviceTeYaml(advice);
    if (kind == "torchao")
        return adviceTorchao(advice);
    throw std::invalid_argument("--export: \"" + kind.substr(0, 40) +
                                "\": expected recipe, te-yaml or torchao");
}

} // namespace plab
