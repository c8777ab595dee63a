// Sessions are polled (state(), popScalars()): the trainer never waits for the executor.
#include "sweep/session_launcher.h"

#include "train/run_data.h"

#include <thread>

namespace plab {

SessionLauncher::~SessionLauncher() {
    for (Going& g : m_going)
        g.session->stop(m_stopReason.empty() ? "stopped: the comparison was closed" : m_stopReason);
    for (Going& g : m_going)
        g.session->waitUntilDone();
}

void SessionLauncher::start(std::size_t index, const SweepRun& run) {
    const TrainConfig config = configFromJson(run.config);
    std::shared_ptr<const DataSplit>& data = m_data[runDataKey(config)];
    if (!data)
        data = loadRunData(config);
    // The executor starts only runs still to do: a stopped one goes on from its checkpoint, any
    // other (killed, never started) afresh.
    auto session = std::make_unique<TrainingSession>(
        config, data, run.dir, RunLogOptions{.overwrite = true, .resume = true});
    session->start();
    m_going.push_back({index, std::move(session)});
}

std::vector<RunEnd> SessionLauncher::collectEnded(std::chrono::milliseconds wait) {
    std::vector<RunEnd> ended;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (true) {
        for (auto it = m_going.begin(); it != m_going.end();) {
            const SessionState state = it->session->state();
            if (!hasEnded(state)) {
                ++it;
                continue;
            }
            it->session->waitUntilDone();
            RunEnd end{it->index, RunEnd::Outcome::Result, {}};
            if (state == SessionState::Stopped && !m_stopReason.empty()) {
                end.outcome = RunEnd::Outcome::Stopped;
            } else if (state == SessionState::Failed || state == SessionState::Stopped) {
                end.outcome = RunEnd::Outcome::Failed;
                end.reason = it->session->stopReason();
                end.recordFailed = !it->session->recordError().empty();
            }
            ended.push_back(std::move(end));
            it = m_going.erase(it);
        }
        if (!ended.empty() || m_going.empty() || std::chrono::steady_clock::now() >= deadline)
            return ended;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void SessionLauncher::stopAll(const StopRequest& request) {
    if (!m_stopReason.empty())
        return;
    m_stopReason =
        request.reason.rfind("stopped", 0) == 0 ? request.reason : "stopped: " + request.reason;
    for (Going& g : m_going)
        g.session->stop(m_stopReason);
}

void SessionLauncher::drainScalars(
    const std::function<void(std::size_t run, const StepScalars&)>& take) {
    for (Going& g : m_going)
        while (const std::optional<StepScalars> s = g.session->popScalars())
            take(g.index, *s);
}

void SessionLauncher::drainFlushed(
    const std::function<void(std::size_t run, double step, double share)>& take) {
    for (Going& g : m_going) {
        const TrainingSnapshot* s = g.session->latestSnapshot();
        if (s == nullptr || s->statsStep <= g.flushedStep)
            continue;
        g.flushedStep = s->statsStep;
        if (const double share = meanFlushedActivationGradients(s->stages); !std::isnan(share))
            take(g.index, static_cast<double>(s->statsStep), share);
    }
}

} // namespace plab
