// The advice as something that runs: a recipe in the run config's schema (train --config, the
// app's recipe dock, precision_lab.torch.emulate), Transformer Engine's debug-API YAML, and a
// torchao module_filter_fn.
#pragma once

#include "advise/recipe_advice.h"

#include <nlohmann/json.hpp>

#include <string>

namespace plab {

// {"recipe": {role: format, ..., "overrides": [...]}, "scaling": {...}} (for a trained run, its
// whole config.json with these two in place of its own, so that train --config retrains the same
// model under the advice): each role's base format
// is the one most modules were advised, the others per-layer overrides ({"modules": NAME} for a
// watched or emulated run, {"stage": N} for a trained one). A block format becomes its element
// format under the block scaling policy (nvfp4 -> fp4-e2m1 with scaling nvfp4). Element formats
// keep the run's loss scale (static; dynamic when it varied). Throws std::invalid_argument when
// the advice needs two block policies (one recipe scales with one).
nlohmann::json adviceRecipe(const RunAdvice& advice);

// Transformer Engine's precision debug tools (nvidia-dlframework-inspect config, TE 2.4 and
// later): one section per layer with a product that must stay in high precision, its
// DisableFP8GEMM feature naming those GEMMs (fprop, dgrad, wgrad). A GEMM may run narrow when
// both its operands were advised a format of 8 bits or fewer.
std::string adviceTeYaml(const RunAdvice& advice);

// Python: the set of modules whose three products may all run narrow (8 bits or fewer) and a
// module_filter_fn(module, fqn) for torchao.float8.convert_to_float8_training.
std::string adviceTorchao(const RunAdvice& advice);

// "recipe", "te-yaml" or "torchao"; std::invalid_argument naming the kind otherwise.
std::string adviceExport(const RunAdvice& advice, const std::string& kind);

} // namespace plab
