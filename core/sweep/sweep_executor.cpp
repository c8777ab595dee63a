// The executor's loop: start while slots are free, collect what ended, mark it, stop once.
#include "sweep/sweep_executor.h"

#include "record/record_file.h"
#include "train/run_checkpoint.h"

#include <algorithm>
#include <filesystem>

namespace plab {

SweepExecutor::SweepExecutor(std::vector<SweepRun> runs, Options options)
    : m_runs(std::move(runs)), m_options(options) {
    m_options.concurrency = std::max(1u, m_options.concurrency);
}

SweepTally SweepExecutor::execute(RunLauncher& launcher, const Hooks& hooks) {
    SweepTally tally;
    const auto record = [&](const RunEnd& end) {
        const SweepRun& r = m_runs.at(end.run);
        switch (end.outcome) {
        case RunEnd::Outcome::Result:
            ++tally.done;
            break;
        case RunEnd::Outcome::Stopped:
            ++tally.stopped; // its summary says stopped or interrupted: to do on resume
            break;
        case RunEnd::Outcome::Failed:
            // Refused because another process had taken the folder after this one looked (two
            // sweeps into one folder): that run is the other's, never marked failed here (its
            // finished run was reported failed beside its own summary).
            if (end.reason.find(kRunDirectoryLockedMessage) != std::string::npos) {
                ++tally.runningElsewhere;
                break;
            }
            ++tally.failed;
            tally.recordFailed += end.recordFailed;
            writeFileAtomically(failedMarker(r.dir), end.reason + "\n");
            break;
        }
        if (hooks.ended)
            hooks.ended(end);
    };
    const auto collect = [&](std::chrono::milliseconds wait) {
        for (const RunEnd& end : launcher.collectEnded(wait))
            record(end);
        if (hooks.tick)
            hooks.tick();
    };
    const auto stopAsked = [&] {
        if (tally.stopRequested || !hooks.stop)
            return tally.stopRequested;
        if (const std::optional<StopRequest> request = hooks.stop()) {
            tally.stopRequested = true;
            launcher.stopAll(*request); // once: a second signal would end a child unsummarised
        }
        return tally.stopRequested;
    };

    for (std::size_t i = 0; i < m_runs.size() && !stopAsked(); ++i) {
        const SweepRun& r = m_runs[i];
        if (runDirectoryLocked(r.dir)) {
            ++tally.runningElsewhere;
            continue;
        }
        if (m_options.resume) {
            const SweepRunState state = sweepRunState(r.dir, r.config);
            if (state == SweepRunState::Done) {
                ++tally.skippedDone;
                continue;
            }
            if (state == SweepRunState::Failed && !m_options.rerunFailed) {
                ++tally.skippedFailed;
                continue;
            }
        }
        while (launcher.going() >= m_options.concurrency && !stopAsked())
            collect(std::chrono::milliseconds(20));
        if (stopAsked())
            break;
        std::error_code ec;
        std::filesystem::create_directories(std::filesystem::path(r.dir).parent_path(), ec);
        std::filesystem::remove(failedMarker(r.dir), ec);
        if (!m_options.resume) // the sweep is run anew: nothing of an earlier one goes on
            std::filesystem::remove(std::filesystem::path(r.dir) / kCheckpointFile, ec);
        try {
            launcher.start(i, r);
        } catch (const std::exception& e) {
            record({i, RunEnd::Outcome::Failed, std::string("not started: ") + e.what()});
            continue;
        }
        ++tally.started;
        if (hooks.started)
            hooks.started(i);
    }
    while (launcher.going() > 0) {
        stopAsked();
        collect(std::chrono::milliseconds(20));
    }
    return tally;
}

} // namespace plab
