// What summary.json and the record's summary table say about a run: how it ended and its final
// numbers. Written while the run goes ("finished": false, the steps completed) and at its end.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <map>
#include <string>

namespace plab {

struct RunSummary {
    bool finished = false;
    std::string stopReason; // "completed", "stopped", "diverged at step N: ...", ...
    std::int64_t steps = 0;
    std::int64_t skippedSteps = 0;
    // NaN (null in JSON) until measured: a test loss of 0 would read as a perfect model.
    double finalTrainLoss = std::numeric_limits<double>::quiet_NaN();
    double testLoss = std::numeric_limits<double>::quiet_NaN(),
           testAccuracy = std::numeric_limits<double>::quiet_NaN();
    double wallSeconds = 0.0;
    double samplesPerSecond = 0.0;
    // A PyTorch script's own metrics (step(metrics={...})): the last value reported of each.
    std::map<std::string, double> finalMetrics;
};

// JSON has no NaN: a NaN is written as null, and null reads back as NaN.
nlohmann::json toJson(const RunSummary& summary);
RunSummary runSummaryFromJson(const nlohmann::json& j);

} // namespace plab
