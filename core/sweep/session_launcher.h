// Runs a sweep's runs as training sessions in this process (the app's Compare dialog, which draws
// each run's loss live from its scalars). Data sets are loaded once per distinct data config and
// shared by the runs that use it. A run stopped with the sweep ends with the reason the stop
// gave ("stopped: ..."), so its folder stays to do for a resume.
#pragma once

#include "sweep/run_launcher.h"
#include "train/training_session.h"

#include <functional>
#include <map>
#include <memory>

namespace plab {

class SessionLauncher : public RunLauncher {
public:
    SessionLauncher() = default;
    ~SessionLauncher() override; // stops what still runs

    void start(std::size_t index, const SweepRun& run) override;
    std::vector<RunEnd> collectEnded(std::chrono::milliseconds wait) override;
    void stopAll(const StopRequest& request) override;
    std::size_t going() const override { return m_going.size(); }

    // The scalars each going run has published since the last call, in step order.
    void drainScalars(const std::function<void(std::size_t run, const StepScalars&)>& take);
    // Each going run's newest statistics step not passed on yet: its step and the mean share
    // of activation gradients flushed (meanFlushedActivationGradients), so that the curve
    // draws live (the snapshots in between are not kept: a live curve thins, the record's
    // curve replaces it when the run ends).
    void drainFlushed(const std::function<void(std::size_t run, double step, double share)>& take);

private:
    struct Going {
        std::size_t index;
        std::unique_ptr<TrainingSession> session;
        std::int64_t flushedStep = 0; // the statistics step drainFlushed passed on last
    };
    std::vector<Going> m_going;
    std::map<std::string, std::shared_ptr<const DataSplit>> m_data; // by runDataKey
    std::string m_stopReason;
};

} // namespace plab
