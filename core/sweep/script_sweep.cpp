// Resolving a script sweep's recipes, and running and judging its children.
#include "sweep/script_sweep.h"

#include "record/record_file.h"
#include "record/run_record_schema.h"
#include "record/run_summary.h"
#include "record/sqlite_db.h"
#include "train/presets.h"
#include "train/recipe_candidates.h"
#include "util/bounded_read.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace plab {
namespace {

namespace fs = std::filesystem;

bool isPreset(const std::string& name) {
    const std::vector<Preset>& all = presets();
    return std::any_of(all.begin(), all.end(), [&](const Preset& p) { return p.name == name; });
}

// A recipe file's content as a config document, or why it is not one.
nlohmann::json recipeFile(const std::string& path) {
    std::string text;
    switch (readBounded(path, std::size_t{16} << 20, text)) {
    case BoundedRead::Ok:
        break;
    case BoundedRead::IsADirectory:
        return {{"source", path}, {"error", path + ": is a folder (expected a recipe JSON file)"}};
    case BoundedRead::TooLarge:
        return {{"source", path}, {"error", path + ": larger than 16 MiB (not a recipe)"}};
    case BoundedRead::CannotOpen:
    case BoundedRead::CannotRead:
        return {{"source", path},
                {"error", path + ": no such recipe file (expected a preset of `precision-lab-cli "
                                 "presets`, fp8-current, fp8-delayed, mxfp8, fp8-block, or a "
                                 "recipe JSON file)"}};
    }
    const nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.is_object())
        return {{"source", path},
                {"error", path + ": not a JSON object (expected a config document, as "
                                 "`advise --export recipe` writes)"}};
    return {{"source", path}, {"document", document}};
}

// The program as execve takes it: a path as given, a bare name looked up in PATH.
std::string findProgram(const std::string& name) {
    if (name.find('/') != std::string::npos)
        return name;
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t start = 0;;) {
        const std::size_t colon = dirs.find(':', start);
        const std::string dir = dirs.substr(start, colon - start);
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate))
            return candidate;
        if (colon == std::string::npos)
            break;
        start = colon + 1;
    }
    throw std::runtime_error(name + ": command not found (not in PATH)");
}

} // namespace

