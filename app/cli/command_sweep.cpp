// `sweep`: a grid of presets x config values x seeds, one `train` child per run (as many at once
// as there are cores), one run folder per run, resumable; then a table per grid point of each
// metric's mean, standard deviation and 95% interval over seeds, and against a baseline preset
// the difference with Welch's interval and a verdict (core/stats/seed_statistics.h).
#include "charts.h"
#include "child_runs.h"
#include "cli_commands.h"
#include "sweep_runner.h"

#include "record/record_file.h"
#include "record/record_number.h"
#include "record/run_record.h"
#include "stats/seed_statistics.h"
#include "train/train_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>
#include <thread>

namespace plab::cli {
namespace {

// The sweep as data: what sweep.json holds and a replay reads.
struct Sweep {
    std::vector<std::string> presets;
    int seeds = 1;
    std::vector<std::pair<std::string, std::vector<nlohmann::json>>> grid;
    std::vector<std::string> sets;
    std::int64_t steps = 300;
    int epochs = 0;
    std::string data;
    std::string baseline;

    nlohmann::json toJson() const {
        nlohmann::json g = nlohmann::json::array();
        for (const auto& [key, values] : grid)
            g.push_back({{"key", key}, {"values", values}});
        return {{"presets", presets}, {"seeds", seeds},   {"grid", g},    {"set", sets},
                {"steps", steps},     {"epochs", epochs}, {"data", data}, {"baseline", baseline}};
    }
};

// A grid value: JSON if it parses ("0.01", "true", "\"x\""), 2^k as the number, else the text.
nlohmann::json gridValue(const std::string& text) {
    if (text.size() > 2 && text.size() < 8 && text.starts_with("2^")) {
        const std::string k = text.substr(2);
        const bool digits =
            k.find_first_not_of("0123456789", k[0] == '-' ? 1 : 0) == std::string::npos && k != "-";
        if (digits)
            return std::ldexp(1.0, std::stoi(k));
    }
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    return j.is_discarded() ? nlohmann::json(text) : j;
}

Sweep sweepFromArgs(const SweepArgs& args) {
    Sweep s;
    s.presets = args.presets;
    s.seeds = args.seeds;
    s.sets = args.sets;
    s.steps = args.steps;
    s.epochs = args.epochs;
    s.data = args.data;
    s.baseline = args.baseline;
    for (const std::string& g : args.grid) {
        const auto eq = g.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == g.size())
            throw std::invalid_argument("sweep: --grid \"" + g +
                                        "\": expected key.path=value1,value2,...");
        std::vector<nlohmann::json> values;
        std::string rest = g.substr(eq + 1);
        for (std::size_t start = 0;;) {
            const auto comma = rest.find(',', start);
            values.push_back(gridValue(rest.substr(start, comma - start)));
            if (comma == std::string::npos)
                break;
            start = comma + 1;
        }
        s.grid.emplace_back(g.substr(0, eq), std::move(values));
    }
    return s;
}

Sweep sweepFromFile(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        throw std::invalid_argument(path + ": cannot open the sweep file");
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object())
        throw std::invalid_argument(path + ": not a JSON object (expected a sweep.json)");
    Sweep s;
    try {
        s.presets = j.at("presets").get<std::vector<std::string>>();
        s.seeds = j.value("seeds", 1);
        for (const nlohmann::json& g : j.value("grid", nlohmann::json::array()))
            s.grid.emplace_back(g.at("key").get<std::string>(),
                                g.at("values").get<std::vector<nlohmann::json>>());
        s.sets = j.value("set", std::vector<std::string>{});
        s.steps = j.value("steps", std::int64_t{300});
        s.epochs = j.value("epochs", 0);
        s.data = j.value("data", std::string());
        s.baseline = j.value("baseline", std::string("fp32"));
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(path + ": " + e.what());
    }
    return s;
}

// One grid point: a preset and one value per grid key.
struct Point {
    std::string preset;
    std::vector<nlohmann::json> values;         // in grid order
    std::string name(const Sweep& sweep) const; // "fp16-amp_train.lr=0.05"
    std::vector<std::string> settings(const Sweep& sweep) const {
        std::vector<std::string> out;
        for (std::size_t k = 0; k < values.size(); ++k)
            out.push_back(sweep.grid[k].first + "=" + values[k].dump());
        return out;
    }
};

