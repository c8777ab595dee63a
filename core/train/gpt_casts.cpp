#include "train/gpt_casts.h"

#include "train/per_layer_scaling.h"
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

} // namespace

GptRecipeCasts::GptRecipeCasts(const TrainConfig& config, const transformer::GptModel& model)
    : m_config(config), m_ops(model.ops()), m_stageCount(model.stageCount()) {
    // Scaled tensors saturate, as in the trainer (and MX, Transformer Engine): a block or tensor
    // scale fills the range, and a stale (delayed) amax or a block's largest element past the
    // element max must clip, not become Inf.
    const bool scaled = isBlockScaling(config.scalingPolicy) || isAmaxScaling(config.scalingPolicy);
    m_counted.resize(static_cast<std::size_t>(m_stageCount) * 4);
    m_quantizers.resize(static_cast<std::size_t>(m_stageCount) * transformer::kGptSiteCount * 4);
    for (int stage = 0; stage < m_stageCount; ++stage) {
        const std::string kind = model.stageKind(stage);
        for (int site = 0; site < transformer::kGptSiteCount; ++site)
            for (int o = 0; o < 4; ++o) {
                const auto s = static_cast<transformer::GptSite>(site);
                const TensorRole role = roleOf(static_cast<transformer::GptOperand>(o));
                const char* siteName = transformer::siteKind(s);
                // The embedding tables are FP32 unless a recipe's embedding kind sets them.
                if (s == transformer::GptSite::Embedding &&
                    !config.recipe.siteConfig(siteName, role))
                    continue;
                QuantConfig q = config.recipe.config(stage, m_stageCount, role, kind, siteName);
                if (scaled && o != 3)
                    q.overflow = Overflow::Saturate;
                auto& slot = m_quantizers[static_cast<std::size_t>(
                    (stage * transformer::kGptSiteCount + site) * 4 + o)];
                slot = std::make_unique<Quantizer>(q);
                m_any = m_any || !slot->isIdentity();
            }
    }
}

void GptRecipeCasts::beginStep(std::int64_t step) {
    m_step = step;
    m_call = 0;
}

const Quantizer* GptRecipeCasts::quantizer(int stage, transformer::GptSite site,
                                           transformer::GptOperand operand) const {
    return m_quantizers[static_cast<std::size_t>(
                            (stage * transformer::kGptSiteCount + static_cast<int>(site)) * 4 +
                            static_cast<int>(operand))]
        .get();
}

GptRecipeCasts::Counted& GptRecipeCasts::counted(int stage, transformer::GptOperand operand) {
    return m_counted[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))];
}

const QuantStats& GptRecipeCasts::stats(int stage, transformer::GptOperand operand) const {
    return m_counted[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))].stats;
}

const BlockStats& GptRecipeCasts::blockStats(int stage, transformer::GptOperand operand) const {
    return m_counted[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))].blocks;
}

double GptRecipeCasts::tensorScale(int stage, transformer::GptOperand operand) const {
    return m_counted[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))].tensorScale;
}

void GptRecipeCasts::resetStats() {
    for (Counted& c : m_counted) {
        c.stats = QuantStats{};
        c.blocks = BlockStats{};
    }
}

double GptRecipeCasts::gradientScale(int stage, Tensor gradient, double cumulative) {
    if (m_config.scalingPolicy != ScalingPolicy::PerLayer)
        return 1.0;
    const Quantizer* q = quantizer(stage, transformer::GptSite::Product,
                                   transformer::GptOperand::ActivationGradients);
    return perLayerScale(m_ops.moments(gradient), {0.0, 1.0, 1.0}, 1, q->config().format,
                         cumulative, {m_config.perLayerCap, m_config.cumulativeCap});
}

void GptRecipeCasts::cast(int stage, transformer::GptOperand operand, transformer::GptSite site,
                          Tensor v) {
    const std::uint64_t call = m_call++;
    const Quantizer* q = quantizer(stage, site, operand);
    const bool counting = m_counting && !m_evaluation;
    if (q == nullptr || (q->isIdentity() && !counting))
        return;
    Counted& c = counted(stage, operand);
    QuantizeOptions options;
    options.seed = m_config.seed;
    options.stream = (static_cast<std::uint64_t>(m_step) << 20) ^ call;
    QuantStats* stats = counting ? &c.stats : nullptr;
    const bool gradient = operand == transformer::GptOperand::WeightGradients;
    // Weight gradients are cast plainly (the trainer scales the three GEMM inputs only).
    if (!gradient && isBlockScaling(m_config.scalingPolicy) &&
        q->config().format.hasNarrowRange()) {
        const BlockQuantizeResult r = m_ops.quantizeBlocks(
            *q, *m_config.blockScheme(), v, v, {}, stats, counting ? &c.blocks : nullptr, options);
        c.tensorScale = r.tensorScale;
        return;
    }
    if (!gradient && isAmaxScaling(m_config.scalingPolicy)) {
        const double amax = m_ops.amax(v);
        double scaleAmax = amax;
        if (m_config.scalingPolicy == ScalingPolicy::AmaxDelayed) {
            AmaxHistory& h =
                m_histories.try_emplace(call, static_cast<std::size_t>(m_config.amaxHistory))
                    .first->second;
            scaleAmax = h.empty() ? amax : (m_config.amaxMostRecent ? h.mostRecent() : h.max());
            if (!m_evaluation)
                h.push(amax);
        }
        c.tensorScale = amaxScale(scaleAmax, q->config().format, m_config.amaxMargin);
        m_ops.quantizeScaled(*q, v, v, c.tensorScale, stats, options, nullptr);
        return;
    }
    m_ops.quantize(*q, v, v, stats, options);
}

} // namespace plab
