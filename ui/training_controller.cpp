// TrainingController: session lifetime, the poll timer and the decimated history.
#include "training_controller.h"

#include "data/dataset.h"
#include "train/run_data.h"

#include <cmath>

namespace plab {

TrainingController::TrainingController(QObject* parent, Polling polling)
    : QObject(parent), m_polling(polling) {
    m_timer.setInterval(33); // ~30 Hz: the views never need more
    connect(&m_timer, &QTimer::timeout, this, &TrainingController::poll);
}

TrainingController::~TrainingController() = default;

QString TrainingController::configure(const TrainConfig& config, const QString& runDir) {
    try {
        // Same data as the current run (a new preset, scale or seed for real data): reuse it
        // rather than reading and decoding Fashion-MNIST again (~1 s) on the GUI thread.
        // Text for the GPT (its synthetic text depends on the seed and the context), images
        // for the others.
        const bool text = config.model.type == "gpt";
        const std::string dataKey =
            (text ? "text/" + std::to_string(config.model.context) + "/" : "images/") +
            (config.dataSource == "synthetic" ? "synthetic/" + std::to_string(config.seed) + "/" +
                                                    std::to_string(config.syntheticTrain) + "/" +
                                                    std::to_string(config.syntheticTest)
                                              : config.dataSource);
        const std::shared_ptr<const DataSplit> data =
            m_data && dataKey == m_dataKey ? m_data : loadRunData(config);
        auto session = std::make_unique<TrainingSession>(config, data, runDir.toStdString());
        session->setPace(m_pace);
        m_timer.stop();
        m_session = std::move(session);
        m_data = std::move(data);
        m_dataKey = dataKey;
        m_config = config;
        m_configVersion = 0;
        m_latest = nullptr;
        m_wantRunning = false;
        m_runDir = runDir;
        m_flushHistory.clear();
        m_lastFlushStep = -1;
        m_history.clear();
        m_decimation = 1;
        if (m_polling == Polling::OwnTimer)
            m_timer.start();
        emit historyChanged();
        emit snapshotChanged();
        emit stateChanged();
        return {};
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
}

SessionState TrainingController::state() const {
    return m_session ? m_session->state() : SessionState::Idle;
}

std::int64_t TrainingController::plannedSteps() const {
    return m_session ? m_session->plannedSteps() : 0;
}

void TrainingController::train() {
    if (!m_session)
        return;
    // A run that has ended (finished, stopped, diverged, failed) has nothing to train: the
    // button stays "Train" and Reset or Apply starts again.
    if (hasEnded(m_session->state()))
        return;
    m_wantRunning = true;
    m_session->start();
}
void TrainingController::pause() {
    if (!m_session)
        return;
    m_wantRunning = false;
    m_session->pause();
}
void TrainingController::toggleTraining() {
    // Decide on what was asked for, not on the session's state, which lags the command queue:
    // two quick presses must mean start, then pause.
    if (m_wantRunning)
        pause();
    else
        train();
}
void TrainingController::step() {
    if (m_session)
        m_session->stepOnce();
}
void TrainingController::closeSession() {
    m_timer.stop();
    m_session.reset();
    m_latest = nullptr;
    m_latestStep = -1;
    m_wantRunning = false;
    m_runDir.clear();
    m_history.clear();
    m_flushHistory.clear();
    m_lastFlushStep = -1;
    m_lastState = SessionState::Idle;
    emit stateChanged();
}

TrainConfig TrainingController::replayConfig() const {
    if (!m_session)
        return m_config;
    m_session->waitForCommands();
    return m_session->replayConfig();
}

bool TrainingController::keptAfterEnd(const nlohmann::json& patch) {
    if (!m_session || !hasEnded(m_session->state()))
        return false;
    // At the last step, where a replay of as many steps never reaches it and one of more makes it.
    m_session->noteEditAfterEnd(m_latest ? m_latest->scalars.step : 0, patch);
    return true;
}

TrainConfig TrainingController::effectiveConfig() const {
    if (!m_session)
        return m_config;
    m_session->waitForCommands();
    return m_session->effectiveConfig();
}

// The controller's config follows every edit, as the session's effective config does, so that
// Save session, Export report and the views read what the engine runs.
void TrainingController::setLossScale(double scale) {
    m_config.lossScale = scale;
    if (m_session && !keptAfterEnd({{"scaling", {{"scale", scale}}}}))
        m_session->setLossScale(scale);
}
void TrainingController::setPace(double stepsPerSecond) {
    m_pace = stepsPerSecond;
    if (m_session)
        m_session->setPace(stepsPerSecond);
}
void TrainingController::setLearningRate(double lr) {
    m_config.learningRate = lr;
    if (m_session && !keptAfterEnd({{"train", {{"lr", lr}}}}))
        m_session->setLearningRate(lr);
}
void TrainingController::setScalingPolicy(ScalingPolicy policy, double scale) {
    m_config.scalingPolicy = policy;
    m_config.lossScale = scale;
    if (m_session && !keptAfterEnd({{"scaling", m_config.toJson().at("scaling")}}))
        m_session->setScaling(m_config);
}

QString TrainingController::setRecipe(const PrecisionRecipe& recipe) {
    try {
        if (m_session)
            m_session->setRecipe(recipe); // refuses overrides of stages the model lacks
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    m_config.recipe = recipe; // the views read formats from here
    if (m_session && hasEnded(m_session->state()))
        keptAfterEnd({{"recipe", m_config.toJson().at("recipe")}});
    return {};
}

void TrainingController::append(const StepScalars& s) {
    // Thinned as the run grows, except evaluations: they are few, and the test loss and accuracy
    // curves are made of nothing else (thinning them lost all but the latest after ~4k steps).
    if (s.step % m_decimation != 0 && s.step != 1 && !s.evaluated)
        return;
    m_history.push_back(s);
    if (m_history.size() >= kHistoryCapacity) {
        std::vector<StepScalars> kept;
        kept.reserve(kHistoryCapacity / 2 + 1);
        for (std::size_t i = 0; i < m_history.size(); ++i)
            if (i % 2 == 0 || m_history[i].evaluated)
                kept.push_back(m_history[i]);
        m_history = std::move(kept);
        m_decimation *= 2;
    }
}

void TrainingController::poll() {
    if (!m_session)
        return;
    bool newScalars = false;
    while (auto s = m_session->popScalars()) {
        // Test-set evaluations are rare: never decimate them away.
        if (!std::isnan(s->testAccuracy) && !m_history.empty() &&
            m_history.back().step != s->step && s->step % m_decimation != 0)
            m_history.push_back(*s);
        else
            append(*s);
        newScalars = true;
    }
    if (newScalars)
        emit historyChanged();
    // Once the worker has taken every edit the GUI made, its effective config is the truth; a
    // version the GUI did not cause (a replayed timeline's edit) is shown.
    if (const std::uint64_t v = m_session->configVersion();
        v != m_configVersion && !m_session->commandsPending()) {
        m_configVersion = v;
        TrainConfig effective = m_session->effectiveConfig();
        effective.timeline = m_config.timeline;
        if (!(effective == m_config)) {
            m_config = std::move(effective);
            emit configChanged();
        }
    }
    if (const TrainingSnapshot* snap = m_session->latestSnapshot(); snap != nullptr) {
        const bool changed = m_latest == nullptr || snap->scalars.step != m_latestStep;
        m_latest = snap; // valid until the next poll; views read it on the GUI thread only
        m_latestStep = snap->scalars.step;
        if (snap->statsStep != m_lastFlushStep && !snap->stages.empty()) {
            m_lastFlushStep = snap->statsStep;
            FlushColumn column{snap->statsStep, {}};
            for (const StageStats& st : snap->stages) {
                const QuantStats& g = st.role(TensorRole::ActivationGradients);
                column.flushed.push_back(g.flushedShare());
            }
            m_flushHistory.push_back(std::move(column));
            if (m_flushHistory.size() >= kHistoryCapacity) {
                std::vector<FlushColumn> kept;
                for (std::size_t i = 0; i < m_flushHistory.size(); i += 2)
                    kept.push_back(std::move(m_flushHistory[i]));
                m_flushHistory = std::move(kept);
            }
        }
        if (changed)
            emit snapshotChanged();
    }
    const SessionState now = m_session->state();
    if (now != m_lastState) {
        m_lastState = now;
        if (now != SessionState::Running && now != SessionState::Paused)
            m_wantRunning = false; // finished, stopped, diverged or failed
        emit stateChanged();
        if (now == SessionState::Diverged || now == SessionState::Failed)
            emit errorOccurred(QString::fromStdString(m_session->stopReason()));
    }
}

} // namespace plab
