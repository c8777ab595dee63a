// `compare`: runs presets on the same seed and data (as child processes, as many at once as
// there are cores) and writes one table (CSV and Markdown) plus loss-curve and flushed-fraction
// plots (PNG, SVG and PDF, drawn with Cairo) from their run directories.
#include "charts.h"
#include "cli_commands.h"

#include "record/folder_kind.h"
#include "record/record_error.h"

#include "stop_signals.h"
#include "sweep/sweep_plan.h"
#include "sweep_runner.h"

#include "record/record_file.h"
#include "record/run_record.h"
#include "sweep/child_process_launcher.h"
#include "sweep/run_groups.h"
#include "sweep/sweep_executor.h"
#include "sweep/sweep_progress.h"
#include "sweep/sweep_results.h"
#include "sweep/sweep_run.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace plab::cli {
namespace {

struct CompareArgs {
    std::vector<std::string> presets;
    std::int64_t steps = 300;
    std::string out = "runs/compare";
    std::vector<std::string> sets;
    std::string data;
    bool overwrite = false;
    int seeds = 1; // more: a sweep over seeds (sweep_runner.h)
    // compare --runs: existing run folders of any kind, grouped by recipe (sweep/run_groups.h)
    std::vector<std::string> runs;
    std::string baseline; // the group differences are taken from (default: the first)
    bool outGiven = false;
};

struct RunResult {
    std::string preset;
    std::string failure; // why the run gave no result (empty: it ran, completed or not)
    nlohmann::json summary;
    std::vector<std::pair<double, double>> loss; // (step, loss)
    std::map<std::string, double> meanFlushed;   // role -> mean flushed share over steps/layers
    std::vector<std::pair<double, double>> flushedActGrads; // (step, mean over layers)
    double lostUpdates = 0.0;
};

// A number of a run's summary; NaN where it is null (JSON's NaN) or missing.
double summaryNumber(const nlohmann::json& summary, const char* key) {
    const auto it = summary.find(key);
    return it != summary.end() && it->is_number() ? it->get<double>()
                                                  : std::numeric_limits<double>::quiet_NaN();
}

RunResult readRun(const std::string& preset, const std::string& dir) {
    RunResult r;
    r.preset = preset;
    std::ifstream s(dir + "/summary.json");
    if (!s)
        throw std::runtime_error(dir + "/summary.json: missing");
    r.summary = nlohmann::json::parse(s, nullptr, false);
    if (!r.summary.is_object())
        throw std::runtime_error(dir + "/summary.json: not a JSON object");
    // Curves and shares from the run's record, by the one analysis every view uses.
    const RunAnalysis a = analyseRun(RunRecord(dir));
    r.loss = a.loss;
    r.meanFlushed = a.meanFlushed;
    r.flushedActGrads = a.flushedActGrads;
    r.lostUpdates = a.lostUpdates;
    return r;
}

// The run the others are judged against: fp32 when compared, else the first preset.
std::string baselineOf(const std::vector<std::string>& presets) {
    const bool hasFp32 = std::find(presets.begin(), presets.end(), "fp32") != presets.end();
    return hasFp32 ? "fp32" : presets.front();
}

// The planner's message as the compare command's: "compare: ...", and for a folder given where
// a preset goes, what compare takes and where recorded runs are set side by side.
std::string inCompareWords(std::string message, const std::vector<std::string>& presets) {
    if (message.rfind("sweep: ", 0) == 0)
        message = "compare: " + message.substr(7);
    for (const std::string& p : presets) {
        std::error_code ec;
        if (std::filesystem::is_directory(p, ec))
            return "compare: --presets " + p +
                   " is a folder: --presets trains presets (precision-lab-cli presets lists "
                   "them); `compare --runs DIR...` sets recorded runs side by side";
    }
    return message;
}

// The presets of the compare whose table is `csv` (its rows' first cells), in order; empty when
// there is none.
std::vector<std::string> comparedPresets(const std::string& csv) {
    std::ifstream in(csv);
    std::vector<std::string> presets;
    std::string line;
    std::getline(in, line); // the header
    while (std::getline(in, line))
        if (!line.empty())
            presets.push_back(line.substr(0, line.find(',')));
    return presets;
}

// compare --runs: the folders grouped by the recipe they ran, each group's runs its seeds; the
// table of sweeps (mean and interval per group, Welch's verdict against the baseline group)
// printed, and with --out written there as compare.csv, compare.md and the loss curves' chart.
int compareRunFolders(const CompareArgs& args) {
    for (const std::string& run : args.runs)
        if (folderKind(run) != FolderKind::Run)
            throw std::invalid_argument("compare --runs: " + run + ": holds " +
                                        describeFolderKind(folderKind(run)) +
                                        " (expected a run folder, with run.sqlite)");
    const std::vector<RunGroup> groups = groupRuns(args.runs);
    const std::string baseline = args.baseline.empty() ? groups.front().name : args.baseline;
    if (std::none_of(groups.begin(), groups.end(),
                     [&](const RunGroup& g) { return g.name == baseline; })) {
        std::string names;
        for (const RunGroup& g : groups)
            names += (names.empty() ? "" : ", ") + g.name;
        throw std::invalid_argument("compare --runs: --baseline " + baseline +
                                    " is no group of these runs (they are " + names + ")");
    }
    const SweepResults results = collectRunGroups(groups, baseline);
    std::string md;
    for (const RunGroup& g : groups) {
        md += "- " + g.name + ":";
        for (const std::string& run : g.runs)
            md += " " + run;
        md += "\n";
    }
    md += "\n" + results.markdown();
    if (args.outGiven) {
        std::error_code ec;
        std::filesystem::create_directories(args.out, ec);
        if (ec || !std::filesystem::is_directory(args.out))
            throw std::runtime_error(args.out + ": cannot create the compare folder");
        try { // a run's or a sweep's folder is not a compare's
            refuseOtherKind(args.out, FolderKind::Compare);
        } catch (const RecordError& e) {
            throw std::invalid_argument(e.what());
        }
        if (!args.overwrite && std::filesystem::exists(args.out + "/compare.csv"))
            throw std::runtime_error(args.out + ": holds an earlier compare (compare.csv); pass "
                                                "--overwrite to replace it, or choose another "
                                                "--out");
        writeFileAtomically(args.out + "/compare.csv", results.csv());
        writeFileAtomically(args.out + "/compare.md", md);
        if (chartsAvailable()) {
            std::vector<ChartSeries> series;
            for (const RunGroup& g : groups)
                addBandSeries(series, g.name, lossOverRuns(g.runs), false);
            writeLineCharts(args.out + "/loss", "Training loss: mean over each group's runs",
                            "step", "loss", series, true);
        }
    }
    std::printf("%s", md.c_str());
    const bool incomplete =
        std::any_of(results.points.begin(), results.points.end(), [](const SweepPointResult& r) {
            return !r.failed.empty() || !r.missing.empty();
        });
    return incomplete ? kExitTrainingFailed : 0;
}

int runCompare(const CompareArgs& args) {
    if (!args.runs.empty()) {
        if (!args.presets.empty() || args.seeds > 1 || !args.sets.empty() || !args.data.empty())
            throw std::invalid_argument("compare: --runs sets existing runs side by side; "
                                        "--presets, --seeds, --set and --data start new ones");
        return compareRunFolders(args);
    }
    if (args.presets.empty())
        throw std::invalid_argument("compare: --presets needs at least one preset name (or --runs "
                                    "DIR... to set existing runs side by side)");
    if (args.seeds > 1) { // means and intervals over seeds: the sweep's table, no grid
        SweepArgs sweep;
        sweep.sweep.presets = args.presets;
        sweep.sweep.seeds = args.seeds;
        sweep.sweep.sets = args.sets;
        sweep.sweep.steps = args.steps;
        sweep.sweep.data = args.data;
        sweep.sweep.baseline = baselineOf(args.presets);
        sweep.out = args.out;
        return runSweep(sweep);
    }
    // A comparison on one seed is a sweep without a grid, laid out DIR/<preset>: its presets,
    // settings and every run's config are checked before anything runs.
    Sweep comparison;
    comparison.presets = args.presets;
    comparison.sets = args.sets;
    comparison.steps = args.steps;
    comparison.data = args.data;
    comparison.baseline = baselineOf(args.presets);
    try {
        comparison.check();
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(inCompareWords(e.what(), args.presets));
    }
    std::error_code ec;
    std::filesystem::create_directories(args.out, ec);
    if (ec || !std::filesystem::is_directory(args.out))
        throw std::runtime_error(args.out + ": cannot create the compare folder" +
                                 (ec ? " (" + ec.message() + ")" : std::string(" (not a folder)")));
    try { // a run's or a sweep's folder is not a compare's
        refuseOtherKind(args.out, FolderKind::Compare);
    } catch (const RecordError& e) {
        throw std::invalid_argument(e.what());
    }
    // The same compare again resumes it (a stopped one goes on from its runs' checkpoints); a
    // compare of other presets is another compare.
    if (const std::vector<std::string> earlier = comparedPresets(args.out + "/compare.csv");
        !args.overwrite && !earlier.empty() && earlier != args.presets) {
        std::string names;
        for (const std::string& p : earlier)
            names += (names.empty() ? "" : ",") + p;
        throw std::runtime_error(args.out + ": holds an earlier compare of " + names +
                                 " (compare.csv); pass --overwrite to replace it, or choose "
                                 "another --out");
    }
    const std::vector<SweepRun> runs = planComparisonRuns(comparison, args.out);
    // A compare that was killed or stopped resumes, as a sweep does: a run done with these
    // settings is kept, an interrupted or failed one runs again. A done run with other settings
    // (another compare into the folder) is replaced only on --overwrite.
    if (!args.overwrite)
        for (const SweepRun& r : runs)
            if (runEndedWithResult(r.dir))
                if (const std::string differs = runDiffersFromPlan(r.dir, r.config);
                    !differs.empty())
                    throw std::runtime_error(r.dir + ": holds a run with other settings (" +
                                             differs +
                                             "); pass --overwrite to replace it, or "
                                             "choose another --out");
    catchStopSignals(); // passed on to the children once, so that each writes its summary
    ChildProcessLauncher children(selfExecutable(), /*overwrite=*/true); // checked above
    SweepExecutor executor(runs, {std::thread::hardware_concurrency(), /*resume=*/!args.overwrite,
                                  /*rerunFailed=*/true});
    // The hooks the app's Compare wires too (core/sweep/sweep_progress.h): each run's start and
    // end kept, and here a line on stderr as each happens.
    SweepProgress progress(runs.size());
    SweepProgress::Observers say;
    say.started = [&](std::size_t i) {
        std::fprintf(stderr, "compare: %s started\n", args.presets[runs[i].point].c_str());
    };
    say.ended = [&](const RunEnd& end) {
        // Stopped by the signal the compare passed on: its summary is written, a result all
        // the same (the table says it ended early).
        std::fprintf(stderr, "compare: %s %s\n", args.presets[runs[end.run].point].c_str(),
                     end.outcome == RunEnd::Outcome::Result    ? "done"
                     : end.outcome == RunEnd::Outcome::Stopped ? "stopped"
                                                               : "FAILED");
    };
    executor.execute(children, progress.hooks(stopRequestFromSignal, std::move(say)));
    std::map<std::string, std::string> failures; // preset -> why its run gave no result
    bool recordFailed = false; // a run's record could not be written (a full disk): exit 4
    const std::vector<SweepProgress::Run> ran = progress.runs();
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const std::string& preset = args.presets[runs[i].point];
        if (ran[i].end && ran[i].end->outcome == RunEnd::Outcome::Failed)
            failures[preset] = ran[i].end->reason;
        recordFailed = recordFailed || (ran[i].end && ran[i].end->recordFailed);
        if (ran[i].phase != SweepProgress::Run::Phase::ToDo)
            continue;
        if (sweepRunState(runs[i].dir, runs[i].config) == SweepRunState::Done) {
            std::fprintf(stderr, "compare: %s found done earlier\n", preset.c_str());
            continue;
        }
        failures[preset] =
            stopSignal() != 0
                ? "not started: the compare was stopped by signal " + std::to_string(stopSignal())
                : "not started: " + runs[i].dir + " is being written by another process";
    }

