// GptRecipeCasts: the GPT's casts through the RecipeCaster, counted per stage and operand.
#include "recipe/gpt_casts.h"

#include "recipe/per_layer_scaling.h"
#include "recipe/precision_recipe.h"

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

std::vector<std::string> stageKinds(const transformer::GptModel& model) {
    std::vector<std::string> kinds;
    for (int s = 0; s < model.stageCount(); ++s)
        kinds.push_back(model.stageKind(s));
    return kinds;
}

} // namespace

GptRecipeCasts::GptRecipeCasts(const CastingSettings& config, const transformer::GptModel& model)
    : m_config(config), m_ops(model.ops()), m_stageCount(model.stageCount()),
      m_caster(config, model.stageCount(), model.ops(), nullptr, stageKinds(model)) {
    m_counted.resize(static_cast<std::size_t>(m_stageCount) * 4);
    m_calls.assign(static_cast<std::size_t>(m_stageCount), {});
    for (int stage = 0; stage < m_stageCount; ++stage)
        for (int site = 0; site < transformer::kGptSiteCount; ++site)
            for (int o = 0; o < 4; ++o) {
                const Quantizer* q = m_caster.siteQuantizer(
                    stage, roleOf(static_cast<transformer::GptOperand>(o)),
                    transformer::siteKind(static_cast<transformer::GptSite>(site)));
                m_any = m_any || (q != nullptr && !q->isIdentity());
            }
}

void GptRecipeCasts::beginStep(std::int64_t step) {
    m_caster.setStep(step);
    m_calls.assign(m_calls.size(), {});
}

void GptRecipeCasts::setEvaluation(bool on) {
    // An evaluation pass counts its casts from the first again, so that delayed scaling reads
    // each tensor's own history; the step's count resumes from 0 after it (no cast follows an
    // evaluation within a step).
    m_evaluation = on;
    m_calls.assign(m_calls.size(), {});
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

std::string_view GptRecipeCasts::scaling(int stage, transformer::GptOperand operand) const {
    return m_counted[static_cast<std::size_t>(stage * 4 + static_cast<int>(operand))].scaling;
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
    const Quantizer& q = m_caster.quantizer(stage, TensorRole::ActivationGradients);
    return perLayerScale(m_ops.moments(gradient), {0.0, 1.0, 1.0}, 1, q.config().format, cumulative,
                         {m_config.perLayerCap, m_config.cumulativeCap});
}

void GptRecipeCasts::cast(int stage, transformer::GptOperand operand, transformer::GptSite site,
                          Tensor v, const BlockLayout& layout) {
    const TensorRole role = roleOf(operand);
    const char* siteName = transformer::siteKind(site);
    std::uint64_t& call = m_calls[static_cast<std::size_t>(stage)][static_cast<int>(operand)];
    const std::uint64_t thisCall = call++;
    const Quantizer* q = m_caster.siteQuantizer(stage, role, siteName);
    const bool counting = m_counting && !m_evaluation;
    if (q == nullptr || (q->isIdentity() && !counting))
        return;
    Counted& c = counted(stage, operand);
    const CastCounters counters{counting ? &c.stats : nullptr, counting ? &c.blocks : nullptr,
                                &c.tensorScale, *siteName == '\0' ? &c.scaling : nullptr};
    m_caster.cast(stage, role, v, v, layout, counters, !m_evaluation, thisCall, siteName);
}

bool GptRecipeCasts::hadamard(int stage) const {
    return m_caster.hadamardFor(stage);
}

void GptRecipeCasts::castAlongRows(int stage, transformer::GptOperand operand,
                                   transformer::GptSite site, Tensor raw, std::size_t rows,
                                   std::size_t width, Tensor into, Tensor work) {
    m_caster.castAlongBatch(stage, roleOf(operand), raw, rows, width, into, work,
                            transformer::siteKind(site));
}

} // namespace plab
