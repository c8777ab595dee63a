#include "train/gpt_run.h"

#include "numerics/quantizer.h"
#include "train/optimizer.h"
#include "train/train_config.h"

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
}

double GptRun::step() {
    const int t = m_settings.spec.context;
    sampleWindows(m_corpus.train, m_settings.batch, t, m_rng, m_inputs.data(), m_targets.data());
    const double loss =
        m_model.forward(m_params.data(), m_inputs.data(), m_targets.data(), m_settings.batch, t);
    m_model.backward(m_params.data(), m_grads.data());
    ++m_step;
    static const Quantizer fp32(QuantConfig::forFormat(parseFormat("fp32")));
    OptimizerSettings adamw{OptimizerKind::AdamW};
    adamw.beta1 = m_settings.beta1;
    adamw.beta2 = m_settings.beta2;
    adamw.epsilon = m_settings.epsilon;
    for (const transformer::GptTensor& tensor : m_model.tensors()) {
        adamw.weightDecay = tensor.matrix() ? m_settings.weightDecay : 0.0;
        const std::size_t at = tensor.offset, size = tensor.size();
        auto part = [&](std::vector<float>& v) { return std::span<float>(v.data() + at, size); };
        computeOptimizerUpdate(adamw, m_step, part(m_grads), part(m_params), part(m_update),
                               part(m_first), part(m_second), m_settings.lr, fp32, nullptr, {});
    }
    for (std::size_t i = 0; i < m_params.size(); ++i)
        m_params[i] -= m_update[i];
    return loss;
}

double GptRun::validationLoss() {
    const int t = m_settings.spec.context;
    const std::size_t window =
        static_cast<std::size_t>(m_settings.batch) * static_cast<std::size_t>(t);
    double sum = 0.0;
    for (int w = 0; w < m_settings.validationWindows; ++w)
        sum += m_model.forward(m_params.data(), m_valInputs.data() + w * window,
                               m_valTargets.data() + w * window, m_settings.batch, t);
    return sum / m_settings.validationWindows;
}

} // namespace plab
