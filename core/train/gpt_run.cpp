#include "train/gpt_run.h"

#include "engine/cpu_ops.h"
#include "engine/optimizer.h"
#include "numerics/quantizer.h"
#include "recipe/make_loss_scaler.h"
#include "record/record_error.h"
#include "train/train_config.h"
#include "util/system_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#if defined(PLAB_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace plab {
namespace {

const Quantizer& fp32Quantizer() {
    static const Quantizer fp32(QuantConfig::forFormat(parseFormat("fp32")));
    return fp32;
}

// Marks the casts' passes as an evaluation (or a sample) for its duration: not counted, the
// amax histories left as they are.
class UncountedPass {
public:
    explicit UncountedPass(GptRecipeCasts* casts) : m_casts(casts) {
        if (m_casts) {
            m_was = m_casts->evaluation();
            m_casts->setEvaluation(true);
        }
    }
    ~UncountedPass() {
        if (m_casts)
            m_casts->setEvaluation(m_was);
    }
    UncountedPass(const UncountedPass&) = delete;
    UncountedPass& operator=(const UncountedPass&) = delete;

private:
    GptRecipeCasts* m_casts;
    bool m_was = false;
};

// A config whose parameters and activations the machine cannot hold is refused before anything
// is allocated, naming the key that sets the size (the batch, 65536 windows of the context at
// the most): on Linux the allocation itself succeeds and the OOM killer ends the process later.
void refuseWhatMemoryCannotHold(const GptRunSettings& settings, std::size_t bytes) {
    const std::optional<MemoryShortfall> lacking = memoryShortfall(static_cast<double>(bytes));
    if (!lacking)
        return;
    throw ConfigError("config.train.batch_size: " + std::to_string(settings.batch) +
                      " windows of " + std::to_string(settings.spec.context) +
                      " bytes need about " + lacking->needed +
                      " for the gpt's parameters and activations (model.width " +
                      std::to_string(settings.spec.width) + ", model.blocks " +
                      std::to_string(settings.spec.blocks) + "); " + lacking->available +
                      " of memory is available: lower train.batch_size (or model.context, "
                      "model.width, model.blocks)");
}

} // namespace

GptRun::GptRun(const GptRunSettings& settings, const TextCorpus& corpus,
               std::unique_ptr<TensorOps> ops)
    : m_settings(settings), m_corpus(corpus),
      m_ops(ops ? std::move(ops) : std::make_unique<CpuOps>()), m_model(settings.spec, *m_ops),
      m_rng(settings.seed) {
#if defined(PLAB_HAVE_OPENBLAS)
    openblas_set_num_threads(settings.threads);
#endif
    const std::size_t n = m_model.parameterCount();
    // A GPU's engine says when it is out of memory; on the CPU the OOM killer would say it.
    if (m_ops->name() == "cpu")
        refuseWhatMemoryCannotHold(settings,
                                   6 * n * sizeof(float) + m_model.bytesToReserve(settings.batch));
    for (Tensor* t : {&m_params, &m_grads, &m_update, &m_first, &m_second, &m_scratch})
        *t = m_ops->allocate(n); // zeros
    std::vector<float> initial(n);
    m_model.initParameters(initial.data(), settings.seed);
    m_ops->upload(m_params, initial.data());
    m_model.reserve(settings.batch); // evaluations and samples use the same buffers
    const auto window =
        static_cast<std::size_t>(settings.batch) * static_cast<std::size_t>(settings.spec.context);
    m_inputs.resize(window);
    m_targets.resize(window);
    std::mt19937_64 fixed(1234);
    const auto windows = static_cast<std::size_t>(settings.validationWindows);
    m_valInputs.resize(windows * window);
    m_valTargets.resize(windows * window);
    for (std::size_t w = 0; w < windows; ++w)
        sampleWindows(corpus.validation, settings.batch, settings.spec.context, fixed,
                      m_valInputs.data() + w * window, m_valTargets.data() + w * window);
    const auto stages = static_cast<std::size_t>(m_model.stageCount());
    m_masterStats.resize(stages);
    m_stateStats.resize(stages);
    m_updates.assign(stages, 0);
    m_lostUpdates.assign(stages, 0);
    m_channelAmax.resize(stages);
    if (settings.precision)
        buildPrecision();
}

