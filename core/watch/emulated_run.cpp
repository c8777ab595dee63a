// EmulatedRun: the recipe's casts over a PyTorch program's tensors, counted per step.
#include "watch/emulated_run.h"

#include "train/training_run.h"

namespace plab {
namespace {

WatchSettings recorderSettings(const EmulationSettings& e) {
    WatchSettings s;
    s.source = ExternalSource::Emulate;
    s.stageNames = e.stageNames;
    s.every = e.every;
    // Counted rows are small (no tensors wait): a deep queue, so that a slow disk delays the
    // record rather than dropping a step's counts.
    s.queueSteps = 256;
    s.description = e.description;
    s.overwrite = e.overwrite;
    s.histogramsEvery = e.histogramsEvery;
    return s;
}

} // namespace

EmulatedRun::EmulatedRun(const std::string& dir, const EmulationSettings& settings)
    : m_settings(settings), m_pool(std::max(1u, settings.threads)),
      m_caster(settings.config, static_cast<int>(settings.stageNames.size()), m_ops, &m_pool) {
    if (m_settings.stageNames.empty())
        throw ConfigError("emulate: no module to emulate");
    if (m_settings.every < 1)
        throw ConfigError("emulate: every " + std::to_string(m_settings.every) +
                          ": expected a whole number of steps, 1 or more");
    checkRecipeStages(m_settings.config.recipe, static_cast<int>(m_settings.stageNames.size()));
    const std::size_t stages = m_settings.stageNames.size();
    m_stats.resize(stages);
    m_cast.assign(stages, {});
    m_calls.assign(stages, {});
    m_caster.setStep(0);
    m_recorder = std::make_unique<WatchRecorder>(dir, recorderSettings(m_settings));
}

std::int64_t EmulatedRun::step() const {
    const std::lock_guard lock(m_mutex);
    return m_step;
}

bool EmulatedRun::statisticsStep() const {
    const std::lock_guard lock(m_mutex);
    return (m_step - 1) % m_settings.every == 0;
}

void EmulatedRun::cast(int stage, TensorRole role, const float* in, float* out, std::size_t n,
                       const BlockLayout& layout) {
    const std::lock_guard lock(m_mutex);
    if (stage < 0 || static_cast<std::size_t>(stage) >= m_stats.size())
        throw std::invalid_argument("emulate: stage " + std::to_string(stage) + " of " +
                                    std::to_string(m_stats.size()));
    const auto s = static_cast<std::size_t>(stage);
    const auto r = static_cast<std::size_t>(role);
    const bool collect = (m_step - 1) % m_settings.every == 0;
    StageStats& st = m_stats[s];
    const CastCounters counters =
        collect ? CastCounters{&st.roles[r], &st.blocks[r], &st.tensorScale[r]} : CastCounters{};
    m_cast[s][r] = true;
    const std::uint8_t call = m_calls[s][r];
    m_calls[s][r] = static_cast<std::uint8_t>(call + 1);
    m_caster.cast(stage, role, {const_cast<float*>(in), n}, {out, n}, layout, counters, true, call);
}

void EmulatedRun::castAlongBatch(int stage, TensorRole role, const float* raw, float* out,
                                 std::size_t batch, std::size_t width) {
    const std::lock_guard lock(m_mutex);
    m_work.resize(batch * width);
    m_caster.castAlongBatch(stage, role, {const_cast<float*>(raw), batch * width}, batch, width,
                            {out, batch * width}, {m_work.data(), m_work.size()});
}

void EmulatedRun::endStep(std::optional<double> loss, std::optional<double> learningRate,
                          double scale, bool skipped) {
    WatchedStep step;
    {
        const std::lock_guard lock(m_mutex);
        step.step = m_step;
        step.loss = loss;
        step.learningRate = learningRate;
        step.scale = scale;
        step.skipped = skipped;
        step.statistics = (m_step - 1) % m_settings.every == 0;
        if (step.statistics)
            for (std::size_t s = 0; s < m_stats.size(); ++s)
                for (TensorRole role : kAllRoles) {
                    const auto r = static_cast<std::size_t>(role);
                    if (!m_cast[s][r])
                        continue;
                    step.counted.push_back(
                        {s, role,
                         m_caster.quantizer(static_cast<int>(s), role).config().format.name,
                         m_stats[s].roles[r], m_stats[s].blocks[r], m_stats[s].tensorScale[r]});
                }
        for (StageStats& st : m_stats)
            st = StageStats{};
        m_cast.assign(m_cast.size(), {});
        m_calls.assign(m_calls.size(), {});
        ++m_step;
        m_caster.setStep(m_step - 1); // the trainer's streams: step k's casts draw from k - 1
    }
    m_recorder->submit(std::move(step));
}

void EmulatedRun::event(const std::string& type, const std::string& message) {
    m_recorder->event(step(), type, message);
}

void EmulatedRun::close(const std::string& reason, bool finished) {
    m_recorder->close(reason, finished);
}

} // namespace plab
