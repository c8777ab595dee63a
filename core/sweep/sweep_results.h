// A sweep folder's results: per grid point and metric, the summary over the seeds that finished
// (mean, standard deviation, 95% interval: core/stats/seed_statistics.h) and, against the
// baseline preset at the same grid values, the difference with Welch's interval and a verdict.
// What `sweep` writes as sweep.csv and sweep.md and what the Compare dialog shows.
#pragma once

#include "record/run_record.h"
#include "stats/seed_statistics.h"
#include "sweep/run_groups.h"
#include "sweep/sweep_plan.h"

#include <map>
#include <string>
#include <vector>

namespace plab {

struct SweepMetric {
    std::string key;   // summary.json key (the flushed shares: the run analysis's means; a
                       // script's own metric: its name in final_metrics)
    std::string title; // table header
    bool higherIsBetter;
    double scale; // 100 for shares and accuracies shown in percent or points
    std::string unit;
    // Places shown: 2 for percentages, 4 otherwise.
    int decimals() const { return scale == 100.0 ? 2 : 4; }
};
// test_accuracy, test_loss, final_train_loss, skipped_steps, and the mean flushed share of each
// role: flushed_weights, flushed_activations, flushed_activation_gradients,
// flushed_weight_gradients (NaN for a run that never counted the role).
const std::vector<SweepMetric>& sweepMetrics();
// A script sweep's: its final loss, each metric its runs reported (`reported`, in order; higher
// is better for those in sweep.higherIsBetter), skipped steps and the flushed shares.
std::vector<SweepMetric> scriptSweepMetrics(const Sweep& sweep,
                                            const std::vector<std::string>& reported);

struct SweepPointResult {
    SweepPoint point;
    std::string name;
    int baseline = -1;    // index of the baseline point at the same grid values; -1: none
    std::size_t runs = 0; // runs done and counted
    std::vector<std::string> failed; // "seed-2: why" for runs that failed
    std::vector<std::string>
        missing; // "seed-k: not run yet" (or killed), "seed-k: to run again, ..."
    std::map<std::string, SeedSummary> metrics;
    std::map<std::string, Difference> differences; // absent for the baseline and without one
    std::map<std::string, std::string> verdicts;   // "baseline", "no fp32 run here", a verdict
};

struct SweepResults {
    Sweep sweep;
    std::vector<SweepPointResult> points;
    std::vector<SweepMetric> metrics;        // the table's columns, in order
    std::vector<std::string> verdictColumns; // the metrics whose verdicts the table shows
    std::string csv() const;      // one row per point: every metric's mean, sd, ci95, diff
    std::string markdown() const; // the table `sweep` prints, with a line on the statistics
};

// The metrics of finished runs, by run folder. A run that is done stays done, so a caller that
// collects again and again (the Compare dialog, as each run ends) reads each record once.
using RunMetricsCache = std::map<std::string, std::map<std::string, double>>;

// Reads every run folder of the sweep under `dir` (those not done are left out and listed);
// with a cache, a run it holds counts as done unread, and the done runs it does not hold yet
// are read into it.
SweepResults collectSweep(const Sweep& sweep, const std::string& dir,
                          RunMetricsCache* cache = nullptr);

// Run folders of any kind (trained, watched, emulated, sweep members) set side by side by group
// (compare --runs): each group a point, its runs its seeds; the columns the final loss, the test
// metrics and the script metrics the runs have, the verdicts against the baseline group.
SweepResults collectRunGroups(const std::vector<RunGroup>& groups, const std::string& baseline);

// The training loss of these runs as one curve with its band over them (bandOverSeeds, the
// app's Compare's too); runs whose record cannot be read are left out.
SeedBand lossOverRuns(const std::vector<std::string>& runs);
// Each point's, over its done runs, in the points' order: a sweep's loss-curve chart.
std::vector<SeedBand> sweepLossBands(const SweepResults& results, const std::string& dir);

// The metrics of one finished run, by metric key; given the run's analysis (run_record.h),
// only its summary.json is read.
std::map<std::string, double> readRunMetrics(const std::string& runDir);
std::map<std::string, double> readRunMetrics(const std::string& runDir,
                                             const RunAnalysis& analysis);

} // namespace plab