std::vector<float> GptRun::parameters() const {
    std::vector<float> host(m_params.size);
    m_ops->download(host.data(), m_params);
    return host;
}

void GptRun::buildPrecision() {
    const TrainConfig& p = *m_settings.precision;
    m_casts = std::make_unique<GptRecipeCasts>(p, m_model);
    m_casts->setCounting(m_counting);
    m_scaler = makeLossScaler(p);
    m_notice.clear();
    // Adam's second moment is the square of a gradient: in a format with less exponent range
    // than FP32's (FP16, FP8: the SGD-momentum recipes' state) it flushes to zero and the update
    // divides by epsilon alone. Such a stage's state is kept in FP32 (and said).
    const RecipeCaster& caster = m_casts->caster();
    m_stateInFp32.assign(static_cast<std::size_t>(m_model.stageCount()), false);
    std::string narrow;
    for (int s = 0; s < m_model.stageCount(); ++s) {
        const FormatSpec& state = caster.quantizer(s, TensorRole::OptimizerState).config().format;
        if (!state.hasNarrowRange())
            continue;
        m_stateInFp32[static_cast<std::size_t>(s)] = true;
        if (narrow.find(state.name) == std::string::npos)
            narrow += (narrow.empty() ? "" : ", ") + state.name;
    }
    if (!narrow.empty())
        m_notice = "optimiser state kept in fp32: the recipe's " + narrow +
                   " would flush AdamW's second moment (squared gradients)";
    if (p.recipe.accumulation) {
        if (!m_notice.empty())
            m_notice += "; ";
        m_notice += "the GPT's products accumulate in fp32: the recipe's accumulation in " +
                    p.recipe.accumulation->format.name + " is emulated for the MLP and CNN only";
    }
    attachCasts();
}

void GptRun::attachCasts() {
    const bool needed = m_casts && (m_casts->castsAnything() || m_casts->counting());
    m_model.setCasts(needed ? m_casts.get() : nullptr);
}

void GptRun::setPrecision(const TrainConfig& precision) {
    m_settings.precision = precision;
    const double scale = lossScale();
    const bool adapts = info(precision.scalingPolicy).adaptsLossScale;
    buildPrecision();
    if (adapts && m_step > 0) // a recipe edit keeps the dynamic scale reached so far
        m_scaler->setScale(scale);
}

void GptRun::setLossScale(double scale) {
    if (m_scaler)
        m_scaler->setScale(scale);
}

void GptRun::setCounting(bool on) {
    m_counting = on;
    if (m_casts)
        m_casts->setCounting(on);
    attachCasts();
}

void GptRun::resetStats() {
    if (m_casts)
        m_casts->resetStats();
    for (std::size_t s = 0; s < m_masterStats.size(); ++s) {
        m_masterStats[s].reset();
        m_stateStats[s].reset();
        m_updates[s] = m_lostUpdates[s] = 0;
        m_channelAmax[s].clear();
    }
}

std::vector<StageStats> GptRun::stageStats() const {
    std::vector<StageStats> out;
    if (!m_casts)
        return out;
    out.resize(m_masterStats.size());
    for (std::size_t s = 0; s < out.size(); ++s) {
        StageStats& st = out[s];
        const int stage = static_cast<int>(s);
        for (std::size_t o = 0; o < GptRecipeCasts::kOperandRoles; ++o) {
            const auto operand = static_cast<TensorRole>(o);
            st.roles[o] = m_casts->stats(stage, operand);
            st.blocks[o] = m_casts->blockStats(stage, operand);
            st.tensorScale[o] = m_casts->tensorScale(stage, operand);
            st.scaling[o] = m_casts->scaling(stage, operand);
        }
        st.roles[static_cast<std::size_t>(TensorRole::MasterWeights)] = m_masterStats[s];
        st.roles[static_cast<std::size_t>(TensorRole::OptimizerState)] = m_stateStats[s];
        st.updates = m_updates[s];
        st.lostUpdates = m_lostUpdates[s];
        st.gradientScale =
            m_model.gradientScales().empty() ? lossScale() : m_model.gradientScales()[s];
        st.channelAmax = m_channelAmax[s];
    }
    return out;
}

double GptRun::lossScale() const {
    return m_scaler ? m_scaler->scale() : 1.0;
}

