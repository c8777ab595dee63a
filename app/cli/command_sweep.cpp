// `sweep`: a grid of presets x config values x seeds (core/sweep/sweep_plan.h), one `train`
// child per run and one run folder per run, resumable; run here (as many at once as there are
// cores) or as a Slurm array job (slurm_jobs.h) whose tasks are this program in task mode; then
// the table of each metric's mean and interval over seeds with verdicts against a baseline
// (core/sweep/sweep_results.h), as sweep.csv, sweep.md and charts.
#include "charts.h"
#include "cli_commands.h"

#include "record/folder_kind.h"
#include "record/record_error.h"
#include "slurm_jobs.h"
#include "stop_signals.h"
#include "sweep_runner.h"

#include "record/record_file.h"
#include "sweep/child_process_launcher.h"
#include "sweep/script_sweep.h"
#include "sweep/sweep_executor.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_results.h"
#include "sweep/sweep_run.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>

namespace plab::cli {
namespace {

// What each child runs: `train` on the planned config, or a script sweep's command.
std::shared_ptr<const ChildCommand> childCommand(const Sweep& sweep) {
    if (sweep.isScript())
        return std::make_shared<ScriptChildCommand>(sweep);
    return std::make_shared<TrainChildCommand>(selfExecutable(), /*overwrite=*/true);
}

// Runs the given runs as children, `slots` at once, through the one executor
// (core/sweep/sweep_executor.h); a stop signal is passed on to them once.
SweepTally runChildren(const Sweep& sweep, const std::vector<SweepRun>& runs, unsigned slots,
                       bool rerunFailed) {
    ChildProcessLauncher children(childCommand(sweep));
    SweepExecutor executor(runs, {slots, /*resume=*/true, rerunFailed});
    SweepExecutor::Hooks hooks;
    hooks.ended = [&](const RunEnd& end) {
        const SweepRun& r = runs.at(end.run);
        std::fprintf(stderr, "sweep: %s %s\n", r.dir.c_str(),
                     end.outcome == RunEnd::Outcome::Result    ? "done"
                     : end.outcome == RunEnd::Outcome::Stopped ? "interrupted"
                                                               : "FAILED");
    };
    hooks.stop = stopRequestFromSignal;
    const SweepTally tally = executor.execute(children, hooks);
    if (tally.runningElsewhere > 0)
        std::fprintf(stderr,
                     "sweep: %d run folder(s) are being written by another process (an earlier "
                     "sweep's run still going): left to it, not started again\n",
                     tally.runningElsewhere);
    return tally;
}

// ---- Slurm ----

std::string slurmDir(const std::string& out) {
    return out + "/slurm";
}

// The sweep's jobs, oldest first: "ID job-N" lines in DIR/slurm/jobs.
std::vector<std::string> submittedJobs(const std::string& out) {
    std::ifstream in(slurmDir(out) + "/jobs");
    std::vector<std::string> ids;
    std::string id, name;
    while (in >> id >> name)
        ids.push_back(id);
    return ids;
}

// The latest job of this sweep when squeue still lists it.
std::string activeJob(const std::string& out) {
    const std::vector<std::string> jobs = submittedJobs(out);
    if (jobs.empty())
        return {};
    std::string why;
    const JobState state = jobState(jobs.back(), &why);
    if (state == JobState::Unknown)
        std::fprintf(stderr, "sweep: cannot tell whether slurm job %s still runs (%s)\n",
                     jobs.back().c_str(), why.c_str());
    return state == JobState::Ended ? std::string() : jobs.back();
}

// Writes DIR/slurm/job-N.sbatch and job-N.tasks for the runs, submits it and notes its id.
std::string submitRuns(const std::string& out, const std::vector<SweepRun>& runs,
                       const SlurmOptions& options) {
    std::error_code ec;
    std::filesystem::create_directories(slurmDir(out), ec);
    const std::string name = "job-" + std::to_string(submittedJobs(out).size() + 1);
    const std::string base = slurmDir(out) + "/" + name;
    std::string tasks;
    for (const SweepRun& r : runs) {
        tasks += r.relative + "\n";
        std::error_code made;
        std::filesystem::create_directories(std::filesystem::path(r.dir).parent_path(), made);
        std::filesystem::remove(failedMarker(r.dir), made);
    }
    writeFileAtomically(base + ".tasks", tasks);
    const std::string command =
        "# Each task trains the run folder on line SLURM_ARRAY_TASK_ID + 1 of " + name +
        ".tasks.\nexec " + shellQuote(selfExecutable()) + " sweep --file " +
        shellQuote(out + "/sweep.json") + " --out " + shellQuote(out) + " --task-list " +
        shellQuote(base + ".tasks") + " --task-index \"$SLURM_ARRAY_TASK_ID\"";
    writeFileAtomically(base + ".sbatch",
                        arrayJobScript(options, "plab-sweep", static_cast<int>(runs.size()),
                                       base + "_%a.log", command));
    const std::string id = submitJob(base + ".sbatch");
    try {
        RowFile(slurmDir(out) + "/jobs", WriteOpen::Append).append(id + ' ' + name + '\n');
    } catch (const RecordError& e) {
        throw std::runtime_error(std::string(e.what()) + " (slurm job " + id +
                                 " was submitted; scancel it or wait)");
    }
    return id;
}

// Waits for the job to end, printing progress read from the run folders whenever it changes;
// false when a stop signal ended the wait (the job goes on).
bool waitForJob(const std::string& id, const std::vector<SweepRun>& runs, double pollSeconds) {
    catchStopSignals();
    std::string last;
    int squeueFailures = 0;
    // A run found done stays done while the job goes (the job runs only what was to do): its
    // config is not read again at every poll.
    std::vector<bool> seenDone(runs.size(), false);
    for (;;) {
        std::string why;
        const JobState state = jobState(id, &why);
        int done = 0, failed = 0, running = 0;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const SweepRun& r = runs[i];
            const SweepRunState s =
                seenDone[i] ? SweepRunState::Done : sweepRunState(r.dir, r.config);
            seenDone[i] = s == SweepRunState::Done;
            done += s == SweepRunState::Done;
            failed += s == SweepRunState::Failed;
            running +=
                s == SweepRunState::ToRun && std::filesystem::exists(r.dir + "/summary.json");
        }
        const std::string line = "sweep: slurm job " + id + ": " + std::to_string(done) + " of " +
                                 std::to_string(runs.size()) + " runs done, " +
                                 std::to_string(failed) + " failed, " + std::to_string(running) +
                                 " running";
        if (line != last)
            std::fprintf(stderr, "%s\n", line.c_str());
        last = line;
        if (state == JobState::Ended)
            return true;
        if (stopSignal() != 0) {
            std::fprintf(stderr,
                         "sweep: stopped waiting; slurm job %s goes on (the same command waits "
                         "for it again; scancel %s cancels it)\n",
                         id.c_str(), id.c_str());
            return false;
        }
        if (state == JobState::Unknown && ++squeueFailures >= 30)
            throw std::runtime_error(why + " (30 times in a row; slurm job " + id +
                                     " may still run: run the same command again to wait for it)");
        if (state != JobState::Unknown)
            squeueFailures = 0;
        std::this_thread::sleep_for(std::chrono::duration<double>(pollSeconds));
    }
}

SlurmOptions slurmOptionsOf(const SweepArgs& args, const nlohmann::json& file) {
    SlurmOptions o;
    if (file.is_object() && file.contains("slurm"))
        o.update(file.at("slurm"), args.file + ": slurm");
    if (args.slurm.is_object() && !args.slurm.empty())
        o.update(args.slurm, "sweep", true);
    return o;
}

// Task mode: the run on line taskIndex + 1 of the task list, as a child; 0 when it ran.
int runTask(const Sweep& sweep, const SweepArgs& args, const SlurmOptions& options) {
    std::ifstream in(args.taskList);
    if (!in)
        throw std::invalid_argument(args.taskList + ": cannot open the task list");
    std::string line;
    for (int i = 0; i <= args.taskIndex; ++i)
        if (!std::getline(in, line))
            throw std::invalid_argument(args.taskList + ": no line " +
                                        std::to_string(args.taskIndex + 1) + " (task index " +
                                        std::to_string(args.taskIndex) + ")");
    for (const SweepRun& r : planSweepRuns(sweep, args.out, options.cpusPerTask))
        if (r.relative == line) {
            std::fprintf(stderr, "sweep: task %d: %s\n", args.taskIndex, r.dir.c_str());
            catchStopSignals();
            const SweepTally tally = runChildren(sweep, {r}, 1, /*rerunFailed=*/true);
            return tally.recordFailed > 0 ? kExitRecordFailed
                   : tally.failed == 0    ? 0
                                          : kExitTrainingFailed;
        }
    throw std::invalid_argument(args.taskList + ": \"" + line + "\" is no run of " + args.file);
}

// The table of what the folder holds: sweep.csv, sweep.md, charts; printed. Exit status 3 when
// any run failed or is missing.
int report(const Sweep& sweep, const std::string& out) {
    const SweepResults results = collectSweep(sweep, out);
    writeFileAtomically(out + "/sweep.csv", results.csv());
    writeFileAtomically(out + "/sweep.md", results.markdown());
    if (!chartsAvailable())
        std::fprintf(stderr, "sweep: charts skipped: this build has no Cairo\n");
    for (const SweepMetric& m : results.metrics) {
        const std::string key = m.key;
        if (!chartsAvailable() ||
            std::find(results.verdictColumns.begin(), results.verdictColumns.end(), key) ==
                results.verdictColumns.end())
            continue;
        std::vector<ChartEstimate> estimates;
        for (const SweepPointResult& r : results.points) {
            const SeedSummary& s = r.metrics.at(key);
            estimates.push_back({r.name, s.mean * m.scale, s.ci95 * m.scale});
        }
        writeErrorBarCharts(out + "/" + key,
                            std::string(m.title) + ": mean and 95% interval over seeds", m.title,
                            estimates);
    }
    if (chartsAvailable() && sweep.isScript()) { // the loss curves: each recipe's mean and band
        std::vector<ChartSeries> series;
        const std::vector<SeedBand> bands = sweepLossBands(results, out);
        for (std::size_t p = 0; p < bands.size(); ++p)
            addBandSeries(series, results.points[p].name, bands[p], true);
        writeLineCharts(out + "/loss_curves",
                        "Training loss: mean over seeds with its 95% interval", "step", "loss",
                        series, false);
    }
    std::printf("%s", results.markdown().c_str());
    bool incomplete = false;
    for (const SweepPointResult& r : results.points) {
        for (const std::string& f : r.failed)
            std::fprintf(stderr, "sweep: %s/%s (rerun with --rerun-failed)\n", r.name.c_str(),
                         f.c_str());
        for (const std::string& m : r.missing)
            std::fprintf(stderr, "sweep: %s/%s\n", r.name.c_str(), m.c_str());
        incomplete = incomplete || !r.failed.empty() || !r.missing.empty();
    }
    return incomplete ? kExitTrainingFailed : 0;
}

} // namespace

