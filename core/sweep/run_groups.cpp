// Naming a run's group from what its folder records.
#include "sweep/run_groups.h"

#include "train/presets.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <utility>
#include <vector>

namespace plab {
namespace {

namespace fs = std::filesystem;

// What decides how a run casts: its recipe and scaling, as the config writes them.
nlohmann::json castsOf(const nlohmann::json& config) {
    const nlohmann::json j = configFromJson(config).toJson();
    return {{"recipe", j.at("recipe")}, {"scaling", j.at("scaling")}};
}

// Each preset's casts, worked out once (not once per run grouped).
const std::vector<std::pair<std::string, nlohmann::json>>& presetCasts() {
    static const std::vector<std::pair<std::string, nlohmann::json>> casts = [] {
        std::vector<std::pair<std::string, nlohmann::json>> out;
        for (const Preset& p : presets())
            out.emplace_back(p.name, castsOf(p.json));
        return out;
    }();
    return casts;
}

} // namespace

std::string runGroupName(const std::string& runDir) {
    std::ifstream in(runDir + "/config.json");
    const nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
    if (!in || !config.is_object())
        throw std::runtime_error(runDir + ": holds no run (no readable config.json)");
    if (config.contains("watch"))
        return "watched";
    const nlohmann::json* given = nullptr;
    nlohmann::json ran = config;
    if (config.contains("emulate")) {
        const nlohmann::json& e = config.at("emulate");
        if (e.contains("recipe"))
            given = &e.at("recipe");
        ran = e.value("train_config", nlohmann::json::object());
    }
    // A sweep member: its point's name, as the sweep's table names it.
    const fs::path dir = fs::path(runDir).lexically_normal();
    const fs::path leaf = dir.filename().empty() ? dir.parent_path() : dir;
    if (std::regex_match(leaf.filename().string(), std::regex("seed-[0-9]+")) &&
        fs::exists(leaf.parent_path().parent_path() / "sweep.json"))
        return leaf.parent_path().filename().string();
    try {
        const nlohmann::json casts = castsOf(ran);
        for (const auto& [name, theirs] : presetCasts())
            if (theirs == casts)
                return name;
    } catch (const std::exception&) { // a config this build does not read: named otherwise
    }
    if (given != nullptr && given->is_string())
        return fs::path(given->get<std::string>()).stem().string();
    return "recipe of " + leaf.filename().string();
}

std::vector<RunGroup> groupRuns(const std::vector<std::string>& runDirs) {
    std::vector<RunGroup> groups;
    for (const std::string& run : runDirs) {
        const std::string name = runGroupName(run);
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const RunGroup& g) { return g.name == name; });
        if (it == groups.end())
            it = groups.insert(groups.end(), RunGroup{name, {}});
        it->runs.push_back(run);
    }
    return groups;
}

} // namespace plab
