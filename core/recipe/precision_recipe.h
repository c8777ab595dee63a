// PrecisionRecipe: the format, rounding and overflow mode of every tensor role, with per-stage
// overrides (e.g. first and last layer kept in FP16, as in Mellempudi et al.) and the optional
// emulation of a narrow matrix-product accumulator.
#pragma once

#include "numerics/rounding.h"
#include "numerics/tensor_role.h"
#include "recipe/tensor_scaling.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

// Overrides by kind (transformers): a stage kind (every stage of that kind, all roles) or a
// site within stages (certain operands of every stage, certain roles), so that a recipe can keep
// norms, softmax or the head wide as published FP8 and FP4 recipes do.
struct OverrideKind {
    std::string_view name;
    bool site;                          // a site (operands within stages) or a stage kind
    std::array<bool, kRoleCount> roles; // the roles it may set
    std::string_view what;              // for the README and error messages
};
inline constexpr std::array kOverrideKinds = {
    OverrideKind{"attention",
                 false,
                 {true, true, true, true, true, true},
                 "the attention stages (QKV and output projections, q.k^T and att.v)"},
    OverrideKind{"mlp", false, {true, true, true, true, true, true}, "the MLP stages"},
    OverrideKind{"head", false, {true, true, true, true, true, true}, "the head (logits)"},
    OverrideKind{"norm",
                 true,
                 {false, true, false, false, false, false},
                 "LayerNorm outputs where a product reads them (activations)"},
    OverrideKind{"softmax",
                 true,
                 {false, true, true, false, false, false},
                 "attention probabilities (activations) and score gradients "
                 "(activation_gradients)"},
    OverrideKind{"embedding",
                 true,
                 {true, false, false, false, false, false},
                 "the token and position tables as the lookup reads them (weights; FP32 "
                 "unless set)"},
};
const OverrideKind* findOverrideKind(std::string_view name);

struct PrecisionRecipe {
    std::array<QuantConfig, kRoleCount> roles; // defaults: fp32, nearest-even
    // Keyed by stage index; -1 means the last stage.
    std::map<int, std::array<std::optional<QuantConfig>, kRoleCount>> stageOverrides;
    // Keyed by a kOverrideKinds name. Precedence: a site's, then a stage index's, then the stage
    // kind's, then the role's.
    std::map<std::string, std::array<std::optional<QuantConfig>, kRoleCount>, std::less<>>
        kindOverrides;
    // A layer's own per-tensor scaling (recipe/tensor_scaling.h), by stage index (-1: the last)
    // and by stage kind; a stage without one takes the run's (the scaling.* of an amax or block
    // policy, else none). Precedence as for formats: the index's, then the kind's.
    std::map<int, TensorScaling> stageScaling;
    std::map<std::string, TensorScaling, std::less<>> kindScaling;
    std::optional<QuantConfig> accumulation; // none: FP32 accumulation
    int accumulateEvery = 0;                 // products between roundings of the running sum
    // Promotion (DeepSeek-V3): chunks of this many products summed in the accumulation format,
    // rounded after every addition, each chunk's sum added to an FP32 total. 0: off (`every`).
    int promoteEvery = 0;

    PrecisionRecipe();
    // stageKind, site: a GPT stage's kind ("attention") and the site of the cast ("softmax";
    // empty: a plain product operand).
    const QuantConfig& config(int stage, int stageCount, TensorRole role,
                              std::string_view stageKind = {}, std::string_view site = {}) const;
    // config() for a stage of a model with these stage names, its kind from its name (the part
    // after the last '.': "block0.attention" -> attention, "head" -> head): what a view or the
    // record shows as the stage's format for a role.
    const QuantConfig& stageConfig(int stage, const std::vector<std::string>& stageNames,
                                   TensorRole role) const;
    // The scaling a stage's override gives it, or null where the stage takes the run's.
    const TensorScaling* scalingOverride(int stage, int stageCount,
                                         std::string_view stageKind = {}) const;
    // scalingOverride() for a stage of a model with these stage names (kinds as stageConfig).
    const TensorScaling* stageScalingOverride(int stage,
                                              const std::vector<std::string>& stageNames) const;
    // The override a site sets for a role, if any.
    const std::optional<QuantConfig>& siteConfig(std::string_view site, TensorRole role) const;
    bool operator==(const PrecisionRecipe&) const = default;
};

} // namespace plab
