// LiveSweep: a sweep trained or read on a thread of its own, for a view that polls it (the app's
// Compare dialog, on its timer; widgets stay passive). Training goes through the one executor
// with in-process sessions (SessionLauncher) and SweepProgress's hooks, so each run's loss and
// flushed-share curves grow live; as a run ends its curves are replaced by its record's and the
// results are collected anew. Reading takes a sweep folder's runs as they are. A view copies
// out what it draws under one lock; the thread never waits on it.
#pragma once

#include "sweep/sweep_executor.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_results.h"

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace plab {

class LiveSweep {
public:
    struct RunCurves {
        std::size_t point = 0;
        std::vector<std::pair<double, double>> loss;    // (step, training loss), every step
        std::vector<std::pair<double, double>> flushed; // statistics steps
    };
    struct GoingRun {
        std::size_t point = 0;
        int seed = 0;
        double step = 0.0; // its latest step
    };
    struct Status {
        bool training = false;   // false: a folder read
        std::size_t planned = 0; // the sweep's runs
        int done = 0; // training: runs ended (then, at the end, done); reading: found done
        std::vector<GoingRun> going;
        // Reading: the runs stopped before their end, as "<point>/seed-<k> (<steps> steps)".
        std::vector<std::string> stoppedEarly;
        std::optional<SweepTally> tally; // training: once the executor returned
        std::string error;               // what ended the thread early (one line), else empty
    };

    LiveSweep() = default;
    LiveSweep(const LiveSweep&) = delete;
    LiveSweep& operator=(const LiveSweep&) = delete;
    ~LiveSweep(); // stops a training and waits for the thread

    // Trains what `sweep` has still to do in `folder` (claimed for the local backend, so that
    // `precision-lab-cli sweep --file <folder>/sweep.json` resumes it; done runs are kept),
    // `concurrency` runs at once. The runs stop() stops record `stopReason` (it starts with
    // "stopped"). Waits for an earlier thread first.
    void train(const Sweep& sweep, const std::string& folder, unsigned concurrency,
               std::string stopReason);
    // Reads the sweep's runs in `folder` as they are: curves, results, what is done.
    void read(const Sweep& sweep, const std::string& folder);
    // Stops a training: the going runs end "stopped" and stay to do; nothing new starts.
    void stop();
    bool running() const { return m_running.load(); }
    // Read running() first: once it is false, these hold everything the thread wrote.
    Status status() const;
    std::vector<RunCurves> curves() const;
    // The results collected since the last call, if any.
    std::optional<SweepResults> takeResults();

private:
    void start(bool training, const Sweep& sweep, std::function<void(std::stop_token)> work);
    void trainRuns(const std::stop_token& stop, const Sweep& sweep, const std::string& folder,
                   unsigned concurrency, const std::string& stopReason);
    void readRuns(const Sweep& sweep, const std::string& folder);

    mutable std::mutex m_mutex;
    Status m_status;                     // guarded by m_mutex
    std::vector<RunCurves> m_curves;     // guarded by m_mutex
    std::optional<SweepResults> m_fresh; // guarded by m_mutex
    std::atomic<bool> m_running{false};
    std::jthread m_thread;
};

} // namespace plab
