// How a sweep's runs are started and watched: as child processes (the CLI, a Slurm task) or as
// sessions in this process (the app's Compare, which draws their curves live). The executor
// (sweep_executor.h) decides what runs when; a launcher only starts, watches and stops.
#pragma once

#include "sweep/sweep_run.h"

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace plab {

struct RunEnd {
    enum class Outcome {
        Result,  // completed, or ended early with a result (diverged): done
        Stopped, // stopped with the sweep: still to do (its summary says so)
        Failed,  // no result; `reason` says why, for the run's .failed marker
    };
    std::size_t run = 0; // the index given to start()
    Outcome outcome = Outcome::Failed;
    std::string reason;
    bool recordFailed = false; // Failed because its record could not be written (a full disk)
};

struct StopRequest {
    int signal = 0;     // a child is passed this signal (0: SIGTERM)
    std::string reason; // an in-process session's stop reason (starts with "stopped")
};

class RunLauncher {
public:
    virtual ~RunLauncher() = default;
    // Starts run `index`; throws std::runtime_error when it cannot be started.
    virtual void start(std::size_t index, const SweepRun& run) = 0;
    // The runs that ended within `wait` (at most that long; empty when none did).
    virtual std::vector<RunEnd> collectEnded(std::chrono::milliseconds wait) = 0;
    // Stops every run going, once each; they end as Stopped through collectEnded().
    virtual void stopAll(const StopRequest& request) = 0;
    virtual std::size_t going() const = 0;
};

} // namespace plab
