// The precision recipe on the GPT: a train config's per-role formats, roundings, per-stage and
// per-kind overrides (precision_recipe.h: attention, mlp, head; the norm, softmax and embedding
// sites), with its per-tensor scaling (amax current or delayed, or blocks), applied to the
// operands of every matrix product of transformer::GptModel through the trainer's own
// RecipeCaster, each cast counted per stage and role (a site's casts in its stage's role). Loss
// scaling (static, dynamic, enhanced) is GptRun's.
//
// Blocks run along each operand's rows (a product's reduction width: C, 3C, 4C, or T for the
// attention probabilities and score gradients); weights are (outputs, inputs) matrices, in
// square tiles where the recipe says (weight_tiles). Under a block recipe with `hadamard`, a
// product's weight gradient comes from its operands transformed and cast along the rows
// (GptModel::productBackward). The narrow accumulator of a recipe (recipe.accumulation) is not
// emulated on the GPT: its products sum in FP32.
#pragma once

#include "gpt/gpt_model.h"
#include "numerics/quant_stats.h"
#include "recipe/casting_settings.h"
#include "recipe/recipe_caster.h"

#include <array>
#include <vector>

namespace plab {

class GptRecipeCasts final : public transformer::GptCasts {
public:
    // Casts on the model's engine (model.ops()).
    GptRecipeCasts(const CastingSettings& config, const transformer::GptModel& model);

    // Each step's casts draw their random words from (step, stage, role, call) streams.
    void beginStep(std::int64_t step);
    void cast(int stage, TensorRole operand, transformer::GptSite site, Tensor values,
              const BlockLayout& layout) override;
    bool hadamard(int stage) const override;
    void castAlongRows(int stage, TensorRole operand, transformer::GptSite site, Tensor raw,
                       std::size_t rows, std::size_t width, Tensor into, Tensor work) override;
    // Per-layer scaling (policy per-layer): Zhao et al.'s rule applied to the gradient itself
    // (the identity as the weights, as the trainer does at the loss), for the format the
    // stage's activation gradients are cast to; 1 under other policies.
    double gradientScale(int stage, Tensor gradient, double cumulative) override;

    // The roles a product's operands have (Weights .. WeightGradients, TensorRole's first four):
    // what the GPT casts, counted by stage.
    static constexpr std::size_t kOperandRoles = 4;
    // Everything counted since the last resetStats, by stage and role (Weights ..
    // WeightGradients); the block statistics of block-scaled casts; the last tensor scale an
    // amax policy or NVFP4 (its s_enc) used (1: none).
    const QuantStats& stats(int stage, TensorRole operand) const;
    const BlockStats& blockStats(int stage, TensorRole operand) const;
    double tensorScale(int stage, TensorRole operand) const;
    // The per-tensor scaling that cast the operand where a product reads it (its plain site).
    std::string_view scaling(int stage, TensorRole operand) const;
    void resetStats();
    // Delayed scaling's histories, for a checkpoint (RecipeCaster::amaxHistories).
    std::vector<double> amaxHistories() const { return m_caster.amaxHistories(); }
    void restoreAmaxHistories(const std::vector<double>& saved) {
        m_caster.restoreAmaxHistories(saved);
    }
    // The caster behind the casts: the GPT's update casts its master weights and optimiser state
    // with its quantisers and random streams too.
    const RecipeCaster& caster() const { return m_caster; }
    // Whether any cast changes values (else, with counting off, the products need no casts).
    bool castsAnything() const { return m_any; }
    // Off: casts are not counted (evaluation passes). On: FP32 casts are counted too (what the
    // values would look like in the format is shown for an FP32 run as well).
    void setCounting(bool on) { m_counting = on; }
    bool counting() const { return m_counting; }
    // On: an evaluation or sampling pass: nothing counted, and delayed scaling reads its amax
    // histories without extending them (as the trainer's evaluation leaves them alone).
    void setEvaluation(bool on);
    bool evaluation() const { return m_evaluation; }

private:
    struct Counted {
        QuantStats stats;
        BlockStats blocks;
        double tensorScale = 1.0;
        std::string_view scaling;
    };
    std::size_t index(int stage, TensorRole operand) const; // out_of_range for any other role
    Counted& counted(int stage, TensorRole operand);

    CastingSettings m_config;
    TensorOps& m_ops;
    int m_stageCount;
    RecipeCaster m_caster;
    std::vector<Counted> m_counted; // index(stage, operand)
    bool m_any = false;
    bool m_counting = true;
    bool m_evaluation = false;
};

} // namespace plab