int runSweep(const SweepArgs& args) {
    nlohmann::json file;
    Sweep sweep;
    if (args.file.empty()) {
        sweep = args.sweep;
        for (const std::string& g : args.grid)
            sweep.grid.push_back(parseGridOption(g));
        if (!args.recipes.empty() || !args.command.empty()) { // the user's own script
            if (args.command.empty())
                throw std::invalid_argument(
                    "sweep: --recipes needs the script's command after --, e.g. sweep "
                    "--recipes fp32,fp8-current --seeds 5 --out DIR -- python3 train.py");
            if (args.recipes.empty())
                throw std::invalid_argument("sweep: a command after -- needs --recipes (the "
                                            "recipes to run it under, e.g. fp32,fp8-current)");
            sweep.command = args.command;
            resolveScriptRecipes(sweep, args.recipes);
            sweep.steps = 0; // the script's own
        }
        if (sweep.baseline.empty())
            sweep.baseline =
                sweep.presets.empty() || std::find(sweep.presets.begin(), sweep.presets.end(),
                                                   "fp32") != sweep.presets.end()
                    ? "fp32"
                    : sweep.presets.front();
    } else {
        sweep = readSweepFile(args.file, &file);
    }
    sweep.check(); // a bad preset, key or value fails before anything runs
    const std::string backend = !args.backend.empty() ? args.backend
                                : file.is_object()    ? file.value("backend", std::string("local"))
                                                      : std::string("local");
    if (backend != "local" && backend != "slurm")
        throw std::invalid_argument("sweep: backend \"" + backend + "\": expected local or slurm");
    // Slurm's options with the local backend would be dropped without a word.
    if (backend == "local" && args.slurm.is_object() && !args.slurm.empty())
        throw std::invalid_argument("sweep: " + args.slurm.begin().key() +
                                    " is a Slurm option: give --backend slurm, or leave it out "
                                    "(the local backend runs here)");
    const SlurmOptions slurm = slurmOptionsOf(args, file);
    if (args.taskIndex >= 0 || !args.taskList.empty()) {
        if (args.taskIndex < 0 || args.taskList.empty() || args.file.empty())
            throw std::invalid_argument("sweep: --task-list and --task-index go together, with "
                                        "--file (they are the Slurm array tasks' own options)");
        return runTask(sweep, args, slurm);
    }

    // `sweep --file DIR/sweep.json` alone resumes (or tabulates) the sweep where its file is.
    // Slurm tasks on other machines find the folder by this path: made absolute.
    const std::string given = !args.file.empty() && !args.outGiven
                                  ? std::filesystem::path(args.file).parent_path().string()
                                  : args.out;
    const std::string out =
        std::filesystem::absolute(given.empty() ? "." : given).lexically_normal().string();
    if (backend == "slurm") {
        checkScriptPath(out, "sweep: --out");
        if (out.find_first_of(" %'\"") != std::string::npos)
            throw std::invalid_argument("sweep: --out " + out +
                                        ": Slurm's #SBATCH lines need a folder path without "
                                        "spaces, quotes or '%'");
    }
    if (args.collectOnly) { // tabulates what is there: makes nothing
        if (!std::filesystem::is_directory(out))
            throw std::invalid_argument("sweep --collect: " + out + ": no such folder");
        return report(sweep, out);
    }
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec || !std::filesystem::is_directory(out))
        throw std::runtime_error(out + ": cannot create the sweep folder (" +
                                 (ec ? ec.message() : std::string("not a folder")) + ")");
    try { // a run's or a compare's folder is not a sweep's
        refuseOtherKind(out, FolderKind::Sweep);
    } catch (const RecordError& e) {
        throw std::invalid_argument(e.what());
    }
    // An earlier job of this sweep that still runs: wait for it (slurm) or refuse (local), so
    // that no run folder is trained twice at once.
    const std::string earlier = std::filesystem::exists(slurmDir(out)) ? activeJob(out) : "";
    if (!earlier.empty() && backend == "local")
        throw std::runtime_error("sweep: slurm job " + earlier + " of " + out +
                                 " is still queued or running: wait for it (sweep --backend "
                                 "slurm waits and collects) or cancel it (scancel " +
                                 earlier + ")");

    // The sweep file: `sweep --file DIR/sweep.json --out DIR` resumes or replays it. A folder
    // holding another sweep is refused, naming what differs.
    nlohmann::json extra = {{"backend", backend}};
    if (backend == "slurm")
        extra["slurm"] = slurm.toJson();
    claimSweepFolder(out, sweep, extra);
    const std::vector<SweepRun> all =
        planSweepRuns(sweep, out, backend == "slurm" ? slurm.cpusPerTask : 1);
    // The Slurm backend submits what is to do; the local one lets the executor decide.
    std::vector<SweepRun> todo;
    int skipped = 0;
    SweepTally tally; // the local backend's (a Slurm job's runs report through their markers)
    for (const SweepRun& r : all) {
        const SweepRunState state = sweepRunState(r.dir, r.config);
        if (state == SweepRunState::Done || (state == SweepRunState::Failed && !args.rerunFailed) ||
            runDirectoryLocked(r.dir))
            ++skipped;
        else
            todo.push_back(r);
    }
    if (!earlier.empty()) {
        std::fprintf(stderr, "sweep: slurm job %s of this sweep is still running: waiting\n",
                     earlier.c_str());
        if (!waitForJob(earlier, all, slurm.pollSeconds))
            return 128 + stopSignal();
    } else if (backend == "slurm") {
        if (!todo.empty()) {
            const std::string id = submitRuns(out, todo, slurm);
            std::fprintf(stderr,
                         "sweep: submitted slurm job %s: %zu run(s), %d found done or failed "
                         "earlier\n",
                         id.c_str(), todo.size(), skipped);
            if (args.noWait) {
                std::fprintf(stderr,
                             "sweep: not waiting; `sweep --file %s/sweep.json --out %s` waits "
                             "for it and collects the table\n",
                             out.c_str(), out.c_str());
                return 0;
            }
            if (!waitForJob(id, todo, slurm.pollSeconds))
                return 128 + stopSignal();
        } else {
            std::fprintf(stderr, "sweep: 0 run(s) submitted, %d found done or failed earlier\n",
                         skipped);
        }
    } else {
        catchStopSignals();
        tally =
            runChildren(sweep, all, args.jobs > 0 ? args.jobs : std::thread::hardware_concurrency(),
                        args.rerunFailed);
        std::fprintf(stderr, "sweep: %d run(s) started, %d found done or failed earlier\n",
                     tally.started, tally.skippedDone + tally.skippedFailed);
    }
    const int status = report(sweep, out);
    if (tally.recordFailed > 0) {
        std::fprintf(stderr,
                     "sweep: %d run(s) could not write their record (see each run's "
                     ".failed marker)\n",
                     tally.recordFailed);
        return kExitRecordFailed;
    }
    if (stopSignal() != 0) {
        std::fprintf(stderr,
                     "sweep: stopped by signal %d; the same command (or `sweep --file "
                     "%s/sweep.json --out %s`) runs what is missing\n",
                     stopSignal(), out.c_str(), out.c_str());
        return 128 + stopSignal();
    }
    return status;
}

