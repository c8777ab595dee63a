// The advice in the frameworks' own files: Transformer Engine's debug-tools YAML, Megatron-LM's
// precision config and a torchao script. Each names the API it targets and lists, as comments,
// what it cannot express (never dropped silently).
#include "advise/advice_exports.h"
#include "advise/export_text.h"
#include "advise/module_plans.h"

#include <cctype>
#include <set>
#include <sstream>

namespace plab {
namespace {

// "^pattern$", built by appends: GCC 12 warns (-Wrestrict, a false positive) on "^" + string.
std::string anchored(const std::string& pattern) {
    std::string out = "^";
    out += pattern;
    out += '$';
    return out;
}

std::string identifier(const std::string& name) {
    std::string out = name;
    for (char& ch : out)
        if (!std::isalnum(static_cast<unsigned char>(ch)))
            ch = '_';
    return out;
}

// Why a module runs narrow in fewer GEMMs than advised, or none: "dgrad: activation gradients
// need bf16".
std::string wideReasons(const ModulePlan& p) {
    std::string out;
    for (std::size_t i = 0; i < 3; ++i)
        if (!p.narrow[i] && p.gemms[i] != nullptr)
            out += std::string(out.empty() ? "" : "; ") + kTeGemms[i] + ": " + p.gemms[i]->reason;
    return out;
}

void header(std::ostringstream& out, const RunAdvice& advice, const char* target) {
    out << "# Precision Lab advice for " << commentText(advice.runDir) << "\n"
        << "# " << describeCriteria(advice) << "\n"
        << "# " << target << "\n";
}

// A module's recipe where a target takes one recipe for a module's three GEMMs together
// (Megatron's per-module config, torchao): its advised recipe where all three may run in it,
// else high precision; each reason it is not as advised goes to `unexpressed`, worded for the
// target (`splitWhy`: a module narrow in some GEMMs only; `delayedWhy`: delayed scaling).
FrameworkRecipe wholeModuleRecipe(const ModulePlan& p, const std::string& splitWhy,
                                  const std::string& delayedWhy,
                                  std::vector<std::string>& unexpressed) {
    const std::string name = quotedName(p.module);
    if (!p.note.empty())
        unexpressed.push_back(name + ": " + p.note);
    if (p.recipe == FrameworkRecipe::HighPrecision)
        return p.recipe;
    if (!p.allNarrow()) {
        unexpressed.push_back(name + ": " + frameworkRecipeName(p.recipe) +
                              " for some GEMMs only (" + wideReasons(p) + "): " + splitWhy);
        return FrameworkRecipe::HighPrecision;
    }
    if (p.recipe == FrameworkRecipe::Fp8Delayed) {
        unexpressed.push_back(name + ": fp8-delayed: " + delayedWhy +
                              "; advise with a --ladder without fp8-delayed for a recipe it "
                              "takes");
        return FrameworkRecipe::HighPrecision;
    }
    return p.recipe;
}

// The comment lines that list what a file does not express as advised.
void writeUnexpressed(std::ostringstream& out, const std::vector<std::string>& unexpressed) {
    if (unexpressed.empty())
        return;
    out << "# Not expressed as advised:\n";
    for (const std::string& line : unexpressed)
        out << "#   " << commentText(line) << "\n";
}

} // namespace

std::string adviceTeYaml(const RunAdvice& advice, TeFeatureNames names) {
    const bool renamed = names == TeFeatureNames::Quantization;
    const char* gemmFeature = renamed ? "DisableQuantizationGEMM" : "DisableFP8GEMM";
    const char* layerFeature = renamed ? "DisableQuantizationLayer" : "DisableFP8Layer";
    std::ostringstream y;
    header(y, advice,
           renamed ? "Transformer Engine's precision debug tools (nvidia-dlframework-inspect), the "
                     "feature names of TE after 2.12\n# (DisableQuantizationGEMM, "
                     "DisableQuantizationLayer; --export te-yaml-fp8 writes TE 2.4 to 2.12's "
                     "DisableFP8GEMM, DisableFP8Layer)."
                   : "Transformer Engine's precision debug tools (nvidia-dlframework-inspect), the "
                     "feature names of TE 2.4 to 2.12\n# (DisableFP8GEMM, DisableFP8Layer; "
                     "--export te-yaml writes the later DisableQuantizationGEMM/Layer).");
    const std::vector<ModulePlan> plans = modulePlans(advice);
    y << "# A GEMM whose operands need more than 8 bits runs in high precision; a layer none of "
         "whose GEMMs may\n# run narrow runs whole in high precision. This file cannot choose "
         "recipes: run each module under\n# te.autocast(recipe=...) with its recipe "
         "(transformer_engine.common.recipe):\n";
    for (const ModulePlan& p : plans) {
        y << "#   " << commentText(quotedName(p.module)) << ": " << frameworkRecipeName(p.recipe);
        if (p.recipe != FrameworkRecipe::HighPrecision)
            y << " -> " << teRecipeClass(p.recipe);
        if (!p.note.empty())
            y << " (" << commentText(p.note) << ")";
        y << "\n";
    }
    bool any = false;
    for (const ModulePlan& p : plans) {
        if (p.allNarrow() || p.lookup)
            continue; // an embedding is no TE layer
        any = true;
        y << "keep_high_precision_" << identifier(p.module) << ":\n"
          << "  enabled: True\n"
          << "  layers:\n"
          << "    layer_name_regex_pattern: " << quotedName(anchored(regexQuoted(p.module))) << "\n"
          << "  transformer_engine:\n";
        if (p.noneNarrow()) {
            y << "    " << layerFeature << ":\n"
              << "      enabled: True\n";
        } else {
            y << "    " << gemmFeature << ":\n"
              << "      enabled: True\n"
              << "      gemms: [";
            bool first = true;
            for (std::size_t i = 0; i < 3; ++i)
                if (!p.narrow[i]) {
                    y << (first ? "" : ", ") << kTeGemms[i];
                    first = false;
                }
            y << "]\n";
        }
        const std::string why = wideReasons(p);
        if (!why.empty())
            y << "      # " << commentText(why) << "\n";
    }
    if (!any)
        y << "# every GEMM of every layer may run in its recipe: no section needed\n{}\n";
    return y.str();
}

std::string adviceMegatron(const RunAdvice& advice) {
    std::ostringstream y;
    header(y, advice,
           "Megatron-LM's --te-precision-config-file (megatron/core/extensions/"
           "TransformerEngineMixedPrecision.md, TEQuantizationRecipe;\n# read 2026-12): "
           "configs by recipe, matchers by module-name glob (the first enabled match wins). "
           "Module names\n# are the record's: Megatron's own where the watched model is "
           "Megatron's. override_nonquantized_autocast:\n# each module takes its recipe "
           "whether or not the run's own FP8/FP4 autocast is on.");
    const std::vector<ModulePlan> plans = modulePlans(advice);
    // Megatron's per-module config cannot keep one GEMM of a module in high precision, nor take
    // delayed scaling; an embedding is no TE module, so it has no matcher.
    std::vector<std::string> unexpressed;
    std::vector<std::pair<const ModulePlan*, FrameworkRecipe>> matched; // module, its config
    std::set<FrameworkRecipe> used;
    for (const ModulePlan& p : plans) {
        const FrameworkRecipe r = wholeModuleRecipe(
            p, "this config cannot split a module's GEMMs, so bf16; --export te-yaml can",
            "Megatron's per-module config refuses delayed scaling, so bf16", unexpressed);
        if (p.lookup)
            continue;
        matched.emplace_back(&p, r);
        used.insert(r);
    }
    const auto configName = [](FrameworkRecipe r) { return identifier(frameworkRecipeName(r)); };
    y << "configs:";
    if (used.empty())
        y << " {}";
    y << "\n";
    for (FrameworkRecipe r : used) {
        y << "  " << configName(r) << ":\n"
          << "    transformer_engine_config_type: \"TEQuantizationParams\"\n"
          << "    training_recipe:";
        switch (r) {
        case FrameworkRecipe::HighPrecision:
            y << " {}\n";
            continue;
        case FrameworkRecipe::Fp8Current:
            y << "\n      fp8_quantization_recipe: \"tensorwise\"\n      fp8_format: \"hybrid\"\n";
            break;
        case FrameworkRecipe::Fp8Block:
            y << "\n      fp8_quantization_recipe: \"blockwise\"\n      fp8_format: \"e4m3\"\n";
            break;
        case FrameworkRecipe::Mxfp8:
            y << "\n      fp8_quantization_recipe: \"mxfp8\"\n      fp8_format: \"e4m3\"\n";
            break;
        case FrameworkRecipe::Nvfp4:
            y << "\n      fp4_quantization_recipe: \"nvfp4\"\n";
            break;
        case FrameworkRecipe::Fp8Delayed:
            break; // refused above
        }
        y << "      override_nonquantized_autocast: true\n";
    }
    y << "matchers:";
    if (matched.empty())
        y << " {}";
    y << "\n";
    for (std::size_t i = 0; i < matched.size(); ++i)
        y << "  m" << i << "_" << identifier(matched[i].first->module) << ":\n"
          << "    config: \"" << configName(matched[i].second) << "\"\n"
          << "    type: \"glob\"\n"
          << "    pattern: " << quotedName(globQuoted(matched[i].first->module)) << "\n"
          << "    enabled: true\n";
    writeUnexpressed(y, unexpressed);
    return y.str();
}

std::string adviceTorchao(const RunAdvice& advice) {
    std::ostringstream p;
    header(p, advice,
           "torchao as read on 2026-12: torchao.float8.convert_to_float8_training (tensorwise) is "
           "stable; the MXFP8,\n# NVFP4 and blockwise-FP8 training configs are prototypes whose "
           "import paths have moved between releases.");
    const std::vector<ModulePlan> plans = modulePlans(advice);
    std::vector<std::string> unexpressed;
    std::vector<std::pair<std::string, FrameworkRecipe>> converted;
    for (const ModulePlan& m : plans)
        if (const FrameworkRecipe r = wholeModuleRecipe(
                m,
                "torchao converts a module's three GEMMs together, so it stays in high precision",
                "torchao removed delayed scaling, so it stays in high precision", unexpressed);
            r != FrameworkRecipe::HighPrecision)
            converted.emplace_back(m.module, r);
    p << "# Each module converted, with the recipe it was advised (the modules not named stay in "
         "high precision):\nMODULE_RECIPES = {\n";
    for (const auto& [module, r] : converted)
        p << "    " << quotedName(module) << ": \"" << frameworkRecipeName(r) << "\",\n";
    p << "}\n";
    writeUnexpressed(p, unexpressed);
    p << "# The modules under torchao's tensorwise float8 recipe (fp8-current):\n"
         "FLOAT8_MODULES = {fqn for fqn, recipe in MODULE_RECIPES.items() "
         "if recipe == \"fp8-current\"}\n\n\n"
         "def module_filter_fn(module, fqn):\n"
         "    \"\"\"torchao.float8.convert_to_float8_training(model, "
         "module_filter_fn=module_filter_fn)\"\"\"\n"
         "    return fqn in FLOAT8_MODULES\n\n\n"
         "def filter_for(recipe):\n"
         "    \"\"\"A filter_fn(module, fqn) for torchao.quantization.quantize_: the linear "
         "modules advised `recipe`.\"\"\"\n"
         "    import torch\n\n"
         "    def filter_fn(module, fqn):\n"
         "        return isinstance(module, torch.nn.Linear) and MODULE_RECIPES.get(fqn) == "
         "recipe\n\n"
         "    return filter_fn\n\n\n"
         "def apply_advice(model):\n"
         "    \"\"\"Converts each advised module with torchao's training config for its "
         "recipe; returns the model.\"\"\"\n"
         "    recipes = set(MODULE_RECIPES.values())\n"
         "    if \"fp8-current\" in recipes:\n"
         "        from torchao.float8 import Float8LinearConfig, convert_to_float8_training\n"
         "        convert_to_float8_training(\n"
         "            model, config=Float8LinearConfig.from_recipe_name(\"tensorwise\"),\n"
         "            module_filter_fn=module_filter_fn)\n"
         "    if recipes & {\"mxfp8\", \"nvfp4\", \"fp8-block\"}:\n"
         "        from torchao.quantization import quantize_\n"
         "    if \"mxfp8\" in recipes:  # E8M0 scales rounded up (RCEIL), as TE's MXFP8 cast\n"
         "        from torchao.prototype.moe_training.config import (MXFP8TrainingOpConfig,\n"
         "                                                           MXFP8TrainingRecipe)\n"
         "        quantize_(model, MXFP8TrainingOpConfig.from_recipe(MXFP8TrainingRecipe."
         "MXFP8_RCEIL),\n"
         "                  filter_fn=filter_for(\"mxfp8\"))\n"
         "    if \"nvfp4\" in recipes:\n"
         "        from torchao.prototype.moe_training.nvfp4_training.nvfp4_training import (\n"
         "            NVFP4TrainingConfig)\n"
         "        quantize_(model, NVFP4TrainingConfig(), filter_fn=filter_for(\"nvfp4\"))\n"
         "    if \"fp8-block\" in recipes:  # torchao's blockwise linear takes no bias and "
         "multiples of 128\n"
         "        from torchao.prototype.blockwise_fp8_training.linear import "
         "Float8BlockwiseLinearConfig\n"
         "        quantize_(model, Float8BlockwiseLinearConfig(), "
         "filter_fn=filter_for(\"fp8-block\"))\n"
         "    return model\n";
    return p.str();
}

} // namespace plab
