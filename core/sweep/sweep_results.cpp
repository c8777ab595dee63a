#include "sweep_results.h"

#include "record/record_number.h"
#include "train/run_checkpoint.h"

#include <filesystem>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

namespace plab {
namespace {

double number(const nlohmann::json& summary, const char* key) {
    const auto it = summary.find(key);
    return it != summary.end() && it->is_number() ? it->get<double>()
                                                  : std::numeric_limits<double>::quiet_NaN();
}

} // namespace

const std::vector<SweepMetric>& sweepMetrics() {
    static const std::vector<SweepMetric> metrics = {
        {"test_accuracy", "test accuracy (%)", true, 100.0, " points"},
        {"test_loss", "test loss", false, 1.0, ""},
        {"final_train_loss", "final train loss", false, 1.0, ""},
        {"skipped_steps", "skipped steps", false, 1.0, ""},
        {"flushed_weights", "flushed weights (%)", false, 100.0, " points"},
        {"flushed_activations", "flushed activations (%)", false, 100.0, " points"},
        {"flushed_activation_gradients", "flushed act. gradients (%)", false, 100.0, " points"},
        {"flushed_weight_gradients", "flushed weight gradients (%)", false, 100.0, " points"},
    };
    return metrics;
}

std::map<std::string, double> readRunMetrics(const std::string& runDir) {
    return readRunMetrics(runDir, analyseRun(RunRecord(runDir)));
}

std::vector<SweepMetric> scriptSweepMetrics(const Sweep& sweep,
                                            const std::vector<std::string>& reported) {
    std::vector<SweepMetric> out = {{"final_train_loss", "final loss", false, 1.0, ""}};
    for (const std::string& name : reported) {
        const bool higher = std::find(sweep.higherIsBetter.begin(), sweep.higherIsBetter.end(),
                                      name) != sweep.higherIsBetter.end();
        out.push_back({name, name, higher, 1.0, ""});
    }
    for (const SweepMetric& m : sweepMetrics())
        if (m.key != "test_accuracy" && m.key != "test_loss" && m.key != "final_train_loss")
            out.push_back(m);
    return out;
}

std::map<std::string, double> readRunMetrics(const std::string& runDir, const RunAnalysis& a) {
    std::map<std::string, double> m;
    std::ifstream in(runDir + "/summary.json");
    const nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
    // A script's own metrics first: a built-in key below wins over a metric of the same name.
    if (s.is_object() && s.contains("final_metrics") && s.at("final_metrics").is_object())
        for (const auto& [name, value] : s.at("final_metrics").items())
            m[name] =
                value.is_number() ? value.get<double>() : std::numeric_limits<double>::quiet_NaN();
    for (const char* key : {"test_accuracy", "test_loss", "final_train_loss", "skipped_steps"})
        m[key] = s.is_object() ? number(s, key) : std::numeric_limits<double>::quiet_NaN();
    for (const char* role :
         {"weights", "activations", "activation_gradients", "weight_gradients"}) {
        // A role never counted (no statistics step, or nothing nonzero in it) has no share:
        // NaN, which the tables show as no value rather than as 0% flushed.
        const auto it = a.meanFlushed.find(role);
        m[std::string("flushed_") + role] =
            it == a.meanFlushed.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
    }
    return m;
}

namespace {
std::map<std::string, double> metricsOf(const std::string& run, RunMetricsCache* cache) {
    if (cache == nullptr)
        return readRunMetrics(run);
    if (const auto it = cache->find(run); it != cache->end())
        return it->second;
    return (*cache)[run] = readRunMetrics(run);
}
} // namespace

namespace {

using PointValues = std::vector<std::map<std::string, std::vector<double>>>;

// Whether any run of any point has a finite value of `key`.
bool measured(const PointValues& pointValues, const std::string& key) {
    return std::any_of(pointValues.begin(), pointValues.end(), [&](const auto& values) {
        const auto it = values.find(key);
        return it != values.end() && std::any_of(it->second.begin(), it->second.end(),
                                                 [](double v) { return std::isfinite(v); });
    });
}

// The table's columns and the metrics judged: the core's, or (ownMetrics: a script sweep, or
// runs of any kind set side by side) the final loss, the test metrics where some run has them,
// each metric the runs reported, and the rest of the core's.
void chooseColumns(SweepResults& results, const PointValues& pointValues, bool ownMetrics) {
    if (!ownMetrics) {
        results.metrics = sweepMetrics();
        results.verdictColumns = {"test_accuracy", "test_loss"};
        return;
    }
    std::vector<std::string> reported;
    for (const auto& values : pointValues)
        for (const auto& [key, v] : values) {
            const bool builtIn = std::any_of(sweepMetrics().begin(), sweepMetrics().end(),
                                             [&](const SweepMetric& m) { return m.key == key; });
            if (!builtIn && std::find(reported.begin(), reported.end(), key) == reported.end())
                reported.push_back(key);
        }
    results.metrics = scriptSweepMetrics(results.sweep, reported);
    results.verdictColumns = {"final_train_loss"};
    for (const SweepMetric& m : sweepMetrics()) // runs the core trained have test metrics
        if ((m.key == "test_accuracy" || m.key == "test_loss") && measured(pointValues, m.key)) {
            results.metrics.insert(results.metrics.begin() + 1, m);
            results.verdictColumns.insert(results.verdictColumns.begin() + 1, m.key);
        }
    results.verdictColumns.insert(results.verdictColumns.end(), reported.begin(), reported.end());
}

// Each point's summaries of the columns, and the verdicts against the baseline point at the same
// grid values.
void judge(SweepResults& results, PointValues& pointValues, bool ownMetrics) {
    chooseColumns(results, pointValues, ownMetrics);
    const std::vector<SweepPoint> points = results.sweep.points();
    for (std::size_t i = 0; i < points.size(); ++i)
        for (const SweepMetric& m : results.metrics)
            results.points[i].metrics[m.key] = summarise(pointValues[i][m.key]);
    for (std::size_t i = 0; i < points.size(); ++i) {
        SweepPointResult& r = results.points[i];
        for (std::size_t b = 0; b < points.size(); ++b)
            if (points[b].preset == results.sweep.baseline && points[b].values == points[i].values)
                r.baseline = static_cast<int>(b);
        for (const SweepMetric& m : results.metrics) {
            if (r.baseline < 0) {
                r.verdicts[m.key] = "no " + results.sweep.baseline + " run here";
                continue;
            }
            if (r.baseline == static_cast<int>(i)) {
                r.verdicts[m.key] = "baseline";
                continue;
            }
            const SeedSummary& base =
                results.points[static_cast<std::size_t>(r.baseline)].metrics[m.key];
            if (r.metrics[m.key].n == 0 || base.n == 0) {
                r.verdicts[m.key] = "no finite values";
                continue;
            }
            const Difference d = difference(r.metrics[m.key], base);
            r.differences[m.key] = d;
            r.verdicts[m.key] =
                verdict(d, std::min(r.metrics[m.key].n, base.n), m.higherIsBetter, m.scale, m.unit);
        }
    }
}

} // namespace

SweepResults collectSweep(const Sweep& sweep, const std::string& dir, RunMetricsCache* cache) {
    SweepResults results{sweep, {}, {}, {}};
    const std::vector<SweepPoint> points = sweep.points();
    PointValues pointValues;
    for (const SweepPoint& p : points) {
        SweepPointResult r;
        r.point = p;
        r.name = p.name(sweep);
        std::map<std::string, std::vector<double>>& values = pointValues.emplace_back();
        for (int seed = 1; seed <= sweep.seeds; ++seed) {
            const std::string run = sweep.runFolder(dir, p, seed);
            const std::string label = "seed-" + std::to_string(seed);
            const nlohmann::json planned = sweep.runConfigJson(p, seed);
            // A run whose metrics are cached was done with this plan: its files are not read
            // again (Compare collects after every run that ends).
            const bool cached = cache != nullptr && cache->count(run) != 0;
            switch (cached ? SweepRunState::Done : sweepRunState(run, planned)) {
            case SweepRunState::Done: {
                ++r.runs;
                for (const auto& [key, v] : metricsOf(run, cache))
                    values[key].push_back(v);
                break;
            }
            case SweepRunState::Failed: {
                std::ifstream marker(failedMarker(run));
                std::string why;
                std::getline(marker, why);
                r.failed.push_back(label + ": " + (why.empty() ? "failed" : why));
                break;
            }
            case SweepRunState::ToRun: {
                // Why it is to run: never started, stopped before its end (a signal, Stop), or
                // it trained other settings (sweep.json edited since), which it says.
                const bool started = std::filesystem::exists(run + "/summary.json");
                const std::string differs =
                    started && runEndedWithResult(run) ? runDiffersFromPlan(run, planned) : "";
                r.missing.push_back(
                    label + (!differs.empty() ? ": to run again, its run trained other settings (" +
                                                    differs + ")"
                             : started && std::filesystem::exists(run + "/" + kCheckpointFile)
                                 ? ": stopped before its end; goes on from its checkpoint when "
                                   "the sweep resumes"
                             : started ? ": stopped before its end; runs again when the sweep "
                                         "resumes"
                                       : ": not run yet"));
                break;
            }
            }
        }
        results.points.push_back(std::move(r));
    }
    judge(results, pointValues, sweep.isScript());
    return results;
}

SweepResults collectRunGroups(const std::vector<RunGroup>& groups, const std::string& baseline) {
    SweepResults results;
    results.sweep.presets.clear(); // the groups are the points
    for (const RunGroup& g : groups)
        results.sweep.presets.push_back(g.name);
    results.sweep.baseline = baseline;
    results.sweep.seeds = 1;
    PointValues pointValues;
    for (const RunGroup& g : groups) {
        SweepPointResult r;
        r.point = {g.name, {}};
        r.name = g.name;
        std::map<std::string, std::vector<double>>& values = pointValues.emplace_back();
        for (const std::string& run : g.runs) {
            const std::string label = std::filesystem::path(run).lexically_normal().string();
            if (!runEndedWithResult(run)) {
                r.missing.push_back(label + ": no result (not finished)");
                continue;
            }
            try {
                for (const auto& [key, v] : readRunMetrics(run))
                    values[key].push_back(v);
                ++r.runs;
            } catch (const std::exception& e) {
                r.failed.push_back(label + ": " + e.what());
            }
        }
        results.points.push_back(std::move(r));
    }
    judge(results, pointValues, true);
    return results;
}

SeedBand lossOverRuns(const std::vector<std::string>& runs) {
    std::vector<std::vector<std::pair<double, double>>> curves;
    for (const std::string& run : runs) {
        try {
            std::vector<std::pair<double, double>>& curve = curves.emplace_back();
            for (const StepScalars& s : RunRecord(run).steps())
                curve.emplace_back(static_cast<double>(s.step), s.loss);
        } catch (const std::exception&) { // a record that cannot be read: no curve of it
            curves.pop_back();
        }
    }
    return bandOverSeeds(curves);
}

std::vector<SeedBand> sweepLossBands(const SweepResults& results, const std::string& dir) {
    std::vector<SeedBand> bands;
    for (const SweepPointResult& r : results.points) {
        std::vector<std::string> done;
        for (int seed = 1; seed <= results.sweep.seeds; ++seed) {
            const std::string run = results.sweep.runFolder(dir, r.point, seed);
            if (sweepRunState(run, results.sweep.runConfigJson(r.point, seed)) ==
                SweepRunState::Done)
                done.push_back(run);
        }
        bands.push_back(lossOverRuns(done));
    }
    return bands;
}

std::string SweepResults::csv() const {
    std::string out = "point,preset";
    for (const auto& [key, values] : sweep.grid)
        out += "," + key;
    out += ",runs";
    for (const SweepMetric& m : metrics)
        out += "," + m.key + "_mean," + m.key + "_sd," + m.key + "_ci95," + m.key + "_diff," +
               m.key + "_diff_ci95," + m.key + "_verdict";
    out += '\n';
    for (const SweepPointResult& r : points) {
        out += r.name + ',' + r.point.preset;
        for (const nlohmann::json& v : r.point.values)
            out += ',' + gridValueText(v);
        out += ',' + std::to_string(r.runs);
        for (const SweepMetric& m : metrics) {
            const SeedSummary& s = r.metrics.at(m.key);
            const auto d = r.differences.find(m.key);
            const std::string diff =
                d == r.differences.end()
                    ? ",,"
                    : recordNumber(d->second.mean) + ',' + recordNumber(d->second.ci95) + ',';
            const std::string text = r.verdicts.at(m.key) == "baseline" ? "" : r.verdicts.at(m.key);
            out += ',' + recordNumber(s.mean) + ',' + recordNumber(s.stdDev) + ',' +
                   recordNumber(s.ci95) + ',' + diff + '"' + text + '"';
        }
        out += '\n';
    }
    return out;
}

std::string SweepResults::markdown() const {
    const auto titleOf = [&](const std::string& key) {
        for (const SweepMetric& m : metrics)
            if (m.key == key)
                return m.title;
        return key;
    };
    std::string md = "| point | runs";
    for (const SweepMetric& m : metrics)
        md += " | " + m.title;
    for (const std::string& key : verdictColumns)
        md += " | vs " + sweep.baseline + ": " + titleOf(key);
    md += " |\n|---|---";
    for (std::size_t c = 0; c < metrics.size() + verdictColumns.size(); ++c)
        md += "|---";
    md += "|\n";
    for (const SweepPointResult& r : points) {
        md += "| " + r.name + " | " + std::to_string(r.runs);
        for (const SweepMetric& m : metrics) {
            // A dash where no run has a finite value, as in the app's table.
            md += " | " + meanWithInterval(r.metrics.at(m.key), m.scale, m.decimals());
        }
        for (const std::string& key : verdictColumns)
            md += " | " + r.verdicts.at(key);
        md += " |\n";
    }
    md += "\nCells: mean ± half-width of the 95% confidence interval over seeds (Student's t); "
          "verdicts: Welch's interval of the difference from " +
          sweep.baseline +
          " at the same grid values; –: no run has a value (a flushed share "
          "is measured on statistics steps only).\n";
    // Every run without a result, with why: a failed one's marker, a missing one's state.
    std::string without;
    for (const SweepPointResult& r : points) {
        for (const std::string& f : r.failed)
            without += "- " + r.name + "/" + f + " (failed; `--rerun-failed` runs it again)\n";
        for (const std::string& m : r.missing)
            without += "- " + r.name + "/" + m + "\n";
    }
    if (!without.empty())
        md += "\nRuns without a result:\n\n" + without;
    return md;
}

} // namespace plab
