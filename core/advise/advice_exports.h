// The advice as something that runs: a recipe in the run config's schema (train --config, the
// app's recipe dock, precision_lab.torch.emulate), and the frameworks' own files: Transformer
// Engine's debug-tools YAML, Megatron-LM's precision config, a torchao script. Each framework
// file names the API it targets and lists as comments what it cannot express.
#pragma once

#include "advise/recipe_advice.h"

#include <nlohmann/json.hpp>

#include <string>

namespace plab {

// {"recipe": {role: format, ..., "overrides": [...]}, "scaling": {...}} (for a trained run, its
// whole config.json with these two in place of its own, so that train --config retrains the same
// model under the advice): each role's base format is the one most modules were advised, the
// others per-layer overrides ({"modules": NAME} for a watched or emulated run, {"stage": N} for a
// trained one). A scaled entry (a recipe candidate, a block format) becomes the layer's own
// scaling with its element formats (nvfp4 -> fp4-e2m1 under the nvfp4 policy). Element formats
// keep the run's loss scale (static; dynamic when it varied). Throws std::invalid_argument when
// a layer would need two scaling policies (advice from adviseRun never does: it settles one per
// layer).
nlohmann::json adviceRecipe(const RunAdvice& advice);

// Transformer Engine's precision debug tools (nvidia-dlframework-inspect config): one section
// per layer with a GEMM that must stay in high precision, DisableQuantizationGEMM naming those
// GEMMs (fprop, dgrad, wgrad), or DisableQuantizationLayer when none may run narrow; a comment
// names each module's recipe (the YAML cannot choose one). A GEMM may run narrow when both its
// operands were advised 8 bits or fewer and a TE recipe stands for the module's advice. Fp8:
// the names of TE 2.4 to 2.12 (DisableFP8GEMM, DisableFP8Layer).
enum class TeFeatureNames { Quantization, Fp8 };
std::string adviceTeYaml(const RunAdvice& advice, TeFeatureNames names);

// Megatron-LM's --te-precision-config-file: one TEQuantizationParams config per recipe used and
// one glob matcher per module. A module whose three GEMMs may not all run narrow, or advised
// delayed scaling (which Megatron's per-module config refuses), takes bf16, said in a comment.
std::string adviceMegatron(const RunAdvice& advice);

// Python: MODULE_RECIPES (module -> recipe, for the modules whose three GEMMs may all run in it),
// FLOAT8_MODULES and module_filter_fn(module, fqn) for convert_to_float8_training (tensorwise),
// filter_for(recipe) for quantize_, and apply_advice(model), which converts each module with
// torchao's config for its recipe (imports inside, so the file loads without torchao).
std::string adviceTorchao(const RunAdvice& advice);

inline constexpr const char* kAdviceExportKinds =
    "recipe, te-yaml, te-yaml-fp8, megatron or torchao";
// One of kAdviceExportKinds; std::invalid_argument naming the kind otherwise.
std::string adviceExport(const RunAdvice& advice, const std::string& kind);
// The same refusal before anything is read (advise --export checks it before the record).
void checkAdviceExportKind(const std::string& kind);

} // namespace plab