void resolveScriptRecipes(Sweep& sweep, const std::vector<std::string>& given) {
    sweep.presets.clear();
    sweep.recipes = nlohmann::json::object();
    for (const std::string& recipe : given) {
        std::string name;
        nlohmann::json resolved;
        if (isPreset(recipe)) {
            name = recipe;
            resolved = {{"source", recipe}, {"document", {{"preset", recipe}}}};
        } else if (const RecipeCandidate* c = findRecipeCandidate(recipe)) {
            name = recipe;
            resolved = {{"source", recipe}, {"document", candidateConfig(*c).toJson()}};
        } else {
            name = fs::path(recipe).stem().string();
            resolved = recipeFile(recipe);
        }
        // The name is a folder name and a line of a Slurm task list: no separator, quote, space
        // or control character (a newline would make two task lines of one run).
        if (name.empty() || name.find_first_of("/\\\"' ") != std::string::npos ||
            std::any_of(name.begin(), name.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
            throw std::invalid_argument("sweep: --recipes " + recipe + ": its name would be \"" +
                                        name +
                                        "\" (a folder name without spaces, quotes or control "
                                        "characters expected)");
        if (sweep.recipes.contains(name) && sweep.recipes.at(name).at("source") == recipe)
            throw std::invalid_argument("sweep: recipe " + recipe +
                                        " is listed twice (--recipes); each recipe runs once per "
                                        "seed");
        if (sweep.recipes.contains(name))
            throw std::invalid_argument(
                "sweep: --recipes " + recipe + ": the name " + name + " is taken by " +
                sweep.recipes.at(name).at("source").get<std::string>() +
                " (each recipe's runs go to DIR/<name>; rename one of the files)");
        sweep.presets.push_back(name);
        sweep.recipes[name] = resolved;
    }
}

void checkScriptSweep(const Sweep& sweep) {
    if (sweep.command.empty())
        throw std::invalid_argument("sweep: no command after -- (a script sweep runs one)");
    if (!sweep.grid.empty() || !sweep.sets.empty() || sweep.epochs > 0 || !sweep.data.empty())
        throw std::invalid_argument(
            "sweep: --grid, --set, --epochs and --data shape the core's own runs; a script "
            "takes its own options after -- (the sweep varies only the recipe and the seed)");
    for (std::size_t i = 0; i < sweep.presets.size(); ++i) {
        const std::string& name = sweep.presets[i];
        const nlohmann::json* r = sweep.recipes.contains(name) ? &sweep.recipes.at(name) : nullptr;
        if (r == nullptr || !r->is_object() ||
            !(r->contains("document") ? r->at("document").is_object()
                                      : r->contains("error") && r->at("error").is_string()))
            throw std::invalid_argument("sweep: recipe " + name +
                                        ": not resolved in the sweep's recipes (expected "
                                        "{\"source\", \"document\"} or {\"source\", \"error\"})");
        for (std::size_t k = 0; k < i; ++k)
            if (sweep.presets[k] == name)
                throw std::invalid_argument("sweep: recipe " + name +
                                            " is listed twice; each recipe runs once per seed");
    }
}

ChildSpec ScriptChildCommand::prepare(const SweepRun& run) const {
    const std::string name = run.config.at("script").at("recipe").get<std::string>();
    const nlohmann::json& recipe = m_sweep.recipes.at(name);
    if (recipe.contains("error"))
        throw std::runtime_error("recipe " + name + ": " + recipe.at("error").get<std::string>());
    ChildSpec spec;
    spec.argv = m_sweep.command;
    spec.argv.front() = findProgram(spec.argv.front());
    writeFileAtomically(scriptRecipePath(run), recipe.at("document").dump(2) + "\n");
    const std::string seed = std::to_string(run.config.at("script").at("seed").get<int>());
    spec.environment = {std::string(kSweepRunDirVariable) + "=" + run.dir,
                        std::string(kSweepRecipeVariable) + "=" + scriptRecipePath(run),
                        std::string(kSweepRecipeNameVariable) + "=" + name,
                        std::string(kSweepSeedVariable) + "=" + seed};
    spec.stdoutPath = scriptStdoutPath(run);
    spec.stopSignalsBlocked = false; // an interpreter would never unblock them
    return spec;
}

std::string ScriptChildCommand::failure(const SweepRun& run, int code,
                                        const std::string& stderrPath) const {
    if (code != 0)
        return childFailureReason(code, stderrPath);
    return scriptRunProblem(run.dir);
}

int ScriptChildCommand::stopSignal() const {
    return SIGINT;
}

std::string scriptRunProblem(const std::string& runDir) {
    const std::string noStep =
        "the script recorded no step (it must record into the sweep's run: "
        "precision_lab.torch.emulate(model) or watch(model) with no run folder, and step() "
        "once per training step)";
    std::ifstream in(runDir + "/summary.json");
    if (!in)
        return noStep;
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object())
        return runDir + "/summary.json: not a run summary";
    const RunSummary s = runSummaryFromJson(j);
    if (s.steps <= 0)
        return noStep;
    if (!s.finished && s.stopReason.rfind("diverged", 0) != 0)
        return "the script exited 0 but its record did not finish (" + s.stopReason + ")";
    // A loss the script reported as NaN is the text 'nan' in the record; one never reported is
    // NULL (no loss to compare, not a failure).
    try {
        SqliteDb db(runDir + "/" + kRunRecordFile, SqliteDb::Mode::ReadOnly);
        SqliteStatement last =
            db.prepare("SELECT step, loss FROM steps WHERE loss IS NOT NULL ORDER BY seq DESC "
                       "LIMIT 1");
        if (last.next() && !std::isfinite(last.real(1)))
            return "its loss is " + std::string(std::isnan(last.real(1)) ? "NaN" : "infinite") +
                   " at its last step that reported one (" + std::to_string(last.integer(0)) + ")";
    } catch (const std::exception& e) {
        return e.what();
    }
    for (const auto& [metric, value] : s.finalMetrics)
        if (!std::isfinite(value))
            return "its metric " + metric + " is not a finite number at its last report";
    return {};
}

} // namespace plab
