// SweepExecutor: runs a sweep's planned runs through a launcher, as many at once as it has
// slots, and keeps each run folder's state honest: a run done (finished, or diverged) is not run
// again; a failed one is rerun only when asked, its .failed marker saying why; a run stopped
// with the sweep stays to do; a run folder another process still writes (its lock is held: an
// earlier sweep's orphan, a Slurm task) is "running elsewhere", never started twice nor marked
// failed. The one scheduler behind the CLI's sweep and compare and the app's Compare dialog.
#pragma once

#include "sweep/run_launcher.h"
#include "sweep/sweep_run.h"

#include <functional>
#include <optional>
#include <vector>

namespace plab {

struct SweepTally {
    int started = 0, done = 0, failed = 0, stopped = 0;
    int recordFailed = 0; // of `failed`: their record could not be written (a full disk)
    int skippedDone = 0, skippedFailed = 0, runningElsewhere = 0;
    bool stopRequested = false;
};

class SweepExecutor {
public:
    struct Options {
        unsigned concurrency = 1; // runs at once
        bool resume = true;       // skip runs that are done (false: run every one again)
        bool rerunFailed = false; // run failed ones again
    };
    struct Hooks {
        std::function<void(std::size_t run)> started;
        std::function<void(const RunEnd& end)> ended;
        std::function<void()> tick;                       // every ~20 ms while runs go
        std::function<std::optional<StopRequest>()> stop; // non-empty: stop the sweep
    };

    SweepExecutor(std::vector<SweepRun> runs, Options options);
    const std::vector<SweepRun>& runs() const { return m_runs; }
    // Runs what is to do; returns when every started run has ended (or was stopped).
    SweepTally execute(RunLauncher& launcher, const Hooks& hooks = {});

private:
    std::vector<SweepRun> m_runs;
    Options m_options;
};

} // namespace plab
