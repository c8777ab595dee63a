// TrainingSession: a TrainingRun (train/training_run.h: the MLP, the CNN or the GPT) on its own
// thread, steered by commands that take effect at step boundaries, publishing a snapshot per step
// through a triple buffer and per-step scalars through a bounded ring. The worker never waits for a
// reader; a GUI polls at its own pace.
#pragma once

#include "stats/spsc_ring.h"
#include "stats/training_snapshot.h"
#include "stats/triple_buffer.h"
#include "train/run_log.h"
#include "train/run_timeline.h"
#include "train/training_run.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace plab {

enum class SessionState { Idle, Running, Paused, Finished, Stopped, Diverged, Failed };
const char* toString(SessionState state);
// Finished, stopped, diverged or failed: the run will take no more steps (only a reset).
inline bool hasEnded(SessionState s) {
    return s == SessionState::Finished || s == SessionState::Stopped ||
           s == SessionState::Diverged || s == SessionState::Failed;
}

class TrainingSession {
public:
    // runDir empty: no run log. Throws ConfigError / DataError / RecordError (the run folder:
    // locked by another run, holding an earlier one without options.overwrite, not writable)
    // for bad settings before any thread starts. With options.resume the run goes on from the
    // folder's checkpoint (written when a run there was stopped) when it is one of this config:
    // its record continues and its steps are the ones the uninterrupted run would have taken;
    // without a usable checkpoint it starts afresh under options.overwrite, else RecordError
    // says why it cannot resume.
    TrainingSession(const TrainConfig& config, std::shared_ptr<const DataSplit> data,
                    std::string runDir = {}, const RunLogOptions& logOptions = {});
    ~TrainingSession(); // stops the worker and closes the log (summary says "stopped")
    TrainingSession(const TrainingSession&) = delete;
    TrainingSession& operator=(const TrainingSession&) = delete;

    // Commands, applied by the worker at the next step boundary.
    void start(); // run until the planned steps are done, or pause/stop
    void pause();
    void stepOnce(); // one step, then paused
    // End the run: summary written ("finished": false, reason as given or "stopped by the
    // user at step N"), the worker exits.
    void stop(std::string reason = {});
    void reset(); // fresh model from the seed, step 0, paused
    void setLearningRate(double lr);
    // An edit made after the run ended (it takes no more steps): into the replay's timeline at
    // `step`, the run's last, so that Save session holds what the window shows.
    void noteEditAfterEnd(std::int64_t step, nlohmann::json patch);
    void setLossScale(double scale);
    // Throws ConfigError (on the caller's thread) for an override of a stage the model lacks.
    void setRecipe(const PrecisionRecipe& recipe);
    void setScaling(const TrainConfig& scaling); // the scaling.* part is used
    // Training pace for watching live: at most this many steps per second while running (0: as
    // fast as it goes). Not part of the run's config: it changes when steps happen, not what
    // they compute.
    void setPace(double stepsPerSecond);

