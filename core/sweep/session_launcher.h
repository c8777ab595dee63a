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

private:
    struct Going {
        std::size_t index;
        std::unique_ptr<TrainingSession> session;
    };
    std::vector<Going> m_going;
    std::map<std::string, std::shared_ptr<const DataSplit>> m_data; // by runDataKey
    std::string m_stopReason;
};

} // namespace plab
