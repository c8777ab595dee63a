// TrainingSession worker loop.
#include "train/training_session.h"

#include "train/edit_wording.h"

#include <chrono>
#include <cmath>
#include <filesystem>

namespace plab {

const char* toString(SessionState state) {
    switch (state) {
    case SessionState::Idle:
        return "idle";
    case SessionState::Running:
        return "running";
    case SessionState::Paused:
        return "paused";
    case SessionState::Finished:
        return "finished";
    case SessionState::Stopped:
        return "stopped";
    case SessionState::Diverged:
        return "diverged";
    case SessionState::Failed:
        return "failed";
    }
    return "?";
}

TrainingSession::TrainingSession(const TrainConfig& start, std::shared_ptr<const DataSplit> data,
                                 std::string runDir, const RunLogOptions& logOptions)
    : m_timeline(start), m_data(std::move(data)), m_runDir(std::move(runDir)) {
    std::optional<RunCheckpoint> checkpoint;
    std::string notResumed;
    if (logOptions.resume && !m_runDir.empty())
        checkpoint = usableCheckpoint(start, notResumed);
    if (logOptions.resume && !checkpoint && !logOptions.overwrite)
        throw RecordError(m_runDir + ": cannot resume: " + notResumed);
    if (checkpoint) {
        // Whatever goes wrong reading it (a part missing or not fitting this run, configs no
        // longer valid, histories cut short) is the checkpoint's, named by its path.
        const auto ofCheckpoint = [&](const std::exception& e) {
            return RecordError(m_runDir + "/" + kCheckpointFile + ": " + e.what());
        };
        try {
            restoreSession(*checkpoint); // the configs and edits as they stood at its step
        } catch (const std::exception& e) {
            throw ofCheckpoint(e);
        }
        m_trainer = makeTrainingRun(config(), m_data);
        try {
            m_trainer->restoreState(*checkpoint);
        } catch (const std::exception& e) {
            throw ofCheckpoint(e);
        }
    } else {
        m_trainer = makeTrainingRun(config(), m_data);
    }
    m_plannedSteps = m_trainer->plannedSteps();
    m_stageCount = m_trainer->stageCount();
    m_stageNames = m_trainer->stageNames();
    // A timeline recipe for a stage this model lacks is bad input now, not a refusal mid-run.
    TrainConfig state = config();
    const std::deque<TimedEdit>& replayed = m_timeline.pending();
    for (std::size_t i = 0; i < replayed.size(); ++i) {
        state = applyEdit(state, replayed[i].set);
        try {
            checkRecipeStages(state.recipe, m_stageCount, config().model.type == "gpt");
        } catch (const ConfigError& e) {
            std::string what = e.what();
            if (what.rfind("config.", 0) == 0)
                what = what.substr(7);
            throw ConfigError("config.timeline[" + std::to_string(i) + "].set." + what);
        }
    }
    m_deviceName = m_trainer->deviceName();
    m_deviceNotice = m_trainer->deviceNotice();
    if (checkpoint)
        m_checkpointStep = m_resumedFrom;
    if (!m_runDir.empty() && checkpoint)
        m_log = std::make_unique<RunLog>(
            m_runDir, config(), m_stageNames,
            RecordContinuation{checkpoint->header.at("session").at("attempt").get<std::int64_t>(),
                               m_resumedFrom});
    else if (!m_runDir.empty())
        m_log = std::make_unique<RunLog>(m_runDir, config(), m_stageNames, logOptions);
    m_started = m_summaryWritten = std::chrono::steady_clock::now();
    m_worker = std::jthread([this](std::stop_token stop) { run(stop); });
}

TrainingSession::~TrainingSession() {
    m_worker.request_stop();
    m_wake.notify_all();
    if (m_worker.joinable())
        m_worker.join();
    const SessionState s = m_state.load();
    if (m_log &&
        (s == SessionState::Idle || s == SessionState::Running || s == SessionState::Paused)) {
        std::string why = "stopped before the end (session closed)";
        try {
            writeCheckpoint();
        } catch (const std::exception& e) {
            why += std::string("; no checkpoint to resume from: ") + e.what();
        }
        try {
            m_log->writeSummary(summaryNow(false, why));
            m_log->writeReplayConfig(recordedConfig());
            m_log->close();
        } catch (...) {
            // A destructor must not throw; the summary keeps "finished": false.
        }
    }
}

void TrainingSession::post(Command c) {
    {
        std::lock_guard lock(m_mutex);
        m_commands.push_back(std::move(c));
        ++m_posted;
    }
    m_wake.notify_all();
}

void TrainingSession::waitForCommands() {
    std::unique_lock lock(m_mutex);
    const std::uint64_t target = m_posted;
    m_takenChanged.wait(lock, [&] { return m_taken >= target || m_workerExited; });
}

void TrainingSession::start() {
    post({Command::Start, 0.0, nullptr});
}
void TrainingSession::pause() {
    post({Command::Pause, 0.0, nullptr});
}
void TrainingSession::stepOnce() {
    post({Command::Step, 0.0, nullptr});
}
void TrainingSession::stop(std::string reason) {
    post({Command::Stop, 0.0, nullptr, nullptr, std::move(reason)});
}
void TrainingSession::reset() {
    post({Command::Reset, 0.0, nullptr});
}
void TrainingSession::setLearningRate(double lr) {
    post({Command::LearningRate, lr, nullptr});
}
void TrainingSession::setLossScale(double scale) {
    post({Command::Scale, scale, nullptr});
}
void TrainingSession::setScaling(const TrainConfig& scaling) {
    post({Command::Scaling, 0.0, nullptr, std::make_shared<const TrainConfig>(scaling)});
}
void TrainingSession::setPace(double stepsPerSecond) {
    m_pace = stepsPerSecond > 0 ? stepsPerSecond : 0.0;
    m_wake.notify_all();
}
void TrainingSession::setRecipe(const PrecisionRecipe& recipe) {
    // Refused here, on the caller's thread.
    checkRecipeStages(recipe, m_stageCount, config().model.type == "gpt");
    post({Command::Recipe, 0.0, std::make_shared<const PrecisionRecipe>(recipe)});
}

const TrainingSnapshot* TrainingSession::latestSnapshot() {
    if (!m_anyPublished.load(std::memory_order_acquire))
        return nullptr;
    m_snapshots.take();
    return &m_snapshots.front();
}

std::optional<StepScalars> TrainingSession::popScalars() {
    return m_ring.pop();
}

std::string TrainingSession::stopReason() const {
    std::lock_guard lock(m_reasonMutex);
    return m_stopReason;
}

TrainConfig TrainingSession::effectiveConfig() const {
    std::lock_guard lock(m_effectiveMutex);
    return m_timeline.effective();
}

TrainConfig TrainingSession::replayConfig() const {
    std::lock_guard lock(m_effectiveMutex);
    return m_timeline.replayConfig();
}

TrainConfig TrainingSession::recordedConfig() const {
    std::lock_guard lock(m_effectiveMutex);
    return m_timeline.recordedConfig();
}

void TrainingSession::noteEditAfterEnd(std::int64_t step, nlohmann::json patch) {
    std::lock_guard lock(m_effectiveMutex);
    m_timeline.note(step, std::move(patch));
}

void TrainingSession::applyDueEdits() {
    std::vector<TimedEdit> due;
    {
        std::lock_guard lock(m_effectiveMutex);
        due = m_timeline.due(m_trainer->stepsTaken());
    }
    for (const TimedEdit& edit : due) {
        const nlohmann::json& patch = edit.set;
        TrainConfig next;
        try { // checked when the config was read; a stage count may still refuse a recipe
            next = m_timeline.preview(patch);
        } catch (const ConfigError& e) {
            record([&](RunLog& log) {
                log.logEvent(m_trainer->stepsTaken(), "edit",
                             std::string("timeline edit refused: ") + e.what(), patch);
            });
            continue;
        }
        for (auto it = patch.begin(); it != patch.end(); ++it) {
            if (it.key() == "train")
                apply({Command::LearningRate, next.learningRate, nullptr});
            else if (it.key() == "scaling" && setsOnlyTheScale({{"scaling", *it}}))
                apply({Command::Scale, next.lossScale, nullptr});
            else if (it.key() == "scaling")
                apply({Command::Scaling, 0.0, nullptr, std::make_shared<const TrainConfig>(next)});
            else if (it.key() == "recipe")
                apply({Command::Recipe, 0.0, std::make_shared<const PrecisionRecipe>(next.recipe)});
        }
    }
}

template <class Edit>
void TrainingSession::recordEdit(std::int64_t step, const nlohmann::json& patch, Edit&& edit) {
    TrainConfig next = config();
    edit(next);
    EditWording wording;
    {
        std::lock_guard lock(m_effectiveMutex);
        wording = m_timeline.apply(patch, std::move(next), step);
    }
    ++m_configVersion;
    record([&](RunLog& log) { log.logEvent(step, wording.type, wording.message, patch); });
}

bool TrainingSession::commandsPending() const {
    std::lock_guard lock(m_mutex);
    return m_taken < m_posted;
}

RunSummary TrainingSession::finalSummary() const {
    std::lock_guard lock(m_reasonMutex);
    return m_finalSummary;
}

std::string TrainingSession::recordError() const {
    std::lock_guard lock(m_reasonMutex);
    return m_recordError;
}

template <class Write>
bool TrainingSession::record(Write&& write) {
    if (!m_log)
        return true;
    try {
        write(*m_log);
        m_log->commit(); // one transaction per call: a step is wholly recorded or not at all
        return true;
    } catch (const RecordError& e) {
        {
            std::lock_guard lock(m_reasonMutex);
            if (m_recordError.empty())
                m_recordError = e.what();
        }
        // One try to say so in the summary (a failed row was cut back, so a full disk may have
        // room for it), then nothing more is written; what was written stays whole.
        try {
            m_log->writeSummary(summaryNow(false, std::string("failed: the run record could not "
                                                              "be written: ") +
                                                      e.what() + keptCheckpointNote()));
            m_log->commit();
        } catch (const std::exception&) {
        }
        m_log.reset();
        return false;
    }
}

RunSummary TrainingSession::summaryNow(bool finished, const std::string& reason) const {
    RunSummary summary;
    summary.finished = finished;
    summary.stopReason = reason;
    // Once the record has failed, the steps it holds whole: those are the ones to cite.
    summary.steps = recordError().empty() ? m_trainer->stepsTaken() : m_recordedSteps;
    summary.skippedSteps = m_skipped;
    if (summary.steps > 0)
        summary.finalTrainLoss = m_lastLoss;
    if (m_lastEvalStep > 0) { // else never measured: null, not 0
        summary.testLoss = m_lastEval.loss;
        summary.testAccuracy = m_lastEval.accuracy;
    }
    summary.wallSeconds =
        m_wallBefore +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
    summary.samplesPerSecond =
        summary.wallSeconds > 0
            ? static_cast<double>(summary.steps) * config().batchSize / summary.wallSeconds
            : 0.0;
    return summary;
}

void TrainingSession::refreshSummary() {
    const auto now = std::chrono::steady_clock::now();
    if (!m_log || now - m_summaryWritten < std::chrono::seconds(2))
        return;
    m_summaryWritten = now;
    record([&](RunLog& log) { log.writeSummary(summaryNow(false, "running")); });
}

void TrainingSession::waitUntilDone() {
    std::unique_lock lock(m_doneMutex);
    m_done.wait(lock, [this] { return hasEnded(m_state.load()); });
}

void TrainingSession::apply(const Command& c) {
    const std::int64_t step = m_trainer->stepsTaken();
    switch (c.kind) {
    case Command::Start:
        m_state = SessionState::Running;
        break;
    case Command::Pause:
        m_pendingSteps = 0;
        landStatistics();
        m_state = SessionState::Paused;
        break;
    case Command::Step:
        ++m_pendingSteps;
        break;
    case Command::Stop:
        finish(SessionState::Stopped, c.text.empty()
                                          ? "stopped by the user at step " + std::to_string(step)
                                          : c.text + " at step " + std::to_string(step));
        break;
    case Command::Reset:
        m_trainer = makeTrainingRun(config(), m_data);
        m_pendingSteps = 0;
        m_skipped = 0;
        m_state = SessionState::Paused;
        {
            std::lock_guard lock(m_effectiveMutex);
            m_timeline.restart();
        }
        record([&](RunLog& log) {
            log.logEvent(step, "reset", "model re-initialised from the seed");
            log.startNewAttempt();
        });
        removeCheckpoint(); // of the attempt before
        break;
    // Every edit goes into the timeline's effective config, the run's one: a reset starts from it
    // and effectiveConfig() (what a saved session or report holds) is it.
    case Command::LearningRate:
        m_trainer->setLearningRate(c.value);
        recordEdit(step, {{"train", {{"lr", c.value}}}},
                   [&](TrainConfig& e) { e.learningRate = c.value; });
        break;
    case Command::Scale:
        m_trainer->setLossScale(c.value);
        recordEdit(step, {{"scaling", {{"scale", c.value}}}},
                   [&](TrainConfig& e) { e.lossScale = c.value; });
        break;
    case Command::Scaling: {
        m_trainer->setScaling(*c.scaling);
        TrainConfig next = config();
        next.setScalingFrom(*c.scaling);
        recordEdit(step, {{"scaling", next.toJson().at("scaling")}},
                   [&](TrainConfig& e) { e.setScalingFrom(*c.scaling); });
        break;
    }
    case Command::Recipe: {
        TrainConfig next = config();
        next.recipe = *c.recipe;
        try {
            m_trainer->setRecipe(*c.recipe);
        } catch (const ConfigError& e) { // checked by setRecipe() already; never ends a run
            record([&](RunLog& log) {
                log.logEvent(step, "recipe", std::string("recipe change refused: ") + e.what());
            });
            break;
        }
        record([&](RunLog& log) { log.setRecipe(next); });
        recordEdit(step, {{"recipe", next.toJson().at("recipe")}},
                   [&](TrainConfig& e) { e.recipe = *c.recipe; });
        break;
    }
    }
}

void TrainingSession::publish(const StepScalars& scalars, bool newScalars) {
    TrainingSnapshot& back = m_snapshots.back();
    back.scalars = scalars;
    back.statsStep = m_lastStatsStep;
    back.stageNames = m_trainer->stageNames();
    back.stages = m_trainer->completedStats(); // a GPU's may be a step behind the scalars
    back.sample = m_lastEval.sample;
    back.sampleStep = m_lastEvalStep;
    m_snapshots.publish();
    m_anyPublished.store(true, std::memory_order_release);
    if (newScalars)
        m_ring.push(scalars);
    m_lastScalars = scalars;
}

// Statistics still on their way from the device land now (the run stops or pauses): they are
// logged and published with the last step's scalars.
void TrainingSession::landStatistics() {
    if (!m_trainer->flushStatistics())
        return;
    m_lastStatsStep = m_trainer->statsStep();
    record([&](RunLog& log) { log.logStats(m_lastStatsStep, m_trainer->completedStats()); });
    publish(m_lastScalars, false);
}

void TrainingSession::doStep() {
    StepResult r = m_trainer->step();
    StepScalars& s = r.scalars;
    if (r.statsCollected)
        m_lastStatsStep = r.statsStep;
    if (s.skipped)
        ++m_skipped;
    m_lastLoss = s.loss;
    const bool lastStep = s.step >= m_plannedSteps;
    const std::int64_t perEpoch = m_trainer->stepsPerEpoch();
    const bool evalDue = config().evalEvery > 0 ? s.step % config().evalEvery == 0
                                                : (perEpoch > 0 && s.step % perEpoch == 0);
    if (evalDue || lastStep) {
        m_lastEval = m_trainer->evaluate();
        m_lastEvalStep = s.step;
        s.evaluated = true;
        s.testLoss = m_lastEval.loss;
        s.testAccuracy = m_lastEval.accuracy;
    }
    const bool recorded = record([&](RunLog& log) {
        log.logStep(s);
        if (r.statsCollected)
            log.logStats(r.statsStep, m_trainer->completedStats());
        if (!r.event.empty())
            log.logEvent(s.step, r.diverged ? "divergence" : (s.skipped ? "skip" : "scale"),
                         r.event);
        if (s.evaluated && !m_lastEval.sample.empty()) // what a text model writes, to cite
            log.logEvent(s.step, "sample", m_lastEval.sample);
    });
    publish(s);
    if (!recorded)
        return; // run() ends the run
    m_recordedSteps = s.step;
    if (!r.diverged && !lastStep && config().checkpointEvery > 0 &&
        s.step % config().checkpointEvery == 0)
        checkpointNow();
    if (r.diverged)
        finish(SessionState::Diverged,
               "diverged at step " + std::to_string(s.step) + ": " + r.event);
    else if (lastStep)
        finish(SessionState::Finished, "completed");
    else
        refreshSummary();
}

void TrainingSession::finish(SessionState state, const std::string& reason) {
    // Never throws: it ends the worker's run, also when the run failed or its record did.
    std::string why = reason;
    try {
        if (state != SessionState::Failed)
            landStatistics();
        if (state != SessionState::Finished && m_trainer->stepsTaken() > 0 && m_log) {
            m_lastEval = m_trainer->evaluate();
            m_lastEvalStep = m_trainer->stepsTaken();
        }
    } catch (const std::exception& e) {
        state = SessionState::Failed;
        why += std::string("; then failed: ") + e.what();
    }
    // A stopped run can go on from here (train --resume, a resumed sweep). A failed one keeps
    // the last checkpoint it wrote (checkpoint_every): a full disk must not take away the step
    // a resume goes on from. A finished or diverged run leaves nothing to go on from.
    try {
        if (state == SessionState::Stopped && m_log)
            writeCheckpoint();
        else if (state != SessionState::Failed)
            removeCheckpoint();
        else
            why += keptCheckpointNote();
    } catch (const std::exception& e) {
        why += std::string("; no checkpoint to resume from: ") + e.what();
    }
    RunSummary summary = summaryNow(state == SessionState::Finished, why);
    const bool recorded = record([&](RunLog& log) {
        log.logEvent(summary.steps, "end", why);
        log.writeSummary(summary);
        log.writeReplayConfig(recordedConfig());
        log.commit();
        log.close(); // the CSV/JSONL exports; ended runs record nothing more
    });
    if (!recorded && state != SessionState::Failed) {
        state = SessionState::Failed;
        why += "; the run record could not be written: " + recordError();
    }
    if (!recorded) // what the file could not take: the steps the record holds, and why
        summary = summaryNow(false, why);
    {
        std::lock_guard lock(m_reasonMutex);
        m_stopReason = why;
        m_finalSummary = summary;
    }
    {
        std::lock_guard lock(m_doneMutex);
        m_state = state;
    }
    m_done.notify_all();
}

void TrainingSession::run(std::stop_token stop) {
    try {
        if (m_resumedFrom > 0)
            record([&](RunLog& log) {
                log.logEvent(m_resumedFrom, "resume",
                             "resumed from the checkpoint of step " +
                                 std::to_string(m_resumedFrom) + " on " + m_deviceName);
            });
        else
            record([](RunLog& log) { log.logEvent(0, "start", "session created"); });
        while (!stop.stop_requested()) {
            std::deque<Command> commands;
            {
                std::unique_lock lock(m_mutex);
                const auto busy = [&] {
                    const SessionState s = m_state.load();
                    return s == SessionState::Running || m_pendingSteps > 0;
                };
                if (m_commands.empty() && !busy())
                    m_wake.wait(lock, stop, [&] { return !m_commands.empty(); });
                // A paced run waits for its next step's time; a command ends the wait at once.
                if (const double pace = m_pace.load();
                    pace > 0 && m_commands.empty() && m_state.load() == SessionState::Running) {
                    const auto due =
                        m_lastStepAt +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(1.0 / pace));
                    if (std::chrono::steady_clock::now() < due) {
                        m_wake.wait_until(lock, stop, due, [&] { return !m_commands.empty(); });
                        continue;
                    }
                }
                commands.swap(m_commands);
            }
            for (const Command& c : commands) {
                if (hasEnded(m_state.load()) && c.kind != Command::Reset)
                    continue;
                apply(c);
            }
            if (!commands.empty()) {
                {
                    std::lock_guard lock(m_mutex);
                    m_taken += commands.size();
                }
                m_takenChanged.notify_all();
            }
            if (!recordError().empty() && !hasEnded(m_state.load())) {
                finish(SessionState::Failed,
                       "the run record could not be written: " + recordError());
                continue;
            }
            const SessionState s = m_state.load();
            if (s == SessionState::Running ||
                (m_pendingSteps > 0 && s != SessionState::Stopped && s != SessionState::Finished &&
                 s != SessionState::Diverged)) {
                const bool single = s != SessionState::Running && m_pendingSteps > 0;
                if (single)
                    --m_pendingSteps;
                applyDueEdits();
                m_lastStepAt = std::chrono::steady_clock::now();
                doStep();
                if (!recordError().empty() && !hasEnded(m_state.load())) {
                    finish(SessionState::Failed,
                           "the run record could not be written: " + recordError());
                    continue;
                }
                // Paused only once the step's snapshot is published: a reader that waits for
                // Paused must find the step it asked for (TSan timing exposed the old order).
                if (single && m_pendingSteps == 0 && m_state.load() == s) {
                    landStatistics();
                    m_state = SessionState::Paused;
                }
            }
        }
    } catch (const std::exception& e) {
        finish(SessionState::Failed, std::string("failed: ") + e.what());
    }
    {
        std::lock_guard lock(m_mutex);
        m_workerExited = true;
    }
    m_takenChanged.notify_all();
}

