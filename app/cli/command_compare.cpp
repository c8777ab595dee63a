// `compare`: runs presets on the same seed and data (as child processes, as many at once as
// there are cores) and writes one table (CSV and Markdown) plus loss-curve and flushed-fraction
// plots (PNG and SVG) from their run directories.
#include "cli_commands.h"
#include "line_chart.h"

#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace plab::cli {
namespace {

struct CompareArgs {
    std::vector<std::string> presets;
    std::int64_t steps = 300;
    std::string out = "runs/compare";
    std::vector<std::string> sets;
    std::string data;
};

struct RunResult {
    std::string preset;
    nlohmann::json summary;
    std::vector<std::pair<double, double>> loss; // (step, loss)
    std::map<std::string, double> meanFlushed;   // role -> mean flushed share over steps/layers
    std::vector<std::pair<double, double>> flushedActGrads; // (step, mean over layers)
    double lostUpdates = 0.0;
};

std::vector<std::string> splitCsvLine(const std::string& line) {
    std::vector<std::string> out;
    std::string cell;
    std::istringstream in(line);
    while (std::getline(in, cell, ','))
        out.push_back(cell);
    return out;
}

RunResult readRun(const std::string& preset, const std::string& dir) {
    RunResult r;
    r.preset = preset;
    std::ifstream s(dir + "/summary.json");
    if (!s)
        throw std::runtime_error(dir + "/summary.json: missing (the run failed)");
    r.summary = nlohmann::json::parse(s);
    std::ifstream m(dir + "/metrics.csv");
    std::string line;
    std::getline(m, line);
    while (std::getline(m, line)) {
        const auto c = splitCsvLine(line);
        if (c.size() >= 3 && !c[2].empty())
            r.loss.emplace_back(std::stod(c[0]), std::stod(c[2]));
    }
    std::ifstream l(dir + "/layers.csv");
    std::getline(l, line);
    std::map<std::string, std::pair<double, int>> sums;
    std::map<double, std::pair<double, int>> perStep;
    double lost = 0.0, updates = 0.0;
    while (std::getline(l, line)) {
        const auto c = splitCsvLine(line);
        if (c.size() < 16)
            continue;
        const double total = std::stod(c[5]), zero = std::stod(c[6]), flushed = std::stod(c[7]);
        if (total - zero > 0) {
            const double share = flushed / (total - zero);
            auto& [sum, n] = sums[c[3]];
            sum += share;
            ++n;
            if (c[3] == "activation_gradients") {
                auto& [ssum, sn] = perStep[std::stod(c[0])];
                ssum += share;
                ++sn;
            }
        }
        if (c[3] == "master_weights") {
            updates += std::stod(c[14]);
            lost += std::stod(c[15]);
        }
    }
    for (const auto& [role, sn] : sums)
        r.meanFlushed[role] = sn.first / sn.second;
    for (const auto& [step, sn] : perStep)
        r.flushedActGrads.emplace_back(step, sn.first / sn.second);
    r.lostUpdates = updates > 0 ? lost / updates : 0.0;
    return r;
}

int runCompare(const CompareArgs& args) {
    if (args.presets.empty())
        throw std::invalid_argument("compare: --presets needs at least one preset name");
    for (const std::string& p : args.presets)
        findPreset(p); // a bad name fails before anything runs
    std::filesystem::create_directories(args.out);
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const unsigned slots = std::max(1u, std::thread::hardware_concurrency());
    std::map<pid_t, std::string> running;
    std::vector<std::string> failed;
    auto reap = [&](bool block) {
        int status = 0;
        const pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);
        if (pid > 0) {
            const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
            std::fprintf(stderr, "compare: %s %s\n", running[pid].c_str(), ok ? "done" : "FAILED");
            if (!ok)
                failed.push_back(running[pid]);
            running.erase(pid);
        }
    };
    for (const std::string& preset : args.presets) {
        while (running.size() >= slots)
            reap(true);
        std::vector<std::string> argv = {self,        "train",
                                         "--preset",  preset,
                                         "--steps",   std::to_string(args.steps),
                                         "--threads", "1",
                                         "--out",     args.out + "/" + preset};
        for (const std::string& s : args.sets) {
            argv.push_back("--set");
            argv.push_back(s);
        }
        if (!args.data.empty()) {
            argv.push_back("--data");
            argv.push_back(args.data);
        }
        std::vector<char*> cargv;
        for (std::string& a : argv)
            cargv.push_back(a.data());
        cargv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        pid_t pid = 0;
        if (posix_spawn(&pid, self.c_str(), &actions, nullptr, cargv.data(), environ) != 0)
            throw std::runtime_error("compare: cannot start " + self);
        posix_spawn_file_actions_destroy(&actions);
        running[pid] = preset;
        std::fprintf(stderr, "compare: %s started\n", preset.c_str());
    }
    while (!running.empty())
        reap(true);

