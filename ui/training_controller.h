// TrainingController: the GUI's side of a TrainingSession. It owns the session, polls it at
// ~30 Hz from its own QTimer or its owner's (the worker never waits for the GUI), keeps a bounded,
// decimated history of step scalars for the time views, and turns failures into messages for the
// window.
#pragma once

#include "flush_column.h"
#include "stats/training_snapshot.h"
#include "train/training_session.h"

#include <QObject>
#include <QString>
#include <QTimer>

#include <memory>
#include <vector>

namespace plab {

class TrainingController : public QObject {
    Q_OBJECT
public:
    // Who calls poll(): the controller's own ~30 Hz timer, or its owner's (the main window's one
    // timer reads every kind of run on show through a RunSource).
    enum class Polling { OwnTimer, ByOwner };
    explicit TrainingController(QObject* parent = nullptr, Polling polling = Polling::OwnTimer);
    ~TrainingController() override;

    // Loads the data and creates a paused session. Returns an empty string, or a one-line error
    // (bad config, missing data set) for a dialog; the previous session is kept on error.
    QString configure(const TrainConfig& config, const QString& runDir = {});

    bool hasSession() const { return m_session != nullptr; }
    // Ends the current run (its record says "stopped before the end (session closed)") and
    // leaves the controller without one, e.g. while the window shows a past run.
    void closeSession();
    // The engine the session trains on ("cpu", "cuda:0 (...)"); empty without a session.
    std::string deviceName() const { return m_session ? m_session->deviceName() : std::string(); }
    // The data of the current run (shared with the session).
    std::shared_ptr<const DataSplit> data() const { return m_data; }
    const TrainConfig& config() const { return m_config; }
    // The run's stages by name, known before its first step; empty without a session.
    std::vector<std::string> stageNames() const {
        return m_session ? m_session->stageNames() : std::vector<std::string>();
    }
    // What replays the run (Save session, Export report): its start config plus the timeline
    // of edits, once the session has taken every edit made so far.
    TrainConfig replayConfig() const;
    // The run's config with every edit made so far applied (what a Reset starts again from),
    // once the session has taken them.
    TrainConfig effectiveConfig() const;
    SessionState state() const;
    bool wantsRunning() const { return m_wantRunning; }
    std::int64_t plannedSteps() const;
    // The newest snapshot taken by the poll timer, or null before the first step.
    const TrainingSnapshot* latest() const { return m_latest; }
    // Bounded history: when it reaches kHistoryCapacity every other point is dropped, so memory
    // stays flat over long runs while the whole run remains visible.
    const std::vector<StepScalars>& history() const { return m_history; }
    static constexpr std::size_t kHistoryCapacity = 4096;
    // Per statistics step: the share of nonzero activation gradients flushed, per stage (the
    // heat map's columns); bounded and decimated like history().
    using FlushColumn = plab::FlushColumn;
    const std::vector<FlushColumn>& flushHistory() const { return m_flushHistory; }
    QString runDir() const { return m_runDir; }

public slots:
    void train();
    void pause();
    void toggleTraining();
    void step();
    void setLossScale(double scale);
    void setLearningRate(double lr);
    // Steps per second while training (0: full speed); kept for the next runs too.
    void setPace(double stepsPerSecond);
    double pace() const { return m_pace; }
    // Empty, or why the recipe was refused (then nothing changed).
    QString setRecipe(const PrecisionRecipe& recipe);
    // Switches the scaling policy at the next step, starting from `scale`.
    void setScalingPolicy(ScalingPolicy policy, double scale);
    void poll(); // also called by tests to take the newest snapshot at once

signals:
    void snapshotChanged();
    void historyChanged();
    void stateChanged();
    void errorOccurred(const QString& message);
    // The run's config changed without the GUI asking (a replayed session's timeline edit):
    // config() holds it; controls showing settings should show it.
    void configChanged();

private:
    void append(const StepScalars& s);
    // An edit made after the session ended (it takes no more): into the session's replay
    // timeline at the last step, so Save session holds what the window shows (issue 65 item
    // 29). False while the session takes edits.
    bool keptAfterEnd(const nlohmann::json& patch);

    TrainConfig m_config;
    std::shared_ptr<const DataSplit> m_data;
    std::string m_dataKey; // what m_data was made from, to reuse it on the next run
    std::unique_ptr<TrainingSession> m_session;
    const TrainingSnapshot* m_latest = nullptr;
    std::int64_t m_latestStep = -1;
    std::vector<StepScalars> m_history;
    std::vector<FlushColumn> m_flushHistory;
    std::int64_t m_lastFlushStep = -1;
    QString m_runDir;
    std::int64_t m_decimation = 1; // keep every m_decimation-th step
    SessionState m_lastState = SessionState::Idle;
    bool m_wantRunning = false; // what the user last asked for
    double m_pace = 0.0;
    std::uint64_t m_configVersion = 0; // of the session's effective config that m_config holds
    QTimer m_timer;
    Polling m_polling;
};

} // namespace plab
