// RunTimeline: a run's settings over its steps, kept one way for every run that can be changed
// while it goes (the app's TrainingSession, a PyTorch script's EmulatedRun): the config in
// effect now, what replays the run (the config it started from and each edit at the step it
// took effect), and a replayed timeline's edits still to come. A change is applied and worded
// here once (edit_wording.h), so that the same edit reads the same in every run's record.
#pragma once

#include "train/edit_wording.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace plab {

class RunTimeline {
public:
    // A run starting from `start`; start.timeline is the edits to replay, each at its step.
    explicit RunTimeline(const TrainConfig& start);

    // The config in effect: the start with every edit applied so far (its timeline empty).
    const TrainConfig& effective() const { return m_effective; }
    // What replays the run so far: the config it started from (or was last restarted from) and
    // the timeline of every edit since, at the step it took effect.
    const TrainConfig& replayConfig() const { return m_replay; }
    // replayConfig() and the edits the run has not reached (scheduled past its last step, or
    // after a stop): what its config.json holds, so that a replay with more steps makes them.
    TrainConfig recordedConfig() const;
    // The replayed timeline's edits not yet reached, in step order.
    const std::deque<TimedEdit>& pending() const { return m_pending; }

    // The replayed timeline's edits due once `taken` steps are done, in order, taken off
    // pending(): the run applies each (apply) or refuses it with an event.
    std::vector<TimedEdit> due(std::int64_t taken);
    // The config `patch` makes of the effective one; ConfigError for a patch that changes what
    // cannot change mid-run or gives a bad value. Nothing changes.
    TrainConfig preview(const nlohmann::json& patch) const;
    // `next` (what `patch` made of the effective config, as the run took it) in effect after
    // `step` steps: it becomes effective(), the patch goes onto the replay's timeline, and the
    // result is the change's event ("... from <from> at step N" when from is given).
    EditWording apply(const nlohmann::json& patch, TrainConfig next, std::int64_t step,
                      const std::string& from = {});
    // An edit made after the run ended (it takes no more steps): onto the replay's timeline at
    // `step`, the effective config left as it is.
    void note(std::int64_t step, nlohmann::json patch);
    // The run starts again from its effective config (a reset): the replay starts there, with no
    // edits, and nothing is left to replay.
    void restart();
    // The timeline as a checkpoint saved it (checkpointJson's "effective", "replay", "pending").
    void restore(const nlohmann::json& saved);
    nlohmann::json checkpointJson() const;

    // Goes up by one with every change of the replay's timeline (apply, note, restart,
    // restore): a run rewrites its config.json when it moved.
    std::uint64_t version() const { return m_version; }

private:
    TrainConfig m_effective, m_replay;
    std::deque<TimedEdit> m_pending;
    std::uint64_t m_version = 0;
};

} // namespace plab
