// RunSteering: commands from the app's controls to an emulated run, and the run's answers.
#include "run_steering.h"

#include "record/run_commands.h"

#include <algorithm>

namespace plab {
namespace {

constexpr const char* kFrom = "the app";

bool isSteeringEvent(const std::string& type) {
    static const char* const kTypes[] = {"scale",  "policy", "recipe",  "pause",
                                         "resume", "step",   "command", "edit"};
    return std::any_of(std::begin(kTypes), std::end(kTypes),
                       [&](const char* t) { return type == t; });
}

} // namespace

std::vector<RecordedEvent> RunSteering::refresh(const RunRecord& record, std::int64_t stepsTaken) {
    m_why = whyNotSteerable(record);
    m_settingsChanged = false;
    const nlohmann::json emulate = record.meta("emulate");
    if (emulate.is_object() && emulate.contains("train_config") &&
        (emulate["train_config"] != m_recorded || stepsTaken != m_stepsTaken)) {
        const TrainConfig before = m_settings;
        const bool first = m_recorded.is_null();
        if (emulate["train_config"] != m_recorded) { // parsed only when the script rewrote it
            m_recordedConfig = configFromJson(emulate["train_config"]);
            m_recorded = emulate["train_config"];
        }
        m_settings = configAfterSteps(m_recordedConfig, stepsTaken);
        m_settingsChanged = first || !(m_settings == before);
        m_stepsTaken = stepsTaken;
    }
    std::vector<RecordedEvent> replies;
    const std::vector<RecordedEvent> events = record.events();
    for (std::size_t i = m_eventsSeen; i < events.size(); ++i) {
        const RecordedEvent& e = events[i];
        if (e.type == "pause")
            m_paused = true;
        else if (e.type == "resume")
            m_paused = false;
        if (isSteeringEvent(e.type) && !m_firstRead) // answers to this app's session only
            replies.push_back(e);
    }
    m_eventsSeen = events.size();
    m_firstRead = false;
    return replies;
}

std::string RunSteering::sendEdit(const nlohmann::json& patch) {
    try { // checked here as the script will check it: a refusal is said at once
        (void)applyEdit(m_settings, patch);
        (void)sendRunCommand(m_dir, {{"set", patch}, {"from", kFrom}});
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

std::string RunSteering::sendScale(double scale) {
    // Policy none means no loss scale: a scale chosen on the slider makes the run static, as in
    // the app's own runs.
    if (m_settings.scalingPolicy == ScalingPolicy::None)
        return sendPolicy(ScalingPolicy::Static, scale);
    return sendEdit({{"scaling", {{"scale", scale}}}});
}

std::string RunSteering::sendPolicy(ScalingPolicy policy, double scale) {
    return sendEdit({{"scaling", {{"policy", info(policy).name}, {"scale", scale}}}});
}

std::string RunSteering::sendRecipe(const PrecisionRecipe& recipe) {
    TrainConfig next = m_settings;
    next.recipe = recipe;
    return sendEdit({{"recipe", next.toJson().at("recipe")}});
}

std::string RunSteering::sendAction(const std::string& action) {
    try {
        (void)sendRunCommand(m_dir, {{"action", action}, {"from", kFrom}});
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

} // namespace plab