void TrainingSession::writeCheckpoint() {
    if (m_runDir.empty())
        return;
    if (m_trainer->stepsTaken() == 0) { // nothing to go on from
        removeCheckpoint();
        return;
    }
    RunCheckpoint checkpoint;
    checkpoint.header["session"] = {
        {"step", m_trainer->stepsTaken()},
        {"attempt", m_log ? m_log->attempt() : 0},
        {"device", m_deviceName},
        {"skipped", m_skipped},
        {"last_loss", std::isfinite(m_lastLoss) ? nlohmann::json(m_lastLoss) : nullptr},
        {"wall_seconds",
         m_wallBefore +
             std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count()}};
    {
        std::lock_guard lock(m_effectiveMutex);
        checkpoint.header["session"].update(m_timeline.checkpointJson());
    }
    m_trainer->saveState(checkpoint);
    checkpoint.write(m_runDir + "/" + kCheckpointFile);
    m_checkpointStep = m_trainer->stepsTaken();
}

std::string TrainingSession::keptCheckpointNote() const {
    if (m_runDir.empty() || m_checkpointStep == 0 ||
        !std::filesystem::exists(m_runDir + "/" + kCheckpointFile))
        return {};
    return "; its last checkpoint (step " + std::to_string(m_checkpointStep) +
           ") is kept: train --resume goes on from it";
}

