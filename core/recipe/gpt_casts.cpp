// GptRecipeCasts: the GPT's casts through the RecipeCaster, counted per stage and operand.
#include "recipe/gpt_casts.h"

#include "recipe/per_layer_scaling.h"
#include "recipe/precision_recipe.h"

#include <stdexcept>
#include <string>

namespace plab {
namespace {

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
    m_counted.resize(static_cast<std::size_t>(m_stageCount) * kOperandRoles);
    for (int stage = 0; stage < m_stageCount; ++stage)
        for (int site = 0; site < transformer::kGptSiteCount; ++site)
            for (std::size_t o = 0; o < kOperandRoles; ++o) {
                const Quantizer* q = m_caster.siteQuantizer(
                    stage, static_cast<TensorRole>(o),
                    transformer::siteKind(static_cast<transformer::GptSite>(site)));
                m_any = m_any || (q != nullptr && !q->isIdentity());
            }
}

void GptRecipeCasts::beginStep(std::int64_t step) {
    m_caster.setStep(step);
}

void GptRecipeCasts::setEvaluation(bool on) {
    // An evaluation pass counts its casts from the first again, so that delayed scaling reads
    // each tensor's own history; the step's count resumes from 0 after it (no cast follows an
    // evaluation within a step).
    m_evaluation = on;
    m_caster.restartCalls();
}

std::size_t GptRecipeCasts::index(int stage, TensorRole operand) const {
    const auto o = static_cast<std::size_t>(operand);
    if (stage < 0 || stage >= m_stageCount || o >= kOperandRoles)
        throw std::out_of_range("GptRecipeCasts: stage " + std::to_string(stage) + ", role " +
                                std::to_string(o) + ": the products' operands are roles 0-3");
    return static_cast<std::size_t>(stage) * kOperandRoles + o;
}

GptRecipeCasts::Counted& GptRecipeCasts::counted(int stage, TensorRole operand) {
    return m_counted[index(stage, operand)];
}

const QuantStats& GptRecipeCasts::stats(int stage, TensorRole operand) const {
    return m_counted[index(stage, operand)].stats;
}

const BlockStats& GptRecipeCasts::blockStats(int stage, TensorRole operand) const {
    return m_counted[index(stage, operand)].blocks;
}

double GptRecipeCasts::tensorScale(int stage, TensorRole operand) const {
    return m_counted[index(stage, operand)].tensorScale;
}

std::string_view GptRecipeCasts::scaling(int stage, TensorRole operand) const {
    return m_counted[index(stage, operand)].scaling;
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

void GptRecipeCasts::cast(int stage, TensorRole operand, transformer::GptSite site, Tensor v,
                          const BlockLayout& layout) {
    const TensorRole role = operand;
    const char* siteName = transformer::siteKind(site);
    const std::uint64_t call = m_caster.takeCall(stage, role);
    const Quantizer* q = m_caster.siteQuantizer(stage, role, siteName);
    const bool counting = m_counting && !m_evaluation;
    if (q == nullptr || (q->isIdentity() && !counting))
        return;
    Counted& c = counted(stage, operand);
    const CastCounters counters{counting ? &c.stats : nullptr, counting ? &c.blocks : nullptr,
                                &c.tensorScale, *siteName == '\0' ? &c.scaling : nullptr};
    m_caster.cast(stage, role, v, v, layout, counters, !m_evaluation, call, siteName);
}

bool GptRecipeCasts::hadamard(int stage) const {
    return m_caster.hadamardFor(stage);
}

void GptRecipeCasts::castAlongRows(int stage, TensorRole operand, transformer::GptSite site,
                                   Tensor raw, std::size_t rows, std::size_t width, Tensor into,
                                   Tensor work) {
    m_caster.castAlongBatch(stage, operand, raw, rows, width, into, work,
                            transformer::siteKind(site));
}

} // namespace plab
