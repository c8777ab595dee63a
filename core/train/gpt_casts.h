// The precision recipe on the GPT: a train config's per-role formats, roundings and per-stage
// overrides, with its per-tensor scaling (amax current or delayed, or blocks), applied to the
// operands of every matrix product of transformer::GptModel, each cast counted per stage and
// role. Loss scaling (static, dynamic, enhanced) is GptRun's. Until the GPT runs in the Trainer,
// this is how a recipe meets it (bench gpt --preset).
//
// Blocks run along the flattened tensor: with the default GPT every row length (128, 384, 512 and
// the context 64) is a multiple of 16 and 32, so MX and NVFP4 blocks lie along rows; blockwise's
// 128 spans two attention rows, and weights are not tiled.
#pragma once

#include "nn/transformer/gpt_model.h"
#include "numerics/block_quantizer.h"
#include "numerics/quant_stats.h"
#include "numerics/quantizer.h"
#include "train/tensor_scaling.h"
#include "train/train_config.h"

#include <map>
#include <memory>
#include <vector>

namespace plab {

class GptRecipeCasts final : public transformer::GptCasts {
public:
    // Throws ConfigError for a scaling policy the GPT does not run yet (per-layer).
    GptRecipeCasts(const TrainConfig& config, int stageCount);

    // Each step's casts draw their random words from (step, call) streams.
    void beginStep(std::int64_t step);
    void cast(int stage, transformer::GptOperand operand, float* values,
              std::size_t count) override;

    // Everything counted so far, by stage and role (Weights .. WeightGradients).
    const QuantStats& stats(int stage, transformer::GptOperand operand) const;
    bool castsAnything() const { return m_any; }
    // Off: casts are not counted (evaluation passes).
    void setCounting(bool on) { m_counting = on; }

private:
    struct Cast {
        std::unique_ptr<Quantizer> quantizer;
        QuantStats stats;
    };
    Cast& slot(int stage, transformer::GptOperand operand);

    TrainConfig m_config;
    int m_stageCount;
    std::vector<Cast> m_casts;                        // stage * 4 + operand
    std::map<std::uint64_t, AmaxHistory> m_histories; // delayed scaling: by (step call order)
    std::int64_t m_step = 0;
    std::uint64_t m_call = 0;
    bool m_any = false;
    bool m_counting = true;
    std::vector<BlockInfo> m_blockInfo;
};

} // namespace plab
