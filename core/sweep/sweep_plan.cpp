#include "sweep_plan.h"

#include "sweep/script_sweep.h"

#include "data/dataset.h"
#include "numerics/format_spec.h"
#include "train/presets.h"
#include "train/run_config_builder.h"
#include "train/train_config.h"
#include "util/bounded_read.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace plab {

namespace {

// The config with every "format" named as the built-in format of the same parameters, so that
// two spellings of one format ("e5m10" and "fp16", "e4m3:fn" and "fp8-e4m3") compare equal.
nlohmann::json canonicalFormats(nlohmann::json j) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            if (it.key() == "format" && it->is_string()) {
                try {
                    const FormatSpec f = parseFormat(it->get<std::string>());
                    for (const FormatSpec& named : namedFormats())
                        if (named.sameParameters(f)) {
                            *it = named.name;
                            break;
                        }
                } catch (const std::exception&) { // not an element format: as it is
                }
            } else {
                *it = canonicalFormats(*it);
            }
        }
    } else if (j.is_array()) {
        for (nlohmann::json& v : j)
            v = canonicalFormats(v);
    }
    return j;
}

} // namespace

std::string gridValueText(const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

namespace {

// "fp32 with data.source=/x/a-b": a point as the options gave it.
std::string describePoint(const SweepPoint& p, const Sweep& sweep) {
    std::string text = p.preset;
    for (std::size_t k = 0; k < p.values.size(); ++k)
        text += (k == 0 ? " with " : ", ") + sweep.grid[k].first + "=" + gridValueText(p.values[k]);
    return text;
}

} // namespace

std::string SweepPoint::name(const Sweep& sweep) const {
    std::string n = preset;
    for (std::size_t k = 0; k < values.size(); ++k)
        n += "_" + sweep.grid[k].first + "=" + gridValueText(values[k]);
    for (char& c : n)
        if (c == '/' || c == ' ' || c == '"')
            c = '-';
    return n;
}

std::vector<std::string> SweepPoint::settings(const Sweep& sweep) const {
    std::vector<std::string> out;
    for (std::size_t k = 0; k < values.size(); ++k)
        out.push_back(sweep.grid[k].first + "=" + values[k].dump());
    return out;
}

nlohmann::json Sweep::toJson() const {
    nlohmann::json g = nlohmann::json::array();
    for (const auto& [key, values] : grid)
        g.push_back({{"key", key}, {"values", values}});
    nlohmann::json j = {{"presets", presets}, {"seeds", seeds},      {"grid", g},
                        {"set", sets},        {"steps", steps},      {"epochs", epochs},
                        {"data", data},       {"baseline", baseline}};
    if (isScript()) {
        j["command"] = command;
        j["recipes"] = recipes;
        j["higher_is_better"] = higherIsBetter;
    }
    return j;
}

Sweep Sweep::fromJson(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object())
        throw std::invalid_argument(where + ": not a JSON object (expected a sweep.json)");
    // What a launcher keeps beside the sweep (backend, its options) is not the sweep's; any other
    // key is a typo that would otherwise be ignored.
    for (const auto& [key, value] : j.items())
        if (key != "presets" && key != "seeds" && key != "grid" && key != "set" && key != "steps" &&
            key != "epochs" && key != "data" && key != "baseline" && key != "backend" &&
            key != "slurm" && key != "command" && key != "recipes" && key != "higher_is_better")
            throw std::invalid_argument(where + ": unknown key \"" + key +
                                        "\" (expected presets, seeds, grid, set, steps, epochs, "
                                        "data, baseline, command, recipes, higher_is_better, "
                                        "backend, slurm)");
    // Each field's type, named with its key (the library's own text names neither).
    const auto expect = [&](const char* key, bool ok, const char* what) {
        if (j.contains(key) && !ok)
            throw std::invalid_argument(where + ": " + key + ": expected " + what + ", got " +
                                        j.at(key).dump().substr(0, 60));
    };
    const auto stringArray = [&](const char* key) {
        const nlohmann::json& v = j.contains(key) ? j.at(key) : nlohmann::json::array();
        return v.is_array() && std::all_of(v.begin(), v.end(),
                                           [](const nlohmann::json& e) { return e.is_string(); });
    };
    if (!j.contains("presets"))
        throw std::invalid_argument(where +
                                    ": presets: missing (expected an array of preset names)");
    expect("presets", stringArray("presets"), "an array of preset names");
    expect("set", stringArray("set"), "an array of key.path=value strings");
    expect("seeds", j.value("seeds", nlohmann::json(1)).is_number_integer(), "a whole number");
    expect("steps", j.value("steps", nlohmann::json(1)).is_number_integer(), "a whole number");
    expect("epochs", j.value("epochs", nlohmann::json(1)).is_number_integer(), "a whole number");
    expect("data", j.value("data", nlohmann::json("")).is_string(), "a data source name");
    expect("baseline", j.value("baseline", nlohmann::json("")).is_string(), "a preset name");
    expect("grid", j.value("grid", nlohmann::json::array()).is_array(),
           "an array of {\"key\", \"values\"}");
    expect("command", stringArray("command"), "an array of the command's arguments");
    expect("higher_is_better", stringArray("higher_is_better"), "an array of metric names");
    expect("recipes", j.value("recipes", nlohmann::json::object()).is_object(),
           "an object of recipe name -> {\"source\", \"document\"}");
    Sweep s;
    try {
        s.presets = j.at("presets").get<std::vector<std::string>>();
        s.seeds = j.value("seeds", 1);
        for (const nlohmann::json& g : j.value("grid", nlohmann::json::array())) {
            if (!g.is_object() || !g.contains("key") || !g.at("key").is_string() ||
                !g.contains("values") || !g.at("values").is_array())
                throw std::invalid_argument(where +
                                            ": grid: expected {\"key\": \"a.path\", "
                                            "\"values\": [...]}, got " +
                                            g.dump().substr(0, 60));
            s.grid.emplace_back(g.at("key").get<std::string>(),
                                g.at("values").get<std::vector<nlohmann::json>>());
            if (s.grid.back().second.empty())
                throw std::invalid_argument(where + ": grid key \"" + s.grid.back().first +
                                            "\" has no values");
        }
        s.sets = j.value("set", std::vector<std::string>{});
        s.steps = j.value("steps", std::int64_t{300});
        s.epochs = j.value("epochs", 0);
        s.data = j.value("data", std::string());
        s.baseline = j.value("baseline", std::string("fp32"));
        s.command = j.value("command", std::vector<std::string>{});
        s.recipes = j.value("recipes", nlohmann::json::object());
        s.higherIsBetter = j.value("higher_is_better", std::vector<std::string>{});
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(where + ": " + e.what());
    }
    if (s.presets.empty() || s.seeds < 1)
        throw std::invalid_argument(where + ": nothing to run (expected presets and seeds >= 1)");
    if (s.seeds > kMaxSweepSeeds)
        throw std::invalid_argument(where + ": seeds " + std::to_string(s.seeds) +
                                    ": expected at most " + std::to_string(kMaxSweepSeeds) +
                                    " per grid point");
    return s;
}