    std::vector<RunResult> results;
    for (const std::string& preset : args.presets)
        results.push_back(readRun(preset, args.out + "/" + preset));
    const char* roles[] = {"weights", "activations", "activation_gradients", "weight_gradients"};
    std::ofstream csv(args.out + "/compare.csv"), md(args.out + "/compare.md");
    csv << "preset,finished,final_loss,test_accuracy,skipped_steps";
    md << "| preset | finished | final loss | test accuracy | skipped steps";
    for (const char* r : roles) {
        csv << ",flushed_" << r;
        md << " | flushed " << r;
    }
    csv << ",lost_updates,wall_seconds\n";
    md << " | lost updates | time (s) |\n|---|---|---|---|---";
    for (std::size_t i = 0; i < std::size(roles) + 2; ++i)
        md << "|---";
    md << "|\n";
    for (const RunResult& r : results) {
        const auto& s = r.summary;
        char row[256];
        std::snprintf(row, sizeof row, "%s,%s,%.4f,%.4f,%lld", r.preset.c_str(),
                      s.value("finished", false) ? "yes" : "no", s.value("final_train_loss", 0.0),
                      s.value("test_accuracy", 0.0), s.value("skipped_steps", 0LL));
        csv << row;
        std::snprintf(row, sizeof row, "| %s | %s | %.4f | %.2f%% | %lld", r.preset.c_str(),
                      s.value("finished", false) ? "yes" : "no", s.value("final_train_loss", 0.0),
                      100.0 * s.value("test_accuracy", 0.0), s.value("skipped_steps", 0LL));
        md << row;
        for (const char* role : roles) {
            const auto it = r.meanFlushed.find(role);
            const double v = it == r.meanFlushed.end() ? 0.0 : it->second;
            csv << ',' << v;
            md << " | " << std::to_string(100.0 * v).substr(0, 5) << "%";
        }
        csv << ',' << r.lostUpdates << ',' << s.value("wall_seconds", 0.0) << '\n';
        md << " | " << std::to_string(100.0 * r.lostUpdates).substr(0, 5) << "% | "
           << std::to_string(s.value("wall_seconds", 0.0)).substr(0, 6) << " |\n";
    }
    csv.close();
    md.close();
    std::vector<ChartSeries> loss, flushed;
    for (const RunResult& r : results) {
        loss.push_back({r.preset, r.loss});
        flushed.push_back({r.preset, r.flushedActGrads});
    }
    const std::string flushedTitle = "Activation gradients flushed (mean over layers)";
    writeLineChartSvg(args.out + "/loss.svg", "Training loss", "loss", loss, true);
    writeLineChartSvg(args.out + "/flushed.svg", flushedTitle, "share flushed", flushed, false);
    writeLineChartPng(args.out + "/loss.png", "Training loss", "loss", loss, true);
    writeLineChartPng(args.out + "/flushed.png", "Activation gradients flushed", "share flushed",
                      flushed, false);
    std::ifstream table(args.out + "/compare.md");
    std::printf("%s", std::string(std::istreambuf_iterator<char>(table), {}).c_str());
    std::fprintf(stderr, "compare: table and plots in %s\n", args.out.c_str());
    if (!failed.empty())
        throw std::runtime_error("compare: run(s) failed: " + failed.front() +
                                 (failed.size() > 1 ? " and others" : ""));
    return 0;
}

} // namespace

Command addCompareCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("compare", "Run presets side by side and tabulate them");
    auto args = std::make_shared<CompareArgs>();
    cmd->add_option("--presets", args->presets, "Comma-separated preset names")
        ->delimiter(',')
        ->required();
    cmd->add_option("--steps", args->steps, "Steps per run")->capture_default_str();
    cmd->add_option("--out", args->out, "Output folder")->capture_default_str();
    cmd->add_option("--set", args->sets, "key.path=value applied to every run");
    cmd->add_option("--data", args->data, "synthetic, fashion-mnist, or a directory");
    return {cmd, [args] { return runCompare(*args); }};
}

} // namespace plab::cli
