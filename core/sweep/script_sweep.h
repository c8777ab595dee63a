// A sweep of the user's own training script: `sweep --recipes fp32,fp8-current,advice.json
// --seeds 5 --out DIR -- python3 train.py ...` runs the command (an argv, never a shell line)
// once per recipe and seed through the one executor (sweep_executor.h), each child told its run
// folder, recipe and seed by environment variables that precision_lab.torch reads
// (app/python/precision_lab/_sweep.py); the table compares the script's final loss and its own
// metrics (step(metrics={...})) as sweeps of the core's runs compare theirs.
#pragma once

#include "sweep/child_process_launcher.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_run.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace plab {

// What a child of a script sweep is told (docs/training.md, "Your own script").
inline constexpr const char* kSweepRunDirVariable = "PLAB_SWEEP_RUN_DIR";
inline constexpr const char* kSweepRecipeVariable = "PLAB_SWEEP_RECIPE"; // a JSON file's path
inline constexpr const char* kSweepRecipeNameVariable = "PLAB_SWEEP_RECIPE_NAME";
inline constexpr const char* kSweepSeedVariable = "PLAB_SWEEP_SEED";

// The recipes given to --recipes, resolved once: a preset by its name ({"preset": P}); a
// framework recipe the advisor names (fp8-current, fp8-delayed, mxfp8, fp8-block) as the
// advisor judges it (train/recipe_candidates.h); anything else a recipe JSON file (an advice), by
// its file name's stem. Sets sweep.presets to the names and sweep.recipes to what they resolved
// to; a file that cannot be read or parsed is kept with its error (its runs fail, the others
// run). Throws std::invalid_argument when two recipes take one name.
void resolveScriptRecipes(Sweep& sweep, const std::vector<std::string>& given);

// A script sweep's own checks (Sweep::check calls it): a command, recipes resolved for every
// name, none of the options that shape the core's runs (grid, set, epochs, data).
void checkScriptSweep(const Sweep& sweep);

// Beside a member's run folder: the recipe file its child reads, and the script's stdout.
inline std::string scriptRecipePath(const SweepRun& run) {
    return run.dir + ".recipe.json";
}
inline std::string scriptStdoutPath(const SweepRun& run) {
    return run.dir + ".stdout.log";
}

// Why a run whose script exited 0 holds no result (empty when it does): it recorded no step,
// its record did not finish, its last loss or a metric's last value is not a number.
std::string scriptRunProblem(const std::string& runDir);

// The user's command for each run, found in PATH before the fork (a command not found fails its
// run saying so); stopped with SIGINT (Python's KeyboardInterrupt: the record's summary is
// written), sent to its process group (its data loaders too).
class ScriptChildCommand : public ChildCommand {
public:
    explicit ScriptChildCommand(const Sweep& sweep) : m_sweep(sweep) {}
    ChildSpec prepare(const SweepRun& run) const override;
    std::string failure(const SweepRun& run, int code,
                        const std::string& stderrPath) const override;
    int stopSignal() const override;
    bool stopsGroup() const override { return true; }

private:
    Sweep m_sweep;
};

} // namespace plab