GptStepResult GptRun::step() {
    const int t = m_settings.spec.context;
    sampleWindows(m_corpus.train, m_settings.batch, t, m_rng, m_inputs.data(), m_targets.data());
    if (m_casts)
        m_casts->beginStep(m_step);
    GptStepResult result;
    result.loss = m_model.forward(m_params, m_inputs.data(), m_targets.data(), m_settings.batch, t);
    result.accuracy =
        static_cast<double>(m_model.correctPredictions()) / static_cast<double>(m_targets.size());
    if (m_counting)
        for (std::size_t s = 0; s < m_channelAmax.size(); ++s)
            m_channelAmax[s] = m_model.channelAmax(static_cast<int>(s));
    result.scale = lossScale();
    m_model.backward(m_params, m_grads, static_cast<float>(result.scale));
    ++m_step;
    if (m_scaler) { // overflow: back off and skip, or (none, static) a divergence
        const bool overflow = !std::isfinite(result.loss) || !m_ops->allFinite(m_grads);
        const ScaleDecision decision = m_scaler->update(overflow);
        result.event = decision.reason;
        result.diverged = overflow && m_scaler->overflowIsDivergence();
        if (decision.skipStep || result.diverged) {
            result.skipped = true;
            ++m_skipped;
            if (m_counting)
                m_ops->finishStatistics();
            return result;
        }
        // Each tensor's gradient carries its stage's scale (the loss scale, times per-layer
        // factors under that policy).
        const std::vector<transformer::GptTensor>& tensors = m_model.tensors();
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            const auto inverse = static_cast<float>(
                1.0 / m_model.gradientScales()[static_cast<std::size_t>(m_model.stageHolding(i))]);
            m_ops->scale(m_grads.slice(tensors[i].offset, tensors[i].size()), inverse);
        }
    }
    applyUpdate();
    if (m_counting) // a GPU's statistics: complete before anyone reads them
        m_ops->finishStatistics();
    return result;
}

// The optimiser state's and the master weights' casts of a tensor of `stage`, as the recipe
// casts them there (its per-stage overrides included), on the caster's random stream of the
// step, stage and role (RecipeCaster::options), each tensor at its own index in it; FP32 without
// a recipe.
GptRun::UpdateCasts GptRun::updateCasts(int stage, TensorRole role, std::size_t at) const {
    UpdateCasts casts{&fp32Quantizer(), {}};
    casts.options.seed = m_settings.seed;
    if (m_casts) {
        const RecipeCaster& caster = m_casts->caster();
        const bool keptInFp32 =
            role == TensorRole::OptimizerState && m_stateInFp32[static_cast<std::size_t>(stage)];
        if (!keptInFp32)
            casts.format = &caster.quantizer(stage, role);
        casts.options = caster.options(stage, role);
    }
    casts.options.firstIndex = at;
    return casts;
}

void GptRun::applyUpdate() {
    OptimizerSettings adamw{OptimizerKind::AdamW};
    adamw.beta1 = m_settings.beta1;
    adamw.beta2 = m_settings.beta2;
    adamw.epsilon = m_settings.epsilon;
    const std::vector<transformer::GptTensor>& tensors = m_model.tensors();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const transformer::GptTensor& tensor = tensors[i];
        adamw.weightDecay = tensor.matrix() ? m_settings.weightDecay : 0.0;
        const std::size_t at = tensor.offset, size = tensor.size();
        const int stage = m_model.stageHolding(i);
        const UpdateCasts state = updateCasts(stage, TensorRole::OptimizerState, at);
        QuantStats* counted = m_counting ? &m_stateStats[static_cast<std::size_t>(stage)] : nullptr;
        m_ops->optimizerUpdate(adamw, {m_first.slice(at, size), m_second.slice(at, size)}, m_step,
                               m_grads.slice(at, size), m_params.slice(at, size),
                               m_update.slice(at, size), m_settings.lr, *state.format, counted,
                               state.options);
    }
    // master <- Q(master - update) in the master weights' format (FP32 without a recipe).
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::size_t at = tensors[i].offset, size = tensors[i].size();
        const auto stage = static_cast<std::size_t>(m_model.stageHolding(i));
        const UpdateCasts master =
            updateCasts(static_cast<int>(stage), TensorRole::MasterWeights, at);
        const TensorOps::UpdateCounts counts = m_ops->applyMasterUpdate(
            m_params.slice(at, size), m_update.slice(at, size), m_scratch.slice(at, size),
            *master.format, m_counting ? &m_masterStats[stage] : nullptr, master.options,
            m_counting);
        m_updates[stage] += counts.updates;
        m_lostUpdates[stage] += counts.lost;
    }
}

