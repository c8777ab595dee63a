// EmulatedRun: the recipe's casts over a PyTorch program's tensors, counted per step.
#include "torch_runs/emulated_run.h"

#include "train/edit_wording.h"

#include "record/record_error.h"
#include "train/training_run.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

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

// What config.json keeps of an emulated run's TrainConfig: what casts (the recipe, the tensor
// scaling and loss scaler, the seed of the stochastic rounding) and its timeline. The model,
// data and optimiser are the script's: a TrainConfig's defaults for them (an MLP 256-256 on
// synthetic data, SGD at lr 0.05) described nothing that ran (issue 65 item 23).
nlohmann::json scriptTrainConfig(const TrainConfig& config) {
    const nlohmann::json full = config.toJson();
    nlohmann::json kept = nlohmann::json::object();
    for (const char* key : {"recipe", "scaling", "seed", "timeline"})
        if (full.contains(key))
            kept[key] = full[key];
    return kept;
}

} // namespace

EmulatedRun::EmulatedRun(const std::string& dir, const EmulationSettings& settings)
    : m_settings(settings), m_pool(std::max(1u, settings.threads)),
      m_caster(settings.config, static_cast<int>(settings.stageNames.size()), m_ops, &m_pool),
      m_inbox(dir), m_timeline(settings.config) {
    if (m_settings.stageNames.empty())
        throw ConfigError("emulate: no module to emulate");
    if (m_settings.every < 1)
        throw ConfigError("emulate: every " + std::to_string(m_settings.every) +
                          ": expected a whole number of steps, 1 or more");
    checkRecipeStages(m_settings.config.recipe, static_cast<int>(m_settings.stageNames.size()));
    const std::size_t stages = m_settings.stageNames.size();
    m_stats.resize(stages);
    m_cast.assign(stages, {});
    m_caster.setStep(0);
    m_settings.description["train_config"] = scriptTrainConfig(m_settings.config);
    m_recorder = std::make_unique<WatchRecorder>(dir, recorderSettings(m_settings));
    // Commands left in the folder by an earlier run's steering are not this run's.
    std::error_code ignored;
    std::filesystem::remove(std::filesystem::path(dir) / kCommandsFile, ignored);
}

std::vector<double> EmulatedRun::castingState() const {
    std::vector<double> state{kCastingStateVersion, static_cast<double>(m_step - 1)};
    const std::vector<double> histories = m_caster.amaxHistories();
    state.insert(state.end(), histories.begin(), histories.end());
    return state;
}

void EmulatedRun::restoreCastingState(const std::vector<double>& state) {
    if (m_step != 1)
        throw ConfigError("emulation state: loaded at step " + std::to_string(m_step) +
                          "; load the state_dict before the first step");
    if (state.size() < 2 || state[0] != kCastingStateVersion)
        throw ConfigError("emulation state: version " +
                          (state.empty() ? std::string("none") : std::to_string(state[0])) +
                          " (this build reads version 1)");
    const double taken = state[1];
    if (!(taken >= 0.0 && taken < 9e15) || taken != std::floor(taken))
        throw ConfigError("emulation state: steps taken " + std::to_string(taken) +
                          ": expected a whole number, 0 or more");
    try {
        m_caster.restoreAmaxHistories({state.begin() + 2, state.end()});
    } catch (const std::invalid_argument& e) {
        throw ConfigError(std::string("emulation state: ") + e.what());
    }
    m_step = static_cast<std::int64_t>(taken) + 1;
    m_caster.setStep(m_step - 1);
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
                       const BlockLayout& layout, double agreedAmax, bool training) {
    const std::lock_guard lock(m_mutex);
    if (stage < 0 || static_cast<std::size_t>(stage) >= m_stats.size())
        throw std::invalid_argument("emulate: stage " + std::to_string(stage) + " of " +
                                    std::to_string(m_stats.size()));
    const auto s = static_cast<std::size_t>(stage);
    const auto r = static_cast<std::size_t>(role);
    const bool collect = training && (m_step - 1) % m_settings.every == 0;
    StageStats& st = m_stats[s];
    const CastCounters counters =
        collect ? CastCounters{&st.roles[r], &st.blocks[r], &st.tensorScale[r], &st.scaling[r]}
                : CastCounters{};
    if (training)
        m_cast[s][r] = true;
    const std::uint64_t call =
        training ? m_caster.takeCall(stage, role) : m_caster.nextCall(stage, role);
    m_caster.cast(stage, role, {const_cast<float*>(in), n}, {out, n}, layout, counters, training,
                  call, {}, agreedAmax);
}

void EmulatedRun::castAlongBatch(int stage, TensorRole role, const float* raw, float* out,
                                 std::size_t batch, std::size_t width) {
    const std::lock_guard lock(m_mutex);
    m_work.resize(batch * width);
    m_caster.castAlongBatch(stage, role, {const_cast<float*>(raw), batch * width}, batch, width,
                            {out, batch * width}, {m_work.data(), m_work.size()});
}

void EmulatedRun::endStep(std::optional<double> loss, std::optional<double> learningRate,
                          double scale, bool skipped, std::map<std::string, double> metrics) {
    WatchedStep step;
    step.metrics = std::move(metrics);
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
                         m_stats[s].roles[r], m_stats[s].blocks[r], m_stats[s].tensorScale[r],
                         std::string(m_stats[s].scaling[r])});
                }
        for (StageStats& st : m_stats)
            st = StageStats{};
        m_cast.assign(m_cast.size(), {});
        ++m_step;
        m_caster.setStep(m_step - 1); // the trainer's streams: step k's casts draw from k - 1
    }
    m_recorder->submit(std::move(step));
}

