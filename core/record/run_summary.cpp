// RunSummary <-> JSON.
#include "record/run_summary.h"

#include <limits>

namespace plab {

nlohmann::json toJson(const RunSummary& s) {
    return {{"finished", s.finished},
            {"stop_reason", s.stopReason},
            {"steps", s.steps},
            {"skipped_steps", s.skippedSteps},
            {"final_train_loss", s.finalTrainLoss},
            {"test_loss", s.testLoss},
            {"test_accuracy", s.testAccuracy},
            {"wall_seconds", s.wallSeconds},
            {"samples_per_second", s.samplesPerSecond}};
}

RunSummary runSummaryFromJson(const nlohmann::json& j) {
    const auto number = [&](const char* key) {
        const auto it = j.find(key);
        return it != j.end() && it->is_number() ? it->get<double>()
                                                : std::numeric_limits<double>::quiet_NaN();
    };
    RunSummary s;
    s.finished = j.value("finished", false);
    s.stopReason = j.value("stop_reason", std::string());
    s.steps = j.value("steps", std::int64_t{0});
    s.skippedSteps = j.value("skipped_steps", std::int64_t{0});
    s.finalTrainLoss = number("final_train_loss");
    s.testLoss = number("test_loss");
    s.testAccuracy = number("test_accuracy");
    s.wallSeconds = number("wall_seconds");
    s.samplesPerSecond = number("samples_per_second");
    return s;
}

} // namespace plab