    // Reader side (one reader thread).
    const TrainingSnapshot* latestSnapshot(); // newest published, or null before the first
    std::optional<StepScalars> popScalars();
    std::uint64_t droppedScalars() const { return m_ring.dropped(); }
    SessionState state() const { return m_state.load(); }
    std::string stopReason() const;
    std::int64_t plannedSteps() const { return m_plannedSteps; }
    // The engine the run trains on ("cpu", "cuda:0 (...)") and why it is not the one asked for
    // (empty when it is). Fixed for the session's lifetime; safe from any thread.
    const std::string& deviceName() const { return m_deviceName; }
    const std::string& deviceNotice() const { return m_deviceNotice; }
    std::string runDir() const { return m_runDir; }
    // The model's stages, by name (fixed for the session's lifetime; safe from any thread).
    const std::vector<std::string>& stageNames() const { return m_stageNames; }
    // The run's effective config: the one it started from with every edit applied since
    // (learning rate, loss scale, scaling policy, recipe). A reset starts from it; safe from any
    // thread; a command takes effect here when the worker applies it.
    TrainConfig effectiveConfig() const;
    // What replays the run: the config it started from (or was last reset to) and the timeline
    // of every edit since, at the step it took effect. Save session writes it, and the run's
    // config.json holds it when the run ends. Safe from any thread.
    TrainConfig replayConfig() const;
    // Goes up by one each time effectiveConfig() changes (an edit, a replayed timeline's edit).
    std::uint64_t configVersion() const { return m_configVersion.load(); }
    // Commands posted that the worker has not taken yet.
    bool commandsPending() const;
    // Why the run record could not be written (a full disk, the folder removed); empty when it
    // could. Such a run ends Failed, keeping every whole row written before.
    std::string recordError() const;
    // How the run ended, as its summary.json says, or as it would have said where the record
    // could not be written (then: the steps the record holds whole, and why it stopped). Valid
    // once the run has ended.
    RunSummary finalSummary() const;
    // The step a resumed run went on from (0: it started at the beginning).
    std::int64_t resumedFrom() const { return m_resumedFrom; }
    // Blocks until the run is finished, stopped, diverged or failed.
    void waitUntilDone();
    // Blocks until the worker has taken every command posted before the call (at most one
    // step's wait): then effectiveConfig() and replayConfig() include them.
    void waitForCommands();

private:
    struct Command {
        enum Kind { Start, Pause, Step, Stop, Reset, LearningRate, Scale, Recipe, Scaling } kind;
        double value = 0.0;
        std::shared_ptr<const PrecisionRecipe> recipe;
        std::shared_ptr<const TrainConfig> scaling = nullptr;
        std::string text = {};
    };
    void post(Command c);
    void run(std::stop_token stop);
    void apply(const Command& c);
    // The timeline's edits that are due (their step reached) become commands, applied now.
    void applyDueEdits();
    // replayConfig() and the edits not reached: what config.json holds when the run ends.
    TrainConfig recordedConfig() const;
    void doStep();
    // The run as it stands into runDir's checkpoint (a stopped run), or the checkpoint removed
    // (a run that ended otherwise, or was reset: nothing to go on from).
    void writeCheckpoint();
    void removeCheckpoint();
    // "; its last checkpoint (step N) is kept: ..." when a failed run leaves one to resume from
    // (a full disk must not take it away), else empty.
    std::string keptCheckpointNote() const;
    void checkpointNow(); // train.checkpoint_every's: a failure is an event, not the run's end
    // runDir's checkpoint when it is one of a run started from `config` (its start or its
    // replay config); else nothing, and `why` says why not.
    std::optional<RunCheckpoint> usableCheckpoint(const TrainConfig& config,
                                                  std::string& why) const;
    void restoreSession(const RunCheckpoint& checkpoint);
    void landStatistics();
    void finish(SessionState state, const std::string& reason);
    RunSummary summaryNow(bool finished, const std::string& reason) const;
    // Runs a write to the run log; a RecordError ends the run (Failed) instead of escaping.
    template <class Write>
    bool record(Write&& write);
    void refreshSummary(); // "finished": false with the steps so far, every few seconds
    // An edit made after `step` steps (`edit` applied to the effective config): in effect, its
    // event worded as every run's (RunTimeline::apply), and in the replay's timeline.
    template <class Edit>
    void recordEdit(std::int64_t step, const nlohmann::json& patch, Edit&& edit);
    void publish(const StepScalars& scalars, bool newScalars = true);

    // The run's settings over its steps. The worker is its one writer, under m_effectiveMutex;
    // it reads it without (config()), other threads under the mutex.
    RunTimeline m_timeline;
    const TrainConfig& config() const { return m_timeline.effective(); }
    std::shared_ptr<const DataSplit> m_data;
    std::string m_runDir;
    StepScalars m_lastScalars; // of the last step published
    std::unique_ptr<TrainingRun> m_trainer;
    std::string m_deviceName, m_deviceNotice;
    std::unique_ptr<RunLog> m_log;
    std::int64_t m_plannedSteps = 0;
    int m_stageCount = 0;
    std::vector<std::string> m_stageNames;
    std::atomic<std::uint64_t> m_configVersion{0};
    mutable std::mutex m_effectiveMutex;

    mutable std::mutex m_mutex;
    std::condition_variable_any m_wake;
    std::deque<Command> m_commands;
    std::uint64_t m_posted = 0, m_taken = 0; // commands posted / applied (under m_mutex)
    std::atomic<double> m_pace{0.0};
    std::chrono::steady_clock::time_point m_lastStepAt;
    bool m_workerExited = false;
    std::condition_variable_any m_takenChanged;
    std::atomic<SessionState> m_state{SessionState::Idle};
    std::string m_stopReason, m_recordError;
    RunSummary m_finalSummary; // under m_reasonMutex
    mutable std::mutex m_reasonMutex;
    std::condition_variable m_done;
    std::mutex m_doneMutex;

    // Worker-owned bookkeeping.
    int m_pendingSteps = 0;
    std::int64_t m_lastStatsStep = 0;
    std::int64_t m_skipped = 0;
    double m_lastLoss = 0.0;
    Evaluation m_lastEval;
    std::int64_t m_lastEvalStep = 0;
    std::int64_t m_recordedSteps = 0; // the last step wholly in the run record
    std::int64_t m_resumedFrom = 0;
    std::int64_t m_checkpointStep = 0; // of the last checkpoint written or resumed from; 0: none
    double m_wallBefore = 0.0;         // a resumed run's seconds before its checkpoint
    std::chrono::steady_clock::time_point m_started, m_summaryWritten;

    TripleBuffer<TrainingSnapshot> m_snapshots;
    SpscRing<StepScalars> m_ring{4096};
    std::atomic<bool> m_anyPublished{false};

    std::jthread m_worker; // last: starts after everything above exists, joins first
};

} // namespace plab