std::string valueText(const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

std::vector<Point> expand(const Sweep& sweep) {
    std::vector<Point> points;
    for (const std::string& preset : sweep.presets) {
        std::vector<std::size_t> at(sweep.grid.size(), 0);
        for (;;) {
            Point p{preset, {}};
            for (std::size_t k = 0; k < at.size(); ++k)
                p.values.push_back(sweep.grid[k].second[at[k]]);
            points.push_back(p);
            std::size_t k = 0;
            while (k < at.size() && ++at[k] == sweep.grid[k].second.size())
                at[k++] = 0;
            if (k == at.size())
                break;
        }
    }
    return points;
}

std::string Point::name(const Sweep& sweep) const {
    std::string n = preset;
    for (std::size_t k = 0; k < values.size(); ++k)
        n += "_" + sweep.grid[k].first + "=" + valueText(values[k]);
    for (char& c : n)
        if (c == '/' || c == ' ' || c == '"')
            c = '-';
    return n;
}

// What a run folder holds: done (finished, or ended early with a result: diverged), killed or
// never started (to run), or failed (to rerun on request). A failed child leaves DIR.failed with
// its reason (a run refused for bad input writes no summary to tell).
enum class RunState { Done, ToRun, Failed };
std::string failedMarker(const std::string& dir) {
    return dir + ".failed";
}
RunState stateOf(const std::string& dir) {
    if (std::filesystem::exists(failedMarker(dir)))
        return RunState::Failed;
    std::ifstream in(dir + "/summary.json");
    if (!in)
        return RunState::ToRun;
    const nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
    if (!s.is_object())
        return RunState::ToRun;
    if (s.value("finished", false))
        return RunState::Done;
    const std::string reason = s.value("stop_reason", std::string());
    if (reason.rfind("diverged", 0) == 0)
        return RunState::Done;
    if (reason == "running" || reason.rfind("ended without writing its summary", 0) == 0 ||
        reason.rfind("interrupted", 0) == 0 || reason.rfind("stopped", 0) == 0)
        return RunState::ToRun; // killed, interrupted: the sweep was stopped, not the run
    return RunState::Failed;
}

double number(const nlohmann::json& summary, const char* key) {
    const auto it = summary.find(key);
    return it != summary.end() && it->is_number() ? it->get<double>()
                                                  : std::numeric_limits<double>::quiet_NaN();
}

struct Metric {
    const char* key;   // column name
    const char* title; // Markdown header
    bool higherIsBetter;
    double scale; // for the table: 100 for shares in percent or points
    const char* unit;
};
constexpr Metric kMetrics[] = {
    {"test_accuracy", "test accuracy (%)", true, 100.0, " points"},
    {"test_loss", "test loss", false, 1.0, ""},
    {"final_train_loss", "final train loss", false, 1.0, ""},
    {"skipped_steps", "skipped steps", false, 1.0, ""},
    {"flushed_activation_gradients", "flushed act. gradients (%)", false, 100.0, " points"},
    {"flushed_weight_gradients", "flushed weight gradients (%)", false, 100.0, " points"},
};

// The metrics of one finished run, by kMetrics key.
std::map<std::string, double> readMetrics(const std::string& dir) {
    std::map<std::string, double> m;
    std::ifstream in(dir + "/summary.json");
    const nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
    for (const char* key : {"test_accuracy", "test_loss", "final_train_loss", "skipped_steps"})
        m[key] = s.is_object() ? number(s, key) : std::numeric_limits<double>::quiet_NaN();
    const RunAnalysis a = analyseRun(RunRecord(dir));
    for (const char* role : {"activation_gradients", "weight_gradients"}) {
        const auto it = a.meanFlushed.find(role);
        m[std::string("flushed_") + role] = it == a.meanFlushed.end() ? 0.0 : it->second;
    }
    return m;
}

std::string fixed(double v, double scale, int decimals) {
    if (!std::isfinite(v))
        return "nan";
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", decimals, v * scale);
    return text;
}

} // namespace

