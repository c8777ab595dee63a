// What summary.json and the record's summary table say about a run: how it ended and its final
// numbers. Written while the run goes ("finished": false, the steps completed) and at its end.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace plab {

struct RunSummary {
    bool finished = false;
    std::string stopReason; // "completed", "stopped", "diverged at step N: ...", ...
    std::int64_t steps = 0;
    std::int64_t skippedSteps = 0;
    double finalTrainLoss = 0.0;
    double testLoss = 0.0, testAccuracy = 0.0;
    double wallSeconds = 0.0;
    double samplesPerSecond = 0.0;
};

// JSON has no NaN: a NaN is written as null, and null reads back as NaN.
nlohmann::json toJson(const RunSummary& summary);
RunSummary runSummaryFromJson(const nlohmann::json& j);

} // namespace plab