GptEvaluation GptRun::evaluate() {
    const int t = m_settings.spec.context;
    const std::size_t window =
        static_cast<std::size_t>(m_settings.batch) * static_cast<std::size_t>(t);
    const UncountedPass uncounted(m_casts.get());
    double loss = 0.0, accuracy = 0.0;
    for (int w = 0; w < m_settings.validationWindows; ++w) {
        const auto at = static_cast<std::size_t>(w) * window;
        loss += m_model.forward(m_params, m_valInputs.data() + at, m_valTargets.data() + at,
                                m_settings.batch, t);
        accuracy += static_cast<double>(m_model.correctPredictions()) / static_cast<double>(window);
    }
    const double n = std::max(1, m_settings.validationWindows);
    return {loss / n, accuracy / n};
}

std::string GptRun::sample(const std::string& prompt, int length, std::uint64_t seed) {
    if (prompt.empty())
        throw std::invalid_argument("gpt sample: an empty prompt (at least one byte expected)");
    std::vector<std::uint8_t> text(prompt.begin(), prompt.end());
    std::mt19937_64 rng(seed);
    const int vocab = m_settings.spec.vocab, context = m_settings.spec.context;
    const UncountedPass uncounted(m_casts.get());
    std::vector<double> p(static_cast<std::size_t>(vocab));
    for (int i = 0; i < length; ++i) {
        const int window = std::min<int>(context, static_cast<int>(text.size()));
        std::vector<std::uint8_t> in(text.end() - window, text.end());
        for (std::uint8_t& b : in) // bytes past a smaller vocabulary
            b = static_cast<std::uint8_t>(b % vocab);
        m_model.forward(m_params, in.data(), in.data(), 1, window);
        const std::vector<float> z = m_model.logits(window - 1);
        const float top = *std::max_element(z.begin(), z.end());
        for (int c = 0; c < vocab; ++c)
            p[static_cast<std::size_t>(c)] =
                std::exp(static_cast<double>(z[static_cast<std::size_t>(c)]) - top);
        std::discrete_distribution<int> next(p.begin(), p.end());
        text.push_back(static_cast<std::uint8_t>(next(rng)));
    }
    return std::string(text.begin() + static_cast<std::ptrdiff_t>(prompt.size()), text.end());
}

void GptRun::saveState(RunCheckpoint& checkpoint) const {
    checkpoint.header["trainer"] = {{"model", "gpt"},
                                    {"step", m_step},
                                    {"skipped", m_skipped},
                                    {"parameters", m_params.size},
                                    {"scaler", m_scaler ? m_scaler->checkpointState() : nullptr}};
    putTensor(checkpoint, "parameters", *m_ops, m_params);
    putTensor(checkpoint, "optimizer.first", *m_ops, m_first);
    putTensor(checkpoint, "optimizer.second", *m_ops, m_second);
    putGenerator(checkpoint, "windows", m_rng);
    checkpoint.putDoubles("amax_histories",
                          m_casts ? m_casts->amaxHistories() : std::vector<double>{});
}

void GptRun::restoreState(const RunCheckpoint& checkpoint) {
    const nlohmann::json& t = checkpoint.header.at("trainer");
    if (t.at("parameters").get<std::size_t>() != m_params.size)
        throw RecordError("checkpoint: " + t.at("parameters").dump() +
                          " parameters; this run's model has " + std::to_string(m_params.size));
    restoreTensor(checkpoint, "parameters", *m_ops, m_params);
    restoreTensor(checkpoint, "optimizer.first", *m_ops, m_first);
    restoreTensor(checkpoint, "optimizer.second", *m_ops, m_second);
    restoreGenerator(checkpoint, "windows", m_rng);
    if (m_casts)
        m_casts->restoreAmaxHistories(checkpoint.doubles("amax_histories"));
    if (m_scaler && !t.at("scaler").is_null())
        m_scaler->restoreCheckpointState(t.at("scaler"));
    m_step = t.at("step").get<std::int64_t>();
    m_skipped = t.at("skipped").get<std::int64_t>();
}

} // namespace plab
