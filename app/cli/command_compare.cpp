// `compare`: runs presets on the same seed and data (as child processes, as many at once as
// there are cores) and writes one table (CSV and Markdown) plus loss-curve and flushed-fraction
// plots (PNG, SVG and PDF, drawn with Cairo) from their run directories.
#include "charts.h"
#include "child_runs.h"
#include "cli_commands.h"
#include "sweep_runner.h"

#include "record/record_file.h"
#include "record/run_record.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
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

int runCompare(const CompareArgs& args) {
    if (args.presets.empty())
        throw std::invalid_argument("compare: --presets needs at least one preset name");
    if (args.seeds > 1) { // means and intervals over seeds: the sweep's table, no grid
        SweepArgs sweep;
        sweep.sweep.presets = args.presets;
        sweep.sweep.seeds = args.seeds;
        sweep.sweep.sets = args.sets;
        sweep.sweep.steps = args.steps;
        sweep.sweep.data = args.data;
        const bool hasFp32 =
            std::find(args.presets.begin(), args.presets.end(), "fp32") != args.presets.end();
        sweep.sweep.baseline = hasFp32 ? "fp32" : args.presets.front();
        sweep.out = args.out;
        return runSweep(sweep);
    }
    for (const std::string& p : args.presets)
        findPreset(p); // a bad name fails before anything runs
    std::error_code ec;
    std::filesystem::create_directories(args.out, ec);
    if (ec || !std::filesystem::is_directory(args.out))
        throw std::runtime_error(args.out + ": cannot create the compare folder" +
                                 (ec ? " (" + ec.message() + ")" : std::string(" (not a folder)")));
    if (!args.overwrite && std::filesystem::exists(args.out + "/compare.csv"))
        throw std::runtime_error(args.out + ": holds an earlier compare (compare.csv); pass "
                                            "--overwrite to replace it, or choose another --out");
    const std::string self = selfExecutable();
    std::map<std::string, std::string> failures; // preset -> why its run gave no result
    // A child's stderr, kept beside its run folder (the folder itself may be what failed).
    const auto stderrPath = [&](const std::string& preset) {
        return args.out + "/" + preset + ".stderr.log";
    };
    catchStopSignals(); // passed on to the children once, so that each writes its summary
    ChildRuns children(
        std::thread::hardware_concurrency(), [&](const std::string& preset, int code) {
            // 0: completed; 3: ran and ended early (diverged); stopped by the signal the
            // compare passed on (summary written): a result all the same.
            const bool ran = code == 0 || code == kExitTrainingFailed ||
                             (stopSignal() != 0 && code == 128 + stopSignal());
            std::fprintf(stderr, "compare: %s %s\n", preset.c_str(),
                         code == 0 ? "done"
                         : ran     ? "ended early"
                                   : "FAILED");
            if (!ran) {
                const std::string why = lastLine(stderrPath(preset));
                failures[preset] = "exit " + std::to_string(code) + (why.empty() ? "" : ": " + why);
            }
        });
    for (const std::string& preset : args.presets) {
        std::vector<std::string> argv = {self,        "train",
                                         "--preset",  preset,
                                         "--steps",   std::to_string(args.steps),
                                         "--threads", "1",
                                         "--out",     args.out + "/" + preset};
        if (args.overwrite)
            argv.push_back("--overwrite");
        for (const std::string& s : args.sets) {
            argv.push_back("--set");
            argv.push_back(s);
        }
        if (!args.data.empty()) {
            argv.push_back("--data");
            argv.push_back(args.data);
        }
        if (!children.start(preset, argv, stderrPath(preset))) {
            failures[preset] =
                "not started: the compare was stopped by signal " + std::to_string(stopSignal());
            continue;
        }
        std::fprintf(stderr, "compare: %s started\n", preset.c_str());
    }
    children.waitAll();

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
    for (const RunResult& r : results) {
        const auto& s = r.summary;
        const bool failed = !r.failure.empty();
        const std::string status = failed                       ? "failed"
                                   : s.value("finished", false) ? "completed"
                                                                : "ended early";
        const std::string reason = failed ? r.failure : s.value("stop_reason", std::string());
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
              cell(testLoss, 1, 4) + " | " + cell(bits, 1, 3) + " | " + cell(accuracy, 100, 2) +
              "% | " + cell(skipped, 1, 0);
        for (const char* role : roles) {
            const auto it = r.meanFlushed.find(role);
            const double v = failed ? nan : it == r.meanFlushed.end() ? 0.0 : it->second;
            csv += ',' + cell(v, 1, 6);
            md += " | " + cell(v, 100, 2) + "%";
        }
        const double lost = failed ? nan : r.lostUpdates;
        csv += ',' + cell(lost, 1, 6) + ',' + cell(seconds, 1, 2) + ',' + csvText(reason) + '\n';
        md += " | " + cell(lost, 100, 2) + "% | " + cell(seconds, 1, 1) + " | " + mdText(reason) +
              " |\n";
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
        return kExitTrainingFailed;
    }
    return 0;
}

} // namespace

Command addCompareCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("compare", "Run presets side by side and tabulate them");
    auto args = std::make_shared<CompareArgs>();
    cmd->add_option("--presets", args->presets, "Comma-separated preset names")
        ->delimiter(',')
        ->required();
    cmd->add_option("--steps", args->steps, "Steps per run")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    cmd->add_option("--out", args->out, "Output folder")->capture_default_str();
    cmd->add_option("--set", args->sets, "key.path=value applied to every run");
    cmd->add_option("--seeds", args->seeds,
                    "Seeds per preset; more than 1 runs a sweep (means, intervals, verdicts)")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    cmd->add_option("--data", args->data, "synthetic, fashion-mnist, or a directory");
    cmd->add_flag("--overwrite", args->overwrite,
                  "Replace an earlier compare's table and runs in --out");
    return {cmd, [args] { return runCompare(*args); }};
}

} // namespace plab::cli
