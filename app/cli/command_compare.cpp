// `compare`: runs presets on the same seed and data (as child processes, as many at once as
// there are cores) and writes one table (CSV and Markdown) plus loss-curve and flushed-fraction
// plots (SVG) from their run directories.
#include "cli_commands.h"
#include "png_chart.h"

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

// A line chart as SVG: one polyline per run, axes with min/max labels and a legend.
void writeSvg(
    const std::string& path, const std::string& title, const std::string& yLabel,
    const std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>& series,
    bool logY) {
    constexpr double W = 800, H = 480, L = 70, R = 180, T = 40, B = 50;
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    auto fy = [&](double v) { return logY ? std::log10(std::max(v, 1e-6)) : v; };
    for (const auto& [name, pts] : series)
        for (const auto& [x, y] : pts)
            if (std::isfinite(y)) {
                x0 = std::min(x0, x);
                x1 = std::max(x1, x);
                y0 = std::min(y0, fy(y));
                y1 = std::max(y1, fy(y));
            }
    if (x0 > x1) {
        x0 = 0;
        x1 = 1;
        y0 = 0;
        y1 = 1;
    }
    if (y1 - y0 < 1e-9)
        y1 = y0 + 1;
    if (x1 - x0 < 1e-9)
        x1 = x0 + 1;
    auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
    auto py = [&](double y) { return H - B - (fy(y) - y0) / (y1 - y0) * (H - T - B); };
    const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                            "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
    std::ofstream f(path);
    if (!f)
        throw std::runtime_error(path + ": cannot write");
    f << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' "
         "fill='white'/>\n"
      << "<text x='" << W / 2 << "' y='22' text-anchor='middle' font-size='15'>" << title
      << "</text>\n"
      << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B
      << "' stroke='black'/>\n"
      << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B
      << "' stroke='black'/>\n"
      << "<text x='" << (L + W - R) / 2 << "' y='" << H - 12
      << "' text-anchor='middle'>step</text>\n"
      << "<text x='16' y='" << (T + H - B) / 2 << "' transform='rotate(-90 16 " << (T + H - B) / 2
      << ")' text-anchor='middle'>" << yLabel << (logY ? " (log scale)" : "") << "</text>\n";
    auto label = [&](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", logY ? std::pow(10.0, v) : v);
        return std::string(buf);
    };
    f << "<text x='" << L - 6 << "' y='" << H - B << "' text-anchor='end'>" << label(y0)
      << "</text>\n"
      << "<text x='" << L - 6 << "' y='" << T + 10 << "' text-anchor='end'>" << label(y1)
      << "</text>\n"
      << "<text x='" << L << "' y='" << H - B + 16 << "' text-anchor='middle'>" << x0 << "</text>\n"
      << "<text x='" << W - R << "' y='" << H - B + 16 << "' text-anchor='middle'>" << x1
      << "</text>\n";
    int i = 0;
    for (const auto& [name, pts] : series) {
        const char* color = colors[i % 10];
        f << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
        for (const auto& [x, y] : pts)
            if (std::isfinite(y))
                f << px(x) << ',' << py(y) << ' ';
        f << "'/>\n<text x='" << W - R + 10 << "' y='" << T + 16 * i + 10 << "' fill='" << color
          << "'>" << name << "</text>\n";
        ++i;
    }
    f << "</svg>\n";
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
    std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> loss, flushed;
    for (const RunResult& r : results) {
        loss.emplace_back(r.preset, r.loss);
        flushed.emplace_back(r.preset, r.flushedActGrads);
    }
    writeSvg(args.out + "/loss.svg", "Training loss", "loss", loss, true);
    writeSvg(args.out + "/flushed.svg", "Activation gradients flushed to zero (mean over layers)",
             "share flushed", flushed, false);
    std::vector<ChartSeries> lossSeries, flushedSeries;
    for (const RunResult& r : results) {
        lossSeries.push_back({r.preset, r.loss});
        flushedSeries.push_back({r.preset, r.flushedActGrads});
    }
    writeLineChartPng(args.out + "/loss.png", "Training loss", "loss", lossSeries, true);
    writeLineChartPng(args.out + "/flushed.png", "Activation gradients flushed", "share flushed",
                      flushedSeries, false);
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