Sweep readSweepFile(const std::string& path, nlohmann::json* whole) {
    std::string text;
    switch (readBounded(path, std::size_t{16} << 20, text)) {
    case BoundedRead::Ok:
        break;
    case BoundedRead::IsADirectory:
        throw std::invalid_argument(path + ": is a directory (expected a sweep.json)");
    case BoundedRead::TooLarge:
        throw std::invalid_argument(path + ": larger than 16 MiB (a sweep.json is a few KB)");
    case BoundedRead::CannotOpen:
    case BoundedRead::CannotRead:
        throw std::invalid_argument(path + ": cannot read the sweep file");
    }
    nlohmann::json j;
    try { // strictly, as configs are read: a key given twice is refused, not last-one-wins
        j = parseConfigText(text, path);
    } catch (const ConfigError& e) {
        throw std::invalid_argument(e.what());
    }
    if (whole != nullptr)
        *whole = j;
    return Sweep::fromJson(j, path);
}

std::vector<SweepPoint> Sweep::points() const {
    std::vector<SweepPoint> out;
    for (const std::string& preset : presets) {
        std::vector<std::size_t> at(grid.size(), 0);
        for (;;) {
            SweepPoint p{preset, {}};
            for (std::size_t k = 0; k < at.size(); ++k)
                p.values.push_back(grid[k].second[at[k]]);
            out.push_back(p);
            std::size_t k = 0;
            while (k < at.size() && ++at[k] == grid[k].second.size())
                at[k++] = 0;
            if (k == at.size())
                break;
        }
    }
    return out;
}

