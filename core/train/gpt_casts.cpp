#include "train/gpt_casts.h"

#include "train/precision_recipe.h"

namespace plab {
namespace {

TensorRole roleOf(transformer::GptOperand operand) {
    switch (operand) {
    case transformer::GptOperand::Weights:
        return TensorRole::Weights;
    case transformer::GptOperand::Activations:
        return TensorRole::Activations;
    case transformer::GptOperand::ActivationGradients:
        return TensorRole::ActivationGradients;
    case transformer::GptOperand::WeightGradients:
        break;
    }
    return TensorRole::WeightGradients;
}

bool isBlockPolicy(ScalingPolicy p) {
    return p == ScalingPolicy::Mx || p == ScalingPolicy::Nvfp4 || p == ScalingPolicy::Blockwise;
}

} // namespace

GptRecipeCasts::GptRecipeCasts(const TrainConfig& config, int stageCount)
    : m_config(config), m_stageCount(stageCount) {
    if (config.scalingPolicy == ScalingPolicy::PerLayer)
        throw ConfigError("config.scaling.policy: per-layer scaling does not run on the GPT yet "
                          "(expected none, static, dynamic, enhanced, amax-current, "
                          "amax-delayed, mx, nvfp4 or blockwise)");
    m_casts.resize(static_cast<std::size_t>(stageCount) * 4);
    for (int stage = 0; stage < stageCount; ++stage)
        for (int o = 0; o < 4; ++o) {
            QuantConfig q = config.recipe.config(stage, stageCount,
                                                 roleOf(static_cast<transformer::GptOperand>(o)));
            // Scaled tensors saturate, as in the trainer (and MX, Transformer Engine): a block or
            // tensor scale fills the range, and a stale (delayed) amax or a block's largest
            // element past the element max must clip, not become Inf.
            const bool scaled = isBlockPolicy(config.scalingPolicy) ||
                                config.scalingPolicy == ScalingPolicy::AmaxCurrent ||
                                config.scalingPolicy == ScalingPolicy::AmaxDelayed;
            if (scaled && o != 3)
                q.overflow = Overflow::Saturate;
            Cast& c = m_casts[static_cast<std::size_t>(stage * 4 + o)];
            c.quantizer = std::make_unique<Quantizer>(q);
            m_any = m_any || !c.quantizer->isIdentity();
        }
}

void GptRecipeCasts::beginStep(std::int64_t step) {
    m_step = step;
    m_call = 0;
}

GptRecipeCasts::Cast& GptRecipeCasts::slot(int stage, transformer::GptOperand operand) {
    return m_casts[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))];
}

const QuantStats& GptRecipeCasts::stats(int stage, transformer::GptOperand operand) const {
    return m_casts[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))].stats;
}

const BlockStats& GptRecipeCasts::blockStats(int stage, transformer::GptOperand operand) const {
    return m_casts[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))].blocks;
}

double GptRecipeCasts::tensorScale(int stage, transformer::GptOperand operand) const {
    return m_casts[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))].tensorScale;
}

void GptRecipeCasts::resetStats() {
    for (Cast& c : m_casts) {
        c.stats = QuantStats{};
        c.blocks = BlockStats{};
    }
}

void GptRecipeCasts::cast(int stage, transformer::GptOperand operand, float* values,
                          std::size_t count) {
    Cast& c = slot(stage, operand);
    const std::uint64_t call = m_call++;
    const bool counting = m_counting && !m_evaluation;
    if (c.quantizer->isIdentity() && !counting)
        return;
    QuantizeOptions options;
    options.seed = m_config.seed;
    options.stream = (static_cast<std::uint64_t>(m_step) << 20) ^ call;
    const std::span<float> v(values, count);
    QuantStats* stats = counting ? &c.stats : nullptr;
    const bool gradient = operand == transformer::GptOperand::WeightGradients;
    // Weight gradients are cast plainly (the trainer scales the three GEMM inputs only).
    if (!gradient && isBlockPolicy(m_config.scalingPolicy) &&
        c.quantizer->config().format.exponentBits < 8) {
        const BlockQuantizeResult r =
            quantizeBlocks(*c.quantizer, *m_config.blockScheme(), v, v, {}, stats,
                           counting ? &c.blocks : nullptr, options, m_blockInfo);
        c.tensorScale = r.tensorScale;
        return;
    }
    if (!gradient && (m_config.scalingPolicy == ScalingPolicy::AmaxCurrent ||
                      m_config.scalingPolicy == ScalingPolicy::AmaxDelayed)) {
        const double amax = amaxOf(v);
        double scaleAmax = amax;
        if (m_config.scalingPolicy == ScalingPolicy::AmaxDelayed) {
            AmaxHistory& h =
                m_histories.try_emplace(call, static_cast<std::size_t>(m_config.amaxHistory))
                    .first->second;
            scaleAmax = h.empty() ? amax : (m_config.amaxMostRecent ? h.mostRecent() : h.max());
            if (!m_evaluation)
                h.push(amax);
        }
        c.tensorScale = amaxScale(scaleAmax, c.quantizer->config().format, m_config.amaxMargin);
        quantizeScaled(*c.quantizer, v, v, c.tensorScale, stats, options);
        return;
    }
    c.quantizer->quantize(v, v, stats, options);
}

} // namespace plab