void EmulatedRun::event(const std::string& type, const std::string& message) {
    m_recorder->event(step(), type, message);
}

// -- steering -----------------------------------------------------------------------------------
std::vector<SteeringChange> EmulatedRun::steer() {
    std::vector<SteeringChange> changes;
    const std::lock_guard lock(m_mutex);
    const std::int64_t taken = m_step - 1;
    const std::uint64_t timelineBefore = m_timeline.version();
    for (const TimedEdit& edit : m_timeline.due(taken)) {
        if (const std::string why = applyChange(edit.set, "the replayed timeline", taken, changes);
            !why.empty())
            steeringEvent(taken, "edit", "timeline edit refused: " + why, edit.set);
    }
    for (const RunCommand& c : m_inbox.poll()) {
        const std::string number = "command " + std::to_string(c.number);
        std::string from = "another process";
        if (c.body.is_object() && c.body.contains("from") && c.body["from"].is_string())
            from = c.body["from"].get<std::string>().substr(0, 80);
        const auto refuse = [&](const std::string& why) {
            steeringEvent(taken, "command",
                          number + " from " + from + " refused at step " + std::to_string(taken) +
                              ": " + why);
        };
        if (!c.error.empty()) {
            refuse(c.error);
            continue;
        }
        const bool hasSet = c.body.contains("set"), hasAction = c.body.contains("action");
        if (hasSet == hasAction) {
            refuse("expected {\"set\": {...}} or {\"action\": \"pause\" | \"resume\" | "
                   "\"step\"}");
            continue;
        }
        if (hasSet) {
            if (const std::string why = applyChange(c.body["set"], from, taken, changes);
                !why.empty())
                refuse(why);
            continue;
        }
        const nlohmann::json& action = c.body["action"];
        const std::string name = action.is_string() ? action.get<std::string>() : action.dump();
        const std::string at = " from " + from + " at step " + std::to_string(taken);
        if (name == "pause") {
            if (!m_paused)
                steeringEvent(taken, "pause", "paused" + at);
            m_paused = true;
            m_stepsGranted = 0;
        } else if (name == "resume") {
            if (m_paused)
                steeringEvent(taken, "resume", "resumed" + at);
            m_paused = false;
            m_stepsGranted = 0;
        } else if (name == "step") {
            if (!m_paused) {
                refuse("step: the run is not paused");
                continue;
            }
            ++m_stepsGranted;
            steeringEvent(taken, "step", "one step" + at);
        } else {
            refuse("action " + name.substr(0, 40) + ": expected pause, resume or step");
            continue;
        }
        changes.push_back({name, nullptr});
    }
    if (m_timeline.version() != timelineBefore) { // config.json replays what happened
        m_settings.description["train_config"] = scriptTrainConfig(m_timeline.recordedConfig());
        try {
            m_recorder->describe(m_settings.description);
        } catch (const RecordError&) { // the record failed earlier: the program knows already
        }
    }
    m_holding = m_paused && m_stepsGranted == 0;
    if (m_paused && !m_holding)
        --m_stepsGranted; // the step about to run
    return changes;
}

std::string EmulatedRun::applyChange(const nlohmann::json& patch, const std::string& from,
                                     std::int64_t taken, std::vector<SteeringChange>& changes) {
    if (!patch.is_object() || patch.empty())
        return "set: expected a config patch (an object of scaling or recipe)";
    for (auto it = patch.begin(); it != patch.end(); ++it) {
        if (it.key() == "train")
            return "config.train: the learning rate is the script's optimiser's (emulate "
                   "steers the recipe and the loss scaling)";
        if (it.key() != "scaling" && it.key() != "recipe")
            return "config." + it.key() +
                   ": cannot change while the run goes (expected scaling or recipe)";
    }
    TrainConfig next;
    try {
        next = m_timeline.preview(patch);
        checkRecipeStages(next.recipe, static_cast<int>(m_settings.stageNames.size()));
    } catch (const ConfigError& e) {
        return e.what();
    }
    if (next.scalingPolicy == ScalingPolicy::PerLayer)
        return "config.scaling.policy per-layer: Zhao et al.'s scaling is not emulated";
    if (!setsOnlyTheScale(patch)) { // the scale is the script's loss scaler's
        if (patch.contains("recipe"))
            m_caster.setRecipe(next.recipe);
        if (patch.contains("scaling"))
            m_caster.setScaling(next);
    }
    const EditWording wording = m_timeline.apply(patch, std::move(next), taken, from);
    changes.push_back({"set", patch});
    steeringEvent(taken, wording.type, wording.message, patch);
    return {};
}

void EmulatedRun::steeringEvent(std::int64_t step, const std::string& type,
                                const std::string& message, const nlohmann::json& change) {
    try {
        m_recorder->event(step, type, message, change);
    } catch (const RecordError&) { // the record failed earlier: the program knows already
    }
}

bool EmulatedRun::holding() const {
    const std::lock_guard lock(m_mutex);
    return m_holding;
}

bool EmulatedRun::paused() const {
    const std::lock_guard lock(m_mutex);
    return m_paused;
}

TrainConfig EmulatedRun::effectiveConfig() const {
    const std::lock_guard lock(m_mutex);
    return m_timeline.effective();
}

void EmulatedRun::close(const std::string& reason, bool finished) {
    m_recorder->close(reason, finished);
}

} // namespace plab
