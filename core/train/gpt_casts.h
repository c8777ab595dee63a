// The precision recipe on the GPT: a train config's per-role formats, roundings, per-stage and
// per-kind overrides (precision_recipe.h: attention, mlp, head; the norm, softmax and embedding
// sites), with its per-tensor scaling (amax current or delayed, or blocks), applied to the
// operands of every matrix product of transformer::GptModel, each cast counted per stage and
// role (a site's casts in its stage's role). Loss scaling (static, dynamic, enhanced) is
// GptRun's.
//
// Blocks run along the flattened tensor: with the default GPT every row length (128, 384, 512 and
// the context 64) is a multiple of 16 and 32, so MX and NVFP4 blocks lie along rows; blockwise's
// 128 spans two attention rows, and weights are not tiled.
#pragma once

#include "gpt/gpt_model.h"
#include "numerics/amax_scaling.h"
#include "numerics/block_quantizer.h"
#include "numerics/quant_stats.h"
#include "numerics/quantizer.h"
#include "train/train_config.h"

#include <map>
#include <memory>
#include <vector>

namespace plab {

class GptRecipeCasts final : public transformer::GptCasts {
public:
    // Casts on the model's engine (model.ops()).
    GptRecipeCasts(const TrainConfig& config, const transformer::GptModel& model);

    // Each step's casts draw their random words from (step, call) streams.
    void beginStep(std::int64_t step);
    void cast(int stage, transformer::GptOperand operand, transformer::GptSite site,
              Tensor values) override;
    // Per-layer scaling (policy per-layer): Zhao et al.'s rule applied to the gradient itself
    // (the identity as the weights, as the trainer does at the loss), for the format the
    // stage's activation gradients are cast to; 1 under other policies.
    double gradientScale(int stage, Tensor gradient, double cumulative) override;

    // Everything counted since the last resetStats, by stage and role (Weights ..
    // WeightGradients); the block statistics of block-scaled casts; the last tensor scale an
    // amax policy or NVFP4 (its s_enc) used (1: none).
    const QuantStats& stats(int stage, transformer::GptOperand operand) const;
    const BlockStats& blockStats(int stage, transformer::GptOperand operand) const;
    double tensorScale(int stage, transformer::GptOperand operand) const;
    void resetStats();
    // Whether any cast changes values (else, with counting off, the products need no casts).
    bool castsAnything() const { return m_any; }
    // Off: casts are not counted (evaluation passes). On: FP32 casts are counted too (what the
    // values would look like in the format is shown for an FP32 run as well).
    void setCounting(bool on) { m_counting = on; }
    bool counting() const { return m_counting; }
    // On: an evaluation or sampling pass: nothing counted, and delayed scaling reads its amax
    // histories without extending them (as the trainer's evaluation leaves them alone).
    void setEvaluation(bool on) { m_evaluation = on; }
    bool evaluation() const { return m_evaluation; }

private:
    struct Counted {
        QuantStats stats;
        BlockStats blocks;
        double tensorScale = 1.0;
    };
    // (stage, site, operand) -> its quantiser (null: not cast, an embedding no recipe sets).
    const Quantizer* quantizer(int stage, transformer::GptSite site,
                               transformer::GptOperand operand) const;
    Counted& counted(int stage, transformer::GptOperand operand);

    TrainConfig m_config;
    TensorOps& m_ops;
    int m_stageCount;
    std::vector<std::unique_ptr<Quantizer>> m_quantizers; // (stage * sites + site) * 4 + operand
    std::vector<Counted> m_counted;                       // stage * 4 + operand
    std::map<std::uint64_t, AmaxHistory> m_histories;     // delayed scaling: by call order
    std::int64_t m_step = 0;
    std::uint64_t m_call = 0;
    bool m_any = false;
    bool m_counting = true;
    bool m_evaluation = false;
};

} // namespace plab
