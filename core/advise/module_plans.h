// What a framework runs each advised module under: the one recipe its product inputs were
// advised (a layer scales under one policy, recipe_advice.h), the framework recipe that stands
// for it, and which of its three GEMMs may run narrow. The exports for Transformer Engine,
// Megatron-LM and torchao write these plans in their own files.
#pragma once

#include "advise/recipe_advice.h"

#include <array>
#include <string>
#include <vector>

namespace plab {

// The frameworks' recipes the advice can name (docs/advise.md, "Recipe candidates").
enum class FrameworkRecipe { HighPrecision, Fp8Current, Fp8Delayed, Fp8Block, Mxfp8, Nvfp4 };

// "bf16", "fp8-current", "fp8-delayed", "fp8-block", "mxfp8", "nvfp4": the candidates' names.
const char* frameworkRecipeName(FrameworkRecipe recipe);
// Transformer Engine's recipe class for it, as Python ("MXFP8BlockScaling()").
const char* teRecipeClass(FrameworkRecipe recipe);

struct ModulePlan {
    std::size_t stage = 0;
    std::string module; // the record's name of the module (a recipe's name for emulate)
    // The ladder entry its narrow product inputs took (a candidate, a block or plain format of 8
    // bits or fewer); empty when none runs narrow.
    std::string advised;
    FrameworkRecipe recipe = FrameworkRecipe::HighPrecision; // what stands for `advised`
    // Why `advised` is cast otherwise in the frameworks, or has no recipe there; empty: as judged.
    std::string note;
    // An embedding: a lookup, not a GEMM, which the frameworks keep in high precision (emulate
    // casts its weights); the framework files name it in a comment only.
    bool lookup = false;
    // fprop, dgrad, wgrad: whether the GEMM may run in the recipe (both operands in 8 bits or
    // fewer), and the GEMM's advice (the wider operand's format and why).
    std::array<bool, 3> narrow{};
    std::array<const GemmAdvice*, 3> gemms{};
    bool allNarrow() const { return narrow[0] && narrow[1] && narrow[2]; }
    bool noneNarrow() const { return !narrow[0] && !narrow[1] && !narrow[2]; }
};

// TE's names of the three GEMMs, in ModulePlan's order.
inline constexpr std::array<const char*, 3> kTeGemms = {"fprop", "dgrad", "wgrad"};

// One plan per module with products (advice.gemms), in the record's order of modules.
std::vector<ModulePlan> modulePlans(const RunAdvice& advice);

} // namespace plab
