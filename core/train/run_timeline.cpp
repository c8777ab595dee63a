#include "train/run_timeline.h"

#include <utility>

namespace plab {

RunTimeline::RunTimeline(const TrainConfig& start)
    : m_effective(start), m_pending(start.timeline.begin(), start.timeline.end()) {
    // The timeline replays as the steps come; each edit lands on the replay's timeline again as
    // it is applied, so a replayed run's config.json is the one it was started from.
    m_effective.timeline.clear();
    m_replay = m_effective;
}

TrainConfig RunTimeline::recordedConfig() const {
    TrainConfig config = m_replay;
    config.timeline.insert(config.timeline.end(), m_pending.begin(), m_pending.end());
    return config;
}

std::vector<TimedEdit> RunTimeline::due(std::int64_t taken) {
    std::vector<TimedEdit> edits;
    while (!m_pending.empty() && m_pending.front().step <= taken) {
        edits.push_back(std::move(m_pending.front()));
        m_pending.pop_front();
    }
    return edits;
}

TrainConfig RunTimeline::preview(const nlohmann::json& patch) const {
    return applyEdit(m_effective, patch);
}

EditWording RunTimeline::apply(const nlohmann::json& patch, TrainConfig next, std::int64_t step,
                               const std::string& from) {
    EditWording wording = describeEdit(m_effective, next, patch);
    if (!from.empty())
        wording.message += " from " + from + " at step " + std::to_string(step);
    m_effective = std::move(next);
    m_effective.timeline.clear();
    note(step, patch);
    return wording;
}

void RunTimeline::note(std::int64_t step, nlohmann::json patch) {
    ++m_version;
    // Edits at one step are one edit (a slider dragged on a paused run makes dozens; a script's
    // boundary may take several commands): merged, they leave the config where applying them
    // one by one would.
    if (!m_replay.timeline.empty() && m_replay.timeline.back().step == step) {
        mergeConfig(m_replay.timeline.back().set, patch);
        return;
    }
    m_replay.timeline.push_back({step, std::move(patch)});
}

void RunTimeline::restart() {
    ++m_version;
    m_pending.clear();
    m_replay = m_effective; // replays from here: the edits so far are in its settings
}

namespace {
nlohmann::json editsToJson(const std::deque<TimedEdit>& edits) {
    nlohmann::json out = nlohmann::json::array();
    for (const TimedEdit& e : edits)
        out.push_back({{"step", e.step}, {"set", e.set}});
    return out;
}
} // namespace

nlohmann::json RunTimeline::checkpointJson() const {
    return {{"effective", m_effective.toJson()},
            {"replay", m_replay.toJson()},
            {"final", recordedConfig().toJson()},
            {"pending", editsToJson(m_pending)}};
}

void RunTimeline::restore(const nlohmann::json& saved) {
    ++m_version;
    m_effective = configFromJson(saved.at("effective"));
    m_effective.timeline.clear();
    m_replay = configFromJson(saved.at("replay"));
    m_pending.clear();
    for (const nlohmann::json& e : saved.at("pending"))
        m_pending.push_back({e.at("step").get<std::int64_t>(), e.at("set")});
}

} // namespace plab
