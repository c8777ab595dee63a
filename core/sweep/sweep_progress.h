// SweepProgress: what a sweep's executor reports, kept for whoever asks while it runs and after:
// which runs started, which are going (with their latest step, where the launcher publishes
// steps), and how each ended. hooks() gives the executor the hooks that keep it, followed by the
// caller's own (a line on stderr, a live curve). The CLI's compare and the app's Compare
// (LiveSweep) wire the same hooks. Thread-safe: the executor's thread writes, any thread reads.
#pragma once

#include "sweep/run_launcher.h"
#include "sweep/sweep_executor.h"

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace plab {

class SweepProgress {
public:
    struct Run {
        enum class Phase { ToDo, Going, Ended };
        Phase phase = Phase::ToDo;
        double step = 0.0;         // a going run's latest step (0 until one is noted)
        std::optional<RunEnd> end; // once ended
    };
    // What the caller adds to each hook, called on the executor's thread after the progress
    // has taken the event (outside its lock).
    struct Observers {
        std::function<void(std::size_t run)> started;
        std::function<void(const RunEnd& end)> ended;
        std::function<void()> tick;
    };

    explicit SweepProgress(std::size_t runs);

    // The executor's hooks; `stop` is passed through (non-empty: stop the sweep).
    SweepExecutor::Hooks hooks(std::function<std::optional<StopRequest>()> stop,
                               Observers observers = {});
    // A going run's latest step, for launchers that publish steps (SessionLauncher).
    void noteStep(std::size_t run, double step);

    std::vector<Run> runs() const;
    // Runs that ended with this outcome.
    int ended(RunEnd::Outcome outcome) const;

private:
    mutable std::mutex m_mutex;
    std::vector<Run> m_runs;
};

} // namespace plab