int runSweep(const SweepArgs& args) {
    Sweep sweep = args.file.empty() ? sweepFromArgs(args) : sweepFromFile(args.file);
    if (sweep.presets.empty() || sweep.seeds < 1)
        throw std::invalid_argument("sweep: nothing to run (expected presets and --seeds >= 1)");
    for (const std::string& p : sweep.presets)
        findPreset(p);                             // a bad name fails before anything runs
    for (const auto& [key, values] : sweep.grid) { // a bad key or value too: config-check each
        for (const nlohmann::json& v : values) {
            nlohmann::json j = findPreset(sweep.presets.front()).json;
            applySetting(j, key + "=" + v.dump());
            try {
                configFromJson(j);
            } catch (const ConfigError& e) {
                throw std::invalid_argument("sweep: --grid " + key + "=" + valueText(v) + ": " +
                                            e.what());
            }
        }
    }
    std::error_code ec;
    std::filesystem::create_directories(args.out, ec);
    if (ec || !std::filesystem::is_directory(args.out))
        throw std::runtime_error(args.out + ": cannot create the sweep folder");
    // The sweep file: `sweep --file DIR/sweep.json --out DIR` resumes or replays it.
    writeFileAtomically(args.out + "/sweep.json", sweep.toJson().dump(2) + "\n");

    const std::vector<Point> points = expand(sweep);
    const std::string self = selfExecutable();
    std::map<std::string, std::string> failures; // run folder -> why
    int started = 0, skipped = 0;
    ChildRuns children(
        args.jobs > 0 ? args.jobs : std::thread::hardware_concurrency(),
        [&](const std::string& dir, int code) {
            const bool ran = code == 0 || code == kExitTrainingFailed;
            if (!ran) {
                const std::string why = lastLine(dir + ".stderr.log");
                failures[dir] = "exit " + std::to_string(code) + (why.empty() ? "" : ": " + why);
                writeFileAtomically(failedMarker(dir), failures[dir] + "\n");
            }
            std::fprintf(stderr, "sweep: %s %s\n", dir.c_str(), ran ? "done" : "FAILED");
        });
    for (const Point& p : points)
        for (int seed = 1; seed <= sweep.seeds; ++seed) {
            const std::string dir =
                args.out + "/" + p.name(sweep) + "/seed-" + std::to_string(seed);
            const RunState state = stateOf(dir);
            if (state == RunState::Done || (state == RunState::Failed && !args.rerunFailed)) {
                ++skipped;
                if (state == RunState::Failed)
                    failures[dir] = "failed earlier: " + lastLine(failedMarker(dir)) +
                                    " (rerun with --rerun-failed)";
                continue;
            }
            std::filesystem::create_directories(args.out + "/" + p.name(sweep), ec);
            std::filesystem::remove(failedMarker(dir), ec);
            std::vector<std::string> argv = {self, "train", "--preset", p.preset,     "--threads",
                                             "1",  "--out", dir,        "--overwrite"};
            if (sweep.epochs > 0)
                argv.insert(argv.end(), {"--epochs", std::to_string(sweep.epochs)});
            else
                argv.insert(argv.end(), {"--steps", std::to_string(sweep.steps)});
            for (const std::string& s : sweep.sets)
                argv.insert(argv.end(), {"--set", s});
            for (const std::string& s : p.settings(sweep))
                argv.insert(argv.end(), {"--set", s});
            argv.insert(argv.end(), {"--set", "seed=" + std::to_string(seed)});
            if (!sweep.data.empty())
                argv.insert(argv.end(), {"--data", sweep.data});
            children.start(dir, argv, dir + ".stderr.log");
            ++started;
        }
    children.waitAll();
    std::fprintf(stderr, "sweep: %d run(s) started, %d found done or failed earlier\n", started,
                 skipped);

    // Per point and metric, the values over seeds.
    std::vector<std::map<std::string, SeedSummary>> summaries(points.size());
    std::vector<std::size_t> counts(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
        std::map<std::string, std::vector<double>> values;
        for (int seed = 1; seed <= sweep.seeds; ++seed) {
            const std::string dir =
                args.out + "/" + points[i].name(sweep) + "/seed-" + std::to_string(seed);
            if (failures.count(dir) || stateOf(dir) != RunState::Done)
                continue;
            ++counts[i];
            for (const auto& [key, v] : readMetrics(dir))
                values[key].push_back(v);
        }
        for (const Metric& m : kMetrics)
            summaries[i][m.key] = summarise(values[m.key]);
    }
    // The baseline of a point: the baseline preset at the same grid values.
    const auto baselineOf = [&](const Point& p) -> int {
        for (std::size_t i = 0; i < points.size(); ++i)
            if (points[i].preset == sweep.baseline && points[i].values == p.values)
                return static_cast<int>(i);
        return -1;
    };
    std::string csv = "point,preset";
    std::string md = "| point | runs";
    for (const auto& [key, values] : sweep.grid)
        csv += "," + key;
    csv += ",runs";
    for (const Metric& m : kMetrics) {
        csv += std::string(",") + m.key + "_mean," + m.key + "_sd," + m.key + "_ci95," + m.key +
               "_diff," + m.key + "_diff_ci95," + m.key + "_verdict";
        md += std::string(" | ") + m.title;
    }
    csv += '\n';
    md += " | vs " + sweep.baseline + ": test accuracy | vs " + sweep.baseline +
          ": test loss |\n|---|---";
    for (std::size_t c = 0; c < std::size(kMetrics) + 2; ++c)
        md += "|---";
    md += "|\n";
    for (std::size_t i = 0; i < points.size(); ++i) {
        const Point& p = points[i];
        const int base = baselineOf(p);
        csv += p.name(sweep) + ',' + p.preset;
        for (const nlohmann::json& v : p.values)
            csv += ',' + valueText(v);
        csv += ',' + std::to_string(counts[i]);
        md += "| " + p.name(sweep) + " | " + std::to_string(counts[i]);
        std::map<std::string, std::string> verdicts;
        for (const Metric& m : kMetrics) {
            const SeedSummary& s = summaries[i][m.key];
            std::string diff = ",,", text = base < 0 ? "no " + sweep.baseline + " run here" : "";
            if (base >= 0 && base != static_cast<int>(i)) {
                const Difference d =
                    difference(s, summaries[static_cast<std::size_t>(base)][m.key]);
                text = verdict(d, std::min(s.n, summaries[static_cast<std::size_t>(base)][m.key].n),
                               m.higherIsBetter, m.scale, m.unit);
                diff = recordNumber(d.mean) + ',' + recordNumber(d.ci95) + ',';
            }
            verdicts[m.key] = base == static_cast<int>(i) ? "baseline" : text;
            csv += ',' + recordNumber(s.mean) + ',' + recordNumber(s.stdDev) + ',' +
                   recordNumber(s.ci95) + ',' + diff + '"' + text + '"';
            const int decimals = m.scale == 100.0 ? 2 : 4;
            md += " | " + fixed(s.mean, m.scale, decimals) +
                  (std::isfinite(s.ci95) ? " ± " + fixed(s.ci95, m.scale, decimals) : "");
        }
        csv += '\n';
        md += " | " + verdicts["test_accuracy"] + " | " + verdicts["test_loss"] + " |\n";
    }
    md += "\nCells: mean ± half-width of the 95% confidence interval over seeds (Student's t); "
          "verdicts: Welch's interval of the difference from " +
          sweep.baseline + " at the same grid values.\n";
    writeFileAtomically(args.out + "/sweep.csv", csv);
    writeFileAtomically(args.out + "/sweep.md", md);
    // The final metrics with their intervals, one bar per grid point.
    if (!chartsAvailable())
        std::fprintf(stderr, "sweep: charts skipped: this build has no Cairo\n");
    for (const Metric& m : kMetrics) {
        if (!chartsAvailable() ||
            (std::string(m.key) != "test_accuracy" && std::string(m.key) != "test_loss"))
            continue;
        std::vector<ChartEstimate> estimates;
        for (std::size_t i = 0; i < points.size(); ++i) {
            const SeedSummary& s = summaries[i][m.key];
            estimates.push_back({points[i].name(sweep), s.mean * m.scale, s.ci95 * m.scale});
        }
        writeErrorBarCharts(args.out + "/" + m.key,
                            std::string(m.title) + ": mean and 95% interval over seeds", m.title,
                            estimates);
    }
    std::printf("%s", md.c_str());
    if (!failures.empty()) {
        for (const auto& [dir, why] : failures)
            std::fprintf(stderr, "sweep: %s: %s\n", dir.c_str(), why.c_str());
        return kExitTrainingFailed;
    }
    return 0;
}

