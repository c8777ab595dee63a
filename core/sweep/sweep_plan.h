// A sweep as data: presets x grid values x seeds, what sweep.json holds, and the layout of its
// folder: DIR/sweep.json, DIR/<point>/seed-<k> (one run record each), DIR/<point>/seed-<k>.failed
// (why a run failed). Shared by the CLI's `sweep` (local or Slurm) and the app's Compare dialog,
// so that either resumes, collects or shows the other's sweeps.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace plab {

// Seeds per grid point (each one a run: more is a typo, and the plan alone would fill memory).
inline constexpr int kMaxSweepSeeds = 1000;

struct Sweep;

// One grid point: a preset and one value per grid key.
struct SweepPoint {
    std::string preset;
    std::vector<nlohmann::json> values; // in grid order
    // A folder name: "fp16-amp_train.lr=0.05" ('/', ' ' and '"' replaced by '-').
    std::string name(const Sweep& sweep) const;
    // "key=value" settings, the values as JSON.
    std::vector<std::string> settings(const Sweep& sweep) const;
};

struct Sweep {
    std::vector<std::string> presets = {"fp32"};
    int seeds = 1; // at most kMaxSweepSeeds
    std::vector<std::pair<std::string, std::vector<nlohmann::json>>> grid;
    std::vector<std::string> sets; // key.path=value applied to every run
    std::int64_t steps = 300;
    int epochs = 0; // instead of steps when > 0
    std::string data;
    std::string baseline = "fp32";
    // A sweep of the user's own script (`sweep --recipes R,... -- COMMAND`, sweep/script_sweep.h):
    // the command, run once per recipe and seed; `presets` then holds the recipes' names (a
    // preset, an alias, a recipe file's stem). Empty: the core's own runs.
    std::vector<std::string> command;
    // A script sweep's recipes as resolved when it was made, by name: {"source": what was given,
    // "document": the config document} or {"source", "error": why it did not resolve}; so that a
    // resumed sweep runs what it planned, and a recipe that did not resolve fails its runs alone.
    nlohmann::json recipes = nlohmann::json::object();
    // A script sweep's metrics where higher is better (the others are judged lower is better).
    std::vector<std::string> higherIsBetter;
    bool isScript() const { return !command.empty(); }

    nlohmann::json toJson() const;
    // Throws std::invalid_argument naming `where` and the field.
    static Sweep fromJson(const nlohmann::json& j, const std::string& where);

    // Presets in order, each with every combination of grid values (the first key fastest).
    std::vector<SweepPoint> points() const;
    std::string runFolder(const std::string& dir, const SweepPoint& p, int seed) const {
        return dir + "/" + p.name(*this) + "/seed-" + std::to_string(seed);
    }
    // The config a run of the sweep trains with, by the one builder (train/run_config_builder.h):
    // the preset, the sweep's settings, the point's, the seed, steps or epochs, one thread, data.
    // A script sweep's run: {"script": {"recipe": name, "seed": seed}} (what the child is given).
    nlohmann::json runConfigJson(const SweepPoint& p, int seed) const;
    // Refuses an unknown preset or a grid value the config rejects, before anything runs
    // (std::invalid_argument naming the preset or `--grid key=value`).
    void check() const;
};

// A sweep.json; std::invalid_argument naming the file when it cannot be read or is not one.
// `whole`, when given, gets the file's JSON (with what a launcher keeps beside the sweep).
Sweep readSweepFile(const std::string& path, nlohmann::json* whole = nullptr);

// A grid value from its text: JSON when it parses ("0.01", "true"), 2^k as the number, else text.
nlohmann::json gridValue(const std::string& text);
// "key.path=v1,v2,..." as the key and its values; std::invalid_argument when malformed.
std::pair<std::string, std::vector<nlohmann::json>> parseGridOption(const std::string& option);
// A value as folder names and tables show it: a string without quotes, anything else as JSON.
std::string gridValueText(const nlohmann::json& v);

// What a run folder holds: done (finished, or ended early with a result: diverged), to run (never
// started, killed, interrupted; or its run trained other settings than `planned`, the config the
// sweep gives it: an edited sweep.json), or failed (DIR.failed says why; rerun on request).
enum class SweepRunState { Done, ToRun, Failed };
SweepRunState sweepRunState(const std::string& runDir, const nlohmann::json& planned);
// How the run in runDir differs from `planned` ("train.steps: 30 -> 40"; threads and device
// aside, which choose where it runs, not what it learns); empty when it trained the same config.
std::string runDiffersFromPlan(const std::string& runDir, const nlohmann::json& planned);
// Whether runDir's run ended with a result (finished, or diverged), whatever its settings.
bool runEndedWithResult(const std::string& runDir);
inline std::string failedMarker(const std::string& runDir) {
    return runDir + ".failed";
}

} // namespace plab
