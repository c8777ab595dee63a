#include "sweep/live_sweep.h"

#include "record/run_record.h"
#include "sweep/session_launcher.h"
#include "sweep/sweep_progress.h"
#include "sweep/sweep_run.h"

#include <algorithm>
#include <exception>
#include <filesystem>

namespace plab {

LiveSweep::~LiveSweep() {
    m_thread.request_stop();
    if (m_thread.joinable())
        m_thread.join();
}

void LiveSweep::start(bool training, const Sweep& sweep,
                      std::function<void(std::stop_token)> work) {
    m_thread.request_stop();
    if (m_thread.joinable())
        m_thread.join();
    {
        std::lock_guard lock(m_mutex);
        m_status = Status{};
        m_status.training = training;
        m_status.planned = sweep.points().size() * static_cast<std::size_t>(sweep.seeds);
        m_curves.clear();
        m_fresh.reset();
    }
    m_running = true;
    m_thread = std::jthread([this, work = std::move(work)](std::stop_token stop) {
        try {
            work(stop);
        } catch (const std::exception& e) { // the view shows it; the thread must not die
            std::lock_guard lock(m_mutex);
            m_status.error = e.what();
        }
        m_running = false; // after the last write: a reader that sees false sees them all
    });
}

void LiveSweep::train(const Sweep& sweep, const std::string& folder, unsigned concurrency,
                      std::string stopReason) {
    start(true, sweep,
          [this, sweep, folder, concurrency, reason = std::move(stopReason)](std::stop_token stop) {
              trainRuns(stop, sweep, folder, concurrency, reason);
          });
}

void LiveSweep::read(const Sweep& sweep, const std::string& folder) {
    start(false, sweep, [this, sweep, folder](std::stop_token) { readRuns(sweep, folder); });
}

void LiveSweep::stop() {
    m_thread.request_stop();
}

LiveSweep::Status LiveSweep::status() const {
    std::lock_guard lock(m_mutex);
    return m_status;
}

std::vector<LiveSweep::RunCurves> LiveSweep::curves() const {
    std::lock_guard lock(m_mutex);
    return m_curves;
}

std::optional<SweepResults> LiveSweep::takeResults() {
    std::lock_guard lock(m_mutex);
    std::optional<SweepResults> fresh;
    fresh.swap(m_fresh);
    return fresh;
}

void LiveSweep::trainRuns(const std::stop_token& stop, const Sweep& sweep,
                          const std::string& folder, unsigned concurrency,
                          const std::string& stopReason) {
    claimSweepFolder(folder, sweep, {{"backend", "local"}});
    // The runs, their folders and configs as the CLI's sweep plans them; the one executor runs
    // them here as sessions, so that their curves grow live.
    const std::vector<SweepRun> planned = planSweepRuns(sweep, folder);
    {
        std::lock_guard lock(m_mutex);
        for (const SweepRun& r : planned)
            m_curves.push_back({r.point, {}, {}});
    }
    SessionLauncher sessions;
    SweepProgress progress(planned.size());
    SweepExecutor executor(planned, {std::max(1u, concurrency), /*resume=*/true,
                                     /*rerunFailed=*/false});
    RunMetricsCache metrics; // each run's record is analysed once, as it ends
    // The going runs and the count ended, from the progress the hooks keep.
    auto noteGoing = [&] {
        std::vector<GoingRun> going;
        int done = 0;
        const std::vector<SweepProgress::Run> runs = progress.runs();
        for (std::size_t i = 0; i < runs.size(); ++i) {
            if (runs[i].phase == SweepProgress::Run::Phase::Going)
                going.push_back({planned[i].point, planned[i].seed, runs[i].step});
            done += runs[i].phase == SweepProgress::Run::Phase::Ended ? 1 : 0;
        }
        std::lock_guard lock(m_mutex);
        m_status.going = std::move(going);
        m_status.done = done;
    };
    SweepProgress::Observers observers;
    observers.started = [&](std::size_t) { noteGoing(); };
    observers.ended = [&](const RunEnd& end) {
        // The record is whole now: the run's curves and metrics by the one analysis, the
        // results anew.
        const std::string& dir = planned[end.run].dir;
        const RunAnalysis a = analyseRun(RunRecord(dir));
        metrics[dir] = readRunMetrics(dir, a);
        SweepResults results = collectSweep(sweep, folder, &metrics);
        {
            std::lock_guard lock(m_mutex);
            m_curves[end.run].loss = a.loss;
            m_curves[end.run].flushed = a.flushedActGrads;
            m_fresh = std::move(results);
        }
        noteGoing();
    };
    observers.tick = [&] {
        {
            std::lock_guard lock(m_mutex);
            sessions.drainScalars([&](std::size_t run, const StepScalars& sc) {
                m_curves[run].loss.emplace_back(static_cast<double>(sc.step), sc.loss);
                progress.noteStep(run, static_cast<double>(sc.step));
            });
            sessions.drainFlushed([&](std::size_t run, double step, double share) {
                m_curves[run].flushed.emplace_back(step, share);
            });
        }
        noteGoing();
    };
    const auto stopAsked = [&]() -> std::optional<StopRequest> {
        if (!stop.stop_requested())
            return std::nullopt;
        return StopRequest{0, stopReason};
    };
    const SweepTally tally =
        executor.execute(sessions, progress.hooks(stopAsked, std::move(observers)));
    SweepResults results = collectSweep(sweep, folder, &metrics);
    noteGoing();
    std::lock_guard lock(m_mutex);
    m_fresh = std::move(results);
    m_status.tally = tally;
    m_status.done = tally.done + tally.skippedDone;
}

void LiveSweep::readRuns(const Sweep& sweep, const std::string& folder) {
    std::vector<RunCurves> curves;
    RunMetricsCache metrics;
    int done = 0;
    std::vector<std::string> stopped; // runs stopped before their end: curves, not metrics
    for (const SweepRun& r : planSweepRuns(sweep, folder)) {
        const bool isDone = sweepRunState(r.dir, r.config) == SweepRunState::Done;
        if (!isDone && !(std::filesystem::exists(r.dir + "/summary.json") &&
                         std::filesystem::exists(r.dir + "/run.sqlite")))
            continue;
        const RunAnalysis a = analyseRun(RunRecord(r.dir));
        curves.push_back({r.point, a.loss, a.flushedActGrads});
        if (isDone) {
            ++done;
            metrics[r.dir] = readRunMetrics(r.dir, a);
        } else {
            stopped.push_back(
                r.relative + " (" +
                std::to_string(a.loss.empty() ? 0 : static_cast<long long>(a.loss.back().first)) +
                " steps)");
        }
    }
    SweepResults results = collectSweep(sweep, folder, &metrics);
    std::lock_guard lock(m_mutex);
    m_status.done = done;
    m_status.stoppedEarly = std::move(stopped);
    m_curves = std::move(curves);
    m_fresh = std::move(results);
}

} // namespace plab
