// Each advised module's framework recipe, from its product inputs' advice.
#include "advise/module_plans.h"

#include "numerics/block_scheme.h"
#include "numerics/format_spec.h"
#include "train/recipe_candidates.h"

#include <array>
#include <map>

namespace plab {
namespace {

struct Standing {
    FrameworkRecipe recipe;
    std::string note;
};

// Each framework recipe: the candidate's name (train/recipe_candidates.h) and Transformer
// Engine's recipe class (transformer_engine.common.recipe).
struct RecipeNames {
    FrameworkRecipe recipe;
    const char* name;
    const char* teClass;
};
constexpr std::array<RecipeNames, 6> kRecipeNames = {{
    {FrameworkRecipe::HighPrecision, "bf16", "no recipe (high precision)"},
    {FrameworkRecipe::Fp8Current, "fp8-current", "Float8CurrentScaling(fp8_format=Format.HYBRID)"},
    {FrameworkRecipe::Fp8Delayed, "fp8-delayed",
     "DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=1024, amax_compute_algo=\"max\")"},
    {FrameworkRecipe::Fp8Block, "fp8-block", "Float8BlockScaling()"},
    {FrameworkRecipe::Mxfp8, "mxfp8", "MXFP8BlockScaling()"},
    {FrameworkRecipe::Nvfp4, "nvfp4", "NVFP4BlockScaling()"},
}};

const RecipeNames& namesOf(FrameworkRecipe recipe) {
    for (const RecipeNames& n : kRecipeNames)
        if (n.recipe == recipe)
            return n;
    return kRecipeNames.front();
}

// The framework recipe that casts a ladder entry as it was judged, or the nearest one with why.
Standing standingOf(const std::string& entry) {
    for (const RecipeNames& n : kRecipeNames)
        if (n.recipe != FrameworkRecipe::HighPrecision && entry == n.name)
            return {n.recipe, {}};
    if (const BlockFormat* block = findBlockFormat(entry)) {
        const BlockScheme& s = block->scheme;
        const std::string& element = block->element.name;
        const std::string alongRows = entry + " judged in blocks along rows (the frameworks tile "
                                              "weights and cast columns for the backward GEMMs)";
        if (s.kind == BlockScaleKind::Nvfp4 && element == "fp4-e2m1" && s.blockSize == 16)
            return {FrameworkRecipe::Nvfp4, alongRows};
        if (s.kind == BlockScaleKind::Mx && element == "fp8-e4m3" && s.blockSize == 32)
            return {FrameworkRecipe::Mxfp8, alongRows};
        if (s.kind == BlockScaleKind::Fp32 && element == "fp8-e4m3" && s.blockSize == 128)
            return {FrameworkRecipe::Fp8Block, alongRows};
        return {FrameworkRecipe::HighPrecision,
                entry + ": no framework recipe casts these blocks; high precision there"};
    }
    const FormatSpec format = parseFormat(entry);
    if (format.totalBits() == 8 && (format.exponentBits == 4 || format.exponentBits == 5))
        return {FrameworkRecipe::Fp8Current,
                entry + " judged unscaled; the frameworks scale each tensor to its amax "
                        "(fp8-current), which keeps more of it than the loss scale alone"};
    return {FrameworkRecipe::HighPrecision,
            entry + " judged unscaled: no framework recipe casts it so; high precision there"};
}

} // namespace

const char* frameworkRecipeName(FrameworkRecipe recipe) {
    return namesOf(recipe).name;
}

const char* teRecipeClass(FrameworkRecipe recipe) {
    return namesOf(recipe).teClass;
}

std::vector<ModulePlan> modulePlans(const RunAdvice& advice) {
    std::vector<ModulePlan> plans;
    std::map<std::size_t, std::size_t> at; // stage -> plan
    for (const GemmAdvice& g : advice.gemms) {
        auto [it, added] = at.try_emplace(g.stage, plans.size());
        if (added) {
            ModulePlan p;
            p.stage = g.stage;
            p.module = g.module;
            p.lookup =
                g.stage < advice.moduleTypes.size() && advice.moduleTypes[g.stage] == "Embedding";
            plans.push_back(p);
        }
        ModulePlan& p = plans[it->second];
        const std::size_t i = g.gemm == "forward" ? 0 : g.gemm == "data_gradient" ? 1 : 2;
        p.gemms[i] = &g;
        p.narrow[i] = !g.format.empty() && ladderElementBits(g.format) <= 8;
    }
    for (ModulePlan& p : plans) {
        // The product inputs' narrow entry: at most one scaled entry per layer (the advisor
        // settles it); a plain narrow format where none is scaled.
        for (const RoleAdvice& r : advice.roles) {
            if (r.stage != p.stage || !isProductInput(r.role) || r.chosen.empty() ||
                r.chosen == "fp32" || ladderElementBits(r.chosen) > 8)
                continue;
            if (p.advised.empty() || (ladderCastsScaled(r.chosen) && !ladderCastsScaled(p.advised)))
                p.advised = r.chosen;
        }
        if (p.lookup) {
            p.narrow = {};
            p.note = "an embedding: a lookup, not a GEMM, which the frameworks keep in high "
                     "precision";
            continue;
        }
        if (p.advised.empty() || p.noneNarrow()) {
            p.narrow = {};
            continue;
        }
        const Standing s = standingOf(p.advised);
        p.recipe = s.recipe;
        p.note = s.note;
        if (p.recipe == FrameworkRecipe::HighPrecision)
            p.narrow = {};
    }
    return plans;
}

} // namespace plab