nlohmann::json Sweep::runConfigJson(const SweepPoint& p, int seed) const {
    if (isScript())
        return {{"script", {{"recipe", p.preset}, {"seed", seed}}}};
    RunConfigParts parts;
    parts.preset = p.preset;
    parts.settings = sets;
    for (const std::string& s : p.settings(*this))
        parts.settings.push_back(s);
    parts.seed = seed;
    if (epochs > 0)
        parts.epochs = epochs;
    else
        parts.steps = steps;
    parts.threads = 1;
    parts.data = data;
    return buildRunConfigJson(parts);
}

void Sweep::check() const {
    if (presets.empty() || seeds < 1)
        throw std::invalid_argument("sweep: nothing to run (expected presets and --seeds >= 1)");
    // The baseline must be one of the points' presets, or no verdict could be taken against it
    // (checked after the presets themselves: an unknown preset is the error to name first).
    const auto checkBaseline = [&] {
        if (std::find(presets.begin(), presets.end(), baseline) == presets.end())
            throw std::invalid_argument("sweep: --baseline " + baseline + " is not among the " +
                                        (isScript() ? "recipes (expected one of --recipes)"
                                                    : "presets (expected one of --presets)"));
    };
    if (isScript()) {
        checkBaseline();
        return checkScriptSweep(*this);
    }
    // What the sweep sets itself in every run's config: given as a setting it would be dropped
    // without a word (every run of `--grid seed=7,8` ran seed 1).
    const auto refuseOwnKey = [](const std::string& option, const std::string& key) {
        const char* instead = key == "seed" ? "--seeds N (seeds 1..N)"
                              : key == "train.steps" || key == "train.epochs"
                                  ? "--steps or --epochs"
                              : key == "threads" ? "--cpus-per-task on Slurm (a local sweep "
                                                   "runs each run on one thread)"
                                                 : nullptr;
        if (instead != nullptr)
            throw std::invalid_argument("sweep: " + option + " " + key +
                                        ": the sweep sets it in every run; use " + instead);
    };
    for (const auto& [key, values] : grid)
        refuseOwnKey("--grid", key);
    for (const std::string& set : sets)
        refuseOwnKey("--set", set.substr(0, set.find('=')));
    for (const std::string& p : presets) {
        try {
            findPreset(p);
        } catch (const ConfigError& e) {
            throw std::invalid_argument(std::string("sweep: ") + e.what());
        }
    }
    // A point twice would train two runs into one folder and report both failed.
    for (std::size_t i = 0; i < presets.size(); ++i)
        for (std::size_t k = 0; k < i; ++k)
            if (presets[i] == presets[k])
                throw std::invalid_argument("sweep: preset " + presets[i] +
                                            " is listed twice (--presets); each point runs once");
    checkBaseline();
    for (std::size_t g = 0; g < grid.size(); ++g) {
        for (std::size_t h = 0; h < g; ++h)
            if (grid[g].first == grid[h].first)
                throw std::invalid_argument("sweep: --grid " + grid[g].first +
                                            " is given twice; put its values in one --grid");
        // Each value as the config it makes (formats in their canonical spelling, 2^k as its
        // number): two values making one config are one point under two names.
        const auto& [key, values] = grid[g];
        std::vector<nlohmann::json> made;
        for (const nlohmann::json& v : values) {
            nlohmann::json j = findPreset(presets.front()).json;
            try {
                applySetting(j, key + "=" + v.dump());
                made.push_back(canonicalFormats(configFromJson(j).toJson()));
            } catch (const ConfigError& e) {
                throw std::invalid_argument("sweep: --grid " + key + "=" + gridValueText(v) + ": " +
                                            e.what());
            }
        }
        for (std::size_t i = 0; i < values.size(); ++i)
            for (std::size_t k = 0; k < i; ++k)
                if (values[i] == values[k] || made[i] == made[k])
                    throw std::invalid_argument(
                        "sweep: --grid " + key + " lists " + gridValueText(values[k]) +
                        (values[i] == values[k] ? " twice (2^k and its number are one value)"
                                                : " and " + gridValueText(values[i]) +
                                                      ", one setting under two names") +
                        "; each point runs once");
    }
    // Two points whose folder names agree would train into one folder ('/', ' ' and '"' become
    // '-' in a name): refused, naming both.
    {
        const std::vector<SweepPoint> all = points();
        for (std::size_t i = 0; i < all.size(); ++i)
            for (std::size_t k = 0; k < i; ++k)
                if (all[i].name(*this) == all[k].name(*this))
                    throw std::invalid_argument(
                        "sweep: the points " + describePoint(all[k], *this) + " and " +
                        describePoint(all[i], *this) + " both make the folder name " +
                        all[i].name(*this) + " ('/', spaces and quotes become '-'): make the " +
                        "values differ in other characters");
    }
    // The data every run reads must be there: one missing folder would fail every child.
    if (!data.empty() && data != "synthetic" && data != "fortunes") {
        const std::string path = data == "fashion-mnist"       ? std::string(kFashionMnistDir)
                                 : data.rfind("text:", 0) == 0 ? data.substr(5)
                                                               : data;
        if (!std::filesystem::exists(path))
            throw std::invalid_argument(
                "sweep: --data " + data + ": " + path + " does not exist" +
                (data == "fashion-mnist" ? " (apt-get install dataset-fashion-mnist)" : ""));
    }
    // Every run's whole config (the settings on top of each preset) before any child starts.
    for (const SweepPoint& p : points()) {
        try {
            configFromJson(runConfigJson(p, 1));
        } catch (const ConfigError& e) {
            throw std::invalid_argument("sweep: " + p.name(*this) + ": " + e.what());
        }
    }
}