    std::vector<RunResult> results;
    for (const std::string& preset : args.presets) {
        RunResult r;
        r.preset = preset;
        if (const auto f = failures.find(preset); f != failures.end()) {
            r.failure = f->second;
        } else {
            try {
                r = readRun(preset, args.out + "/" + preset);
            } catch (const std::exception& e) {
                r.failure = e.what();
            }
        }
        results.push_back(std::move(r));
    }
    const char* roles[] = {"weights", "activations", "activation_gradients", "weight_gradients"};
    // Test loss in nats and bits (for text models: per byte, the unit papers report).
    std::string csv =
        "preset,status,final_loss,test_loss,test_loss_bits,test_accuracy,skipped_steps";
    std::string md =
        "| preset | status | final loss | test loss (nats) | test loss (bits) | test accuracy | "
        "skipped steps";
    for (const char* r : roles) {
        csv += std::string(",flushed_") + r;
        md += std::string(" | flushed ") + r;
    }
    csv += ",lost_updates,wall_seconds,reason\n";
    md += " | lost updates | time (s) | reason |\n|---|---|---|---|---";
    for (std::size_t i = 0; i < std::size(roles) + 5; ++i)
        md += "|---";
    md += "|\n";
    const auto cell = [](double v, double factor, int decimals) {
        if (std::isnan(v))
            return std::string("nan");
        char text[64];
        std::snprintf(text, sizeof text, "%.*f", decimals, v * factor);
        return std::string(text);
    };
    // A reason in a CSV cell: quoted, quotes doubled; in Markdown: pipes escaped.
    const auto csvText = [](std::string t) {
        for (std::size_t p = t.find('"'); p != std::string::npos; p = t.find('"', p + 2))
            t.insert(p, 1, '"');
        return '"' + t + '"';
    };
    const auto mdText = [](std::string t) {
        for (std::size_t p = t.find('|'); p != std::string::npos; p = t.find('|', p + 2))
            t.insert(p, 1, '\\');
        return t;
    };
    // A share in Markdown: "12.34%", or "nan" alone ("nan%" read as a number).
    const auto percent = [&](double v) {
        return std::isnan(v) ? std::string("nan") : cell(v, 100, 2) + "%";
    };
    for (const RunResult& r : results) {
        const auto& s = r.summary;
        const bool failed = !r.failure.empty();
        const std::string reason = failed ? r.failure : s.value("stop_reason", std::string());
        const std::string status = failed                             ? "failed"
                                   : s.value("finished", false)       ? "completed"
                                   : reason.rfind("diverged", 0) == 0 ? "diverged"
                                                                      : "ended early";
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double loss = failed ? nan : summaryNumber(s, "final_train_loss");
        const double accuracy = failed ? nan : summaryNumber(s, "test_accuracy");
        const double testLoss = failed ? nan : summaryNumber(s, "test_loss");
        const double bits = testLoss / std::log(2.0);
        const double skipped = failed ? nan : summaryNumber(s, "skipped_steps");
        const double seconds = failed ? nan : summaryNumber(s, "wall_seconds");
        csv += r.preset + ',' + status + ',' + cell(loss, 1, 4) + ',' + cell(testLoss, 1, 4) + ',' +
               cell(bits, 1, 4) + ',' + cell(accuracy, 1, 4) + ',' + cell(skipped, 1, 0);
        md += "| " + r.preset + " | " + status + " | " + cell(loss, 1, 4) + " | " +
              cell(testLoss, 1, 4) + " | " + cell(bits, 1, 3) + " | " + percent(accuracy) + " | " +
              cell(skipped, 1, 0);
        for (const char* role : roles) {
            const auto it = r.meanFlushed.find(role);
            const double v = failed ? nan : it == r.meanFlushed.end() ? 0.0 : it->second;
            csv += ',' + cell(v, 1, 6);
            md += " | " + percent(v);
        }
        const double lost = failed ? nan : r.lostUpdates;
        csv += ',' + cell(lost, 1, 6) + ',' + cell(seconds, 1, 2) + ',' + csvText(reason) + '\n';
        md += " | " + percent(lost) + " | " + cell(seconds, 1, 1) + " | " + mdText(reason) + " |\n";
    }
    writeFileAtomically(args.out + "/compare.csv", csv);
    writeFileAtomically(args.out + "/compare.md", md);
    std::vector<ChartSeries> loss, flushed;
    for (const RunResult& r : results) {
        if (!r.failure.empty())
            continue;
        loss.push_back({r.preset, r.loss});
        flushed.push_back({r.preset, r.flushedActGrads});
    }
    const std::string flushedTitle = "Activation gradients flushed (mean over layers)";
    if (chartsAvailable()) {
        writeLineCharts(args.out + "/loss", "Training loss", "step", "loss", loss, true);
        writeLineCharts(args.out + "/flushed", flushedTitle, "step", "share flushed", flushed,
                        false);
    } else {
        std::fprintf(stderr, "compare: charts skipped: this build has no Cairo\n");
    }
    std::printf("%s", md.c_str());
    std::fprintf(stderr, "compare: table and plots in %s\n", args.out.c_str());
    if (stopSignal() != 0)
        return 128 + stopSignal(); // stopped: the table holds what the runs reached
    if (!failures.empty() || std::any_of(results.begin(), results.end(),
                                         [](const RunResult& r) { return !r.failure.empty(); })) {
        std::fprintf(stderr, "compare: some runs failed (see the table's reason column and "
                             "each run's .stderr.log)\n");
        return recordFailed ? kExitRecordFailed : kExitTrainingFailed;
    }
    return 0;
}

} // namespace