Command addSweepCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "sweep", "Presets x config values x seeds, with means, intervals and verdicts over seeds");
    auto args = std::make_shared<SweepArgs>();
    auto* file =
        cmd->add_option("--file", args->file, "A sweep.json (written into every sweep folder)");
    // What a sweep file holds: given beside --file, one of them would be silently lost.
    std::vector<CLI::Option*> defining;
    defining.push_back(cmd->add_option("--presets", args->sweep.presets, "Presets, comma-separated")
                           ->delimiter(',')
                           ->capture_default_str());
    defining.push_back(cmd->add_option("--seeds", args->sweep.seeds, "Seeds 1..N per grid point")
                           ->check(wholeNumberBetween(1, kMaxSweepSeeds))
                           ->capture_default_str());
    defining.push_back(cmd->add_option(
        "--grid", args->grid,
        "key.path=v1,v2,... (repeatable; 2^k is the number), e.g. scaling.scale=2^8,2^12"));
    defining.push_back(
        cmd->add_option("--set", args->sweep.sets, "key.path=value applied to every run"));
    auto* steps = cmd->add_option("--steps", args->sweep.steps, "Steps per run")
                      ->check(wholeNumberAtLeast(1))
                      ->capture_default_str();
    defining.push_back(steps);
    defining.push_back(
        cmd->add_option("--epochs", args->sweep.epochs, "Epochs per run, instead of --steps")
            ->check(wholeNumberAtLeast(1))
            ->excludes(steps));
    defining.push_back(cmd->add_option("--data", args->sweep.data, "The runs' data source"));
    args->sweep.baseline.clear(); // chosen once the presets are known
    defining.push_back(
        cmd->add_option("--baseline", args->sweep.baseline,
                        "The preset differences are taken from (default: fp32 when it is swept, "
                        "else the first preset)"));
    auto* recipes = cmd->add_option("--recipes", args->recipes,
                                    "A script sweep's recipes, comma-separated: presets, "
                                    "fp8-current, fp8-delayed, mxfp8, fp8-block, or recipe JSON "
                                    "files (an advice); the script follows --")
                        ->delimiter(',')
                        ->excludes(defining.front()) // --presets
                        ->excludes(steps);           // the script's own
    defining.push_back(recipes);
    defining.push_back(cmd->add_option("--higher-is-better", args->sweep.higherIsBetter,
                                       "A script sweep's metrics where higher is better "
                                       "(comma-separated; the others: lower is better)")
                           ->delimiter(','));
    defining.push_back(cmd->add_option("command", args->command,
                                       "After --: the training script's command, run once per "
                                       "recipe and seed (no shell), e.g. -- python3 train.py"));
    for (CLI::Option* option : defining)
        option->excludes(file);
    cmd->add_option("--out", args->out, "Sweep folder (with --file: default the file's own folder)")
        ->capture_default_str()
        ->each([args](const std::string&) { args->outGiven = true; });
    cmd->add_option("--jobs", args->jobs, "Runs at once (0: one per core)")->capture_default_str();
    cmd->add_flag("--rerun-failed", args->rerunFailed, "Run again the runs that failed before");
    cmd->add_flag("--collect", args->collectOnly,
                  "Only tabulate the folder's finished runs (e.g. a sweep copied from a cluster)");
    cmd->add_option("--backend", args->backend,
                    "local (child processes here) or slurm (an sbatch array job); default: the "
                    "sweep file's, else local")
        ->check(CLI::IsMember({"local", "slurm"}));
    const auto slurmOption = [&](const char* name, const char* key, const char* help) {
        cmd->add_option_function<std::string>(
               name, [args, key](const std::string& v) { args->slurm[key] = v; }, help)
            ->group("Slurm");
    };
    slurmOption("--partition", "partition", "Slurm partition (default: the cluster's)");
    slurmOption("--time", "time", "Slurm time limit per run, e.g. 1:00:00");
    slurmOption("--mem", "mem", "Slurm memory per run, e.g. 2G");
    cmd->add_option_function<int>(
           "--cpus-per-task", [args](int v) { args->slurm["cpus_per_task"] = v; },
           "Slurm CPUs per run, also its training threads (default 1)")
        ->check(wholeNumberAtLeast(1))
        ->group("Slurm");
    cmd->add_option_function<int>(
           "--max-running", [args](int v) { args->slurm["max_running"] = v; },
           "Slurm: at most this many runs at once (the array's %N; default no limit)")
        ->check(wholeNumberAtLeast(1))
        ->group("Slurm");
    cmd->add_option_function<std::vector<std::string>>(
           "--sbatch-arg",
           [args](const std::vector<std::string>& v) { args->slurm["sbatch_args"] = v; },
           "Another sbatch option for the job, e.g. --sbatch-arg=--account=lab (repeatable)")
        ->group("Slurm");
    cmd->add_option_function<double>(
           "--poll", [args](double v) { args->slurm["poll_seconds"] = v; },
           "Slurm: seconds between progress reads while the job runs (default 5)")
        ->group("Slurm");
    cmd->add_flag("--no-wait", args->noWait,
                  "Slurm: submit and return; the same command later waits and collects")
        ->group("Slurm");
    // Task mode, for the array job's tasks (not for people).
    cmd->add_option("--task-list", args->taskList)->group("");
    cmd->add_option("--task-index", args->taskIndex)->group("");
    return {cmd, [args] { return runSweep(*args); }};
}

} // namespace plab::cli