Command addSweepCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "sweep", "Presets x config values x seeds, with means, intervals and verdicts over seeds");
    auto args = std::make_shared<SweepArgs>();
    cmd->add_option("--file", args->file, "A sweep.json (written into every sweep folder)");
    cmd->add_option("--presets", args->presets, "Presets, comma-separated")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--seeds", args->seeds, "Seeds 1..N per grid point")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    cmd->add_option(
        "--grid", args->grid,
        "key.path=v1,v2,... (repeatable; 2^k is the number), e.g. scaling.scale=2^8,2^12");
    cmd->add_option("--set", args->sets, "key.path=value applied to every run");
    cmd->add_option("--steps", args->steps, "Steps per run")
        ->check(wholeNumberAtLeast(1))
        ->capture_default_str();
    cmd->add_option("--epochs", args->epochs, "Epochs per run, instead of --steps")
        ->check(wholeNumberAtLeast(1));
    cmd->add_option("--data", args->data, "The runs' data source");
    cmd->add_option("--baseline", args->baseline, "The preset differences are taken from")
        ->capture_default_str();
    cmd->add_option("--out", args->out, "Sweep folder")->capture_default_str();
    cmd->add_option("--jobs", args->jobs, "Runs at once (0: one per core)")->capture_default_str();
    cmd->add_flag("--rerun-failed", args->rerunFailed, "Run again the runs that failed before");
    return {cmd, [args] { return runSweep(*args); }};
}

} // namespace plab::cli