nlohmann::json gridValue(const std::string& text) {
    if (text.size() > 2 && text.size() < 8 && text.starts_with("2^")) {
        const std::string k = text.substr(2);
        const bool digits =
            k.find_first_not_of("0123456789", k[0] == '-' ? 1 : 0) == std::string::npos && k != "-";
        // 2^k beyond a double's range stays text (the config names it; it was echoed as null)
        if (digits && std::isfinite(std::ldexp(1.0, std::stoi(k))) &&
            std::ldexp(1.0, std::stoi(k)) != 0.0)
            return std::ldexp(1.0, std::stoi(k));
    }
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? nlohmann::json(text) : j;
}

std::pair<std::string, std::vector<nlohmann::json>> parseGridOption(const std::string& option) {
    const auto eq = option.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == option.size())
        throw std::invalid_argument("sweep: --grid \"" + option +
                                    "\": expected key.path=value1,value2,...");
    std::vector<nlohmann::json> values;
    const std::string rest = option.substr(eq + 1);
    for (std::size_t start = 0;;) {
        const auto comma = rest.find(',', start);
        values.push_back(gridValue(rest.substr(start, comma - start)));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return {option.substr(0, eq), std::move(values)};
}

std::string runDiffersFromPlan(const std::string& runDir, const nlohmann::json& planned) {
    if (planned.contains("script")) // the script's record: its folder is the sweep's alone
        return {};
    try {
        TrainConfig recorded = configFromJson(readConfigFile(runDir + "/config.json"));
        const TrainConfig wanted = configFromJson(planned);
        recorded.threads = wanted.threads;
        recorded.device = wanted.device;
        if (recorded == wanted)
            return {};
        const std::string change = describeConfigChange(recorded.toJson(), wanted.toJson());
        return change.empty() ? "its config.json differs from the sweep's" : change;
    } catch (const std::exception& e) {
        return e.what();
    }
}

namespace {

// A run folder's summary.json (a null JSON when missing or unreadable).
nlohmann::json runSummary(const std::string& runDir) {
    std::ifstream in(runDir + "/summary.json");
    if (!in)
        return {};
    const nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
    return s.is_object() ? s : nlohmann::json();
}

bool isResult(const nlohmann::json& summary) {
    return summary.is_object() &&
           (summary.value("finished", false) ||
            summary.value("stop_reason", std::string()).rfind("diverged", 0) == 0);
}

} // namespace

bool runEndedWithResult(const std::string& runDir) {
    return isResult(runSummary(runDir));
}

SweepRunState sweepRunState(const std::string& runDir, const nlohmann::json& planned) {
    if (std::ifstream(failedMarker(runDir)))
        return SweepRunState::Failed;
    const nlohmann::json s = runSummary(runDir);
    if (!s.is_object())
        return SweepRunState::ToRun;
    if (isResult(s))
        return runDiffersFromPlan(runDir, planned).empty() ? SweepRunState::Done
                                                           : SweepRunState::ToRun;
    const std::string reason = s.value("stop_reason", std::string());
    if (reason == "running" || reason.rfind("ended without writing its summary", 0) == 0 ||
        reason.rfind("interrupted", 0) == 0 || reason.rfind("stopped", 0) == 0)
        return SweepRunState::ToRun; // killed, interrupted: the sweep was stopped, not the run
    return SweepRunState::Failed;
}

} // namespace plab
