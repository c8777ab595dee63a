#include "train/gpt_run.h"

#include "numerics/quantizer.h"
#include "train/optimizer.h"
#include "train/train_config.h"
#include "train/trainer.h" // makeLossScaler

#include <algorithm>
#include <cmath>
#include <stdexcept>

#if defined(PLAB_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace plab {

GptRun::GptRun(const GptRunSettings& settings, const TextCorpus& corpus)
    : m_settings(settings), m_corpus(corpus), m_model(settings.spec), m_rng(settings.seed) {
#if defined(PLAB_HAVE_OPENBLAS)
    openblas_set_num_threads(settings.threads);
#endif
    const std::size_t n = m_model.parameterCount();
    m_params.resize(n);
    m_grads.resize(n);
    m_update.resize(n);
    m_first.assign(n, 0.0f);
    m_second.assign(n, 0.0f);
    m_model.initParameters(m_params.data(), settings.seed);
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
    if (settings.precision) {
        const TrainConfig& p = *settings.precision;
        m_casts = std::make_unique<GptRecipeCasts>(p, m_model.stageCount());
        m_model.setCasts(m_casts.get());
        m_scaler = makeLossScaler(p);
        m_master = std::make_unique<Quantizer>(
            p.recipe.roles[static_cast<std::size_t>(TensorRole::MasterWeights)]);
        // Adam's second moment is the square of a gradient: in a format with less exponent
        // range than FP32's (FP16, FP8: the SGD-momentum recipes' state) it flushes to zero and
        // the update divides by epsilon alone. Such a state format is kept in FP32 (and said).
        const QuantConfig& state =
            p.recipe.roles[static_cast<std::size_t>(TensorRole::OptimizerState)];
        if (state.format.exponentBits >= 8) {
            m_state = std::make_unique<Quantizer>(state);
        } else {
            m_notice = "optimiser state kept in fp32: the recipe's " + state.format.name +
                       " would flush AdamW's second moment (squared gradients)";
        }
    }
}

double GptRun::lossScale() const {
    return m_scaler ? m_scaler->scale() : 1.0;
}

double GptRun::step() {
    const int t = m_settings.spec.context;
    sampleWindows(m_corpus.train, m_settings.batch, t, m_rng, m_inputs.data(), m_targets.data());
    if (m_casts)
        m_casts->beginStep(m_step);
    const double loss =
        m_model.forward(m_params.data(), m_inputs.data(), m_targets.data(), m_settings.batch, t);
    const double scale = lossScale();
    m_model.backward(m_params.data(), m_grads.data(), static_cast<float>(scale));
    ++m_step;
    if (m_scaler) { // overflow: back off and skip, or (none, static) a divergence
        bool overflow = false;
        for (const float g : m_grads)
            overflow = overflow || !std::isfinite(g);
        const double used = scale;
        const ScaleDecision decision = m_scaler->update(overflow);
        if (overflow && m_scaler->overflowIsDivergence())
            throw std::runtime_error("gpt: gradients overflowed at step " + std::to_string(m_step) +
                                     " with loss scale " + std::to_string(used));
        if (decision.skipStep) {
            ++m_skipped;
            return loss;
        }
        const auto inverse = static_cast<float>(1.0 / used);
        for (float& g : m_grads)
            g *= inverse;
    }
    static const Quantizer fp32(QuantConfig::forFormat(parseFormat("fp32")));
    const Quantizer& stateFormat = m_state ? *m_state : fp32;
    OptimizerSettings adamw{OptimizerKind::AdamW};
    adamw.beta1 = m_settings.beta1;
    adamw.beta2 = m_settings.beta2;
    adamw.epsilon = m_settings.epsilon;
    QuantizeOptions options;
    options.seed = m_settings.seed;
    options.stream = static_cast<std::uint64_t>(m_step) << 20;
    for (const transformer::GptTensor& tensor : m_model.tensors()) {
        adamw.weightDecay = tensor.matrix() ? m_settings.weightDecay : 0.0;
        const std::size_t at = tensor.offset, size = tensor.size();
        auto part = [&](std::vector<float>& v) { return std::span<float>(v.data() + at, size); };
        options.firstIndex = at;
        computeOptimizerUpdate(adamw, m_step, part(m_grads), part(m_params), part(m_update),
                               part(m_first), part(m_second), m_settings.lr, stateFormat, nullptr,
                               options);
    }
    for (std::size_t i = 0; i < m_params.size(); ++i)
        m_params[i] -= m_update[i];
    if (m_master && !m_master->isIdentity()) { // master weights kept in their format
        options.stream = (static_cast<std::uint64_t>(m_step) << 20) | 0xFFFFFu;
        options.firstIndex = 0;
        m_master->quantize(m_params, m_params, nullptr, options);
    }
    return loss;
}

double GptRun::validationLoss() {
    const int t = m_settings.spec.context;
    const std::size_t window =
        static_cast<std::size_t>(m_settings.batch) * static_cast<std::size_t>(t);
    double sum = 0.0;
    if (m_casts) // evaluated in the recipe's formats, not counted
        m_casts->setCounting(false);
    for (int w = 0; w < m_settings.validationWindows; ++w)
        sum += m_model.forward(m_params.data(), m_valInputs.data() + w * window,
                               m_valTargets.data() + w * window, m_settings.batch, t);
    if (m_casts)
        m_casts->setCounting(true);
    return sum / m_settings.validationWindows;
}

std::string GptRun::sample(const std::string& prompt, int length, std::uint64_t seed) {
    if (prompt.empty())
        throw std::invalid_argument("gpt sample: an empty prompt (at least one byte expected)");
    std::vector<std::uint8_t> text(prompt.begin(), prompt.end());
    std::mt19937_64 rng(seed);
    const int vocab = m_settings.spec.vocab, context = m_settings.spec.context;
    if (m_casts)
        m_casts->setCounting(false);
    std::vector<double> p(static_cast<std::size_t>(vocab));
    for (int i = 0; i < length; ++i) {
        const int window = std::min<int>(context, static_cast<int>(text.size()));
        std::vector<std::uint8_t> in(text.end() - window, text.end());
        for (std::uint8_t& b : in) // bytes past a smaller vocabulary
            b = static_cast<std::uint8_t>(b % vocab);
        m_model.forward(m_params.data(), in.data(), in.data(), 1, window);
        const float* z = m_model.logits().data() + static_cast<std::size_t>(window - 1) * vocab;
        const float top = *std::max_element(z, z + vocab);
        for (int c = 0; c < vocab; ++c)
            p[static_cast<std::size_t>(c)] = std::exp(static_cast<double>(z[c]) - top);
        std::discrete_distribution<int> next(p.begin(), p.end());
        text.push_back(static_cast<std::uint8_t>(next(rng)));
    }
    if (m_casts)
        m_casts->setCounting(true);
    return std::string(text.begin() + static_cast<std::ptrdiff_t>(prompt.size()), text.end());
}

} // namespace plab