void TrainingSession::checkpointNow() {
    if (!m_log)
        return;
    // A device's statistics still on their way are logged first, as at a stop: the checkpoint
    // reads the run's tensors after the device's queued work.
    landStatistics();
    try {
        writeCheckpoint();
    } catch (const std::exception& e) { // a full disk: the run goes on, the record says so
        record([&](RunLog& log) {
            log.logEvent(m_trainer->stepsTaken(), "checkpoint",
                         std::string("no checkpoint written: ") + e.what());
        });
    }
}

void TrainingSession::removeCheckpoint() {
    if (m_runDir.empty())
        return;
    std::error_code ec;
    std::filesystem::remove(m_runDir + "/" + kCheckpointFile, ec);
    m_checkpointStep = 0;
}

std::optional<RunCheckpoint> TrainingSession::usableCheckpoint(const TrainConfig& config,
                                                               std::string& why) const {
    const std::string path = m_runDir + "/" + kCheckpointFile;
    if (!std::filesystem::exists(path)) {
        why = "it holds no checkpoint (" + std::string(kCheckpointFile) +
              ": a run leaves one when it is stopped, not when it is killed or has ended)";
        return std::nullopt;
    }
    try {
        RunCheckpoint checkpoint = RunCheckpoint::read(path);
        const nlohmann::json& session = checkpoint.header.at("session");
        // The run's start (the edits made on it go on with it), or what replays it so far or
        // to its end (its config.json).
        const nlohmann::json asked = config.toJson();
        TrainConfig started = configFromJson(session.at("replay"));
        started.timeline.clear();
        if (started.toJson() != asked && session.at("replay") != asked &&
            session.at("final") != asked) {
            TrainConfig askedStart = config;
            askedStart.timeline.clear();
            const std::string change = describeConfigChange(started.toJson(), askedStart.toJson());
            why = "its checkpoint is of another config" + (change.empty() ? "" : ": " + change);
            return std::nullopt;
        }
        return checkpoint;
    } catch (const std::exception& e) {
        why = e.what();
        return std::nullopt;
    }
}

void TrainingSession::restoreSession(const RunCheckpoint& checkpoint) {
    const nlohmann::json& session = checkpoint.header.at("session");
    {
        std::lock_guard lock(m_effectiveMutex);
        m_timeline.restore(session);
    }
    m_resumedFrom = m_recordedSteps = session.at("step").get<std::int64_t>();
    m_skipped = session.at("skipped").get<std::int64_t>();
    m_lastLoss =
        session.at("last_loss").is_null() ? std::nan("") : session.at("last_loss").get<double>();
    m_wallBefore = session.at("wall_seconds").get<double>();
}

} // namespace plab