Command addCompareCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("compare", "Run presets side by side and tabulate them");
    auto args = std::make_shared<CompareArgs>();
    cmd->add_option("--presets", args->presets, "Comma-separated preset names")->delimiter(',');
    cmd->add_option("--runs", args->runs,
                    "Existing run folders of any kind (trained, watched, emulated, sweep "
                    "members), grouped by recipe, with verdicts where a group has 2+ runs")
        ->expected(1, -1);
    cmd->add_option("--baseline", args->baseline,
                    "With --runs: the group differences are taken from (default: the first)");
    cmd->add_option("--steps", args->steps, "Steps per run")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    cmd->add_option("--out", args->out, "Output folder")
        ->capture_default_str()
        ->each([args](const std::string&) { args->outGiven = true; });
    cmd->add_option("--set", args->sets, "key.path=value applied to every run");
    cmd->add_option("--seeds", args->seeds,
                    "Seeds per preset; more than 1 runs a sweep (means, intervals, verdicts)")
        ->check(wholeNumberBetween(1, kMaxSweepSeeds))
        ->capture_default_str();
    cmd->add_option("--data", args->data, "synthetic, fashion-mnist, or a directory");
    cmd->add_flag("--overwrite", args->overwrite,
                  "Replace an earlier compare's table and runs in --out");
    return {cmd, [args] { return runCompare(*args); }};
}

} // namespace plab::cli
