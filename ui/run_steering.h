// RunSteering: the app's side of steering an emulated PyTorch run through its record
// (core/record/run_commands.h). The run on show says at each poll whether it takes commands now
// (an emulated run whose script still writes it, in a folder the app may write) and why not;
// the controls send their commands through send(); the script's answers are the steering events
// it records, which refresh() hands back once each.
#pragma once

#include "record/run_record.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace plab {

class RunSteering {
public:
    explicit RunSteering(std::string dir) : m_dir(std::move(dir)) {}

    // Reads the record again: whether it takes commands, the settings its script uses now (its
    // recipe and timeline up to the last recorded step) and the steering events it recorded since
    // the last call, which it returns.
    std::vector<RecordedEvent> refresh(const RunRecord& record, std::int64_t stepsTaken);
    bool steerable() const { return m_why.empty(); }
    const std::string& whyNot() const { return m_why; }
    bool paused() const { return m_paused; }
    // The run's settings now (for the recipe dock and the policy box), and whether they changed
    // at the last refresh.
    const TrainConfig& settings() const { return m_settings; }
    // The config the run started from, with its timeline of edits so far.
    const TrainConfig& recordedConfig() const { return m_recordedConfig; }
    bool settingsChanged() const { return m_settingsChanged; }

    // The commands the controls send. Each returns the error (one line naming the run), or
    // empty: the script applies it at its next step boundary.
    std::string sendScale(double scale);
    std::string sendPolicy(ScalingPolicy policy, double scale);
    std::string sendRecipe(const PrecisionRecipe& recipe);
    std::string sendAction(const std::string& action); // pause, resume, step

private:
    std::string sendEdit(const nlohmann::json& patch);
    std::string m_dir;
    std::string m_why = "not read yet";
    TrainConfig m_settings, m_recordedConfig;
    nlohmann::json m_recorded; // the recorded train_config the settings were made from
    std::int64_t m_stepsTaken = -1;
    bool m_settingsChanged = false, m_paused = false;
    std::size_t m_eventsSeen = 0;
    bool m_firstRead = true; // the events before the app opened the run are history, not answers
};

} // namespace plab
