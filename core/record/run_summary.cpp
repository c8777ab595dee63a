// RunSummary <-> JSON.
#include "record/run_summary.h"

#include <limits>

namespace plab {

nlohmann::json toJson(const RunSummary& s) {
    nlohmann::json j = {{"finished", s.finished},
                        {"stop_reason", s.stopReason},
                        {"steps", s.steps},
                        {"skipped_steps", s.skippedSteps},
                        {"final_train_loss", s.finalTrainLoss},
                        {"test_loss", s.testLoss},
                        {"test_accuracy", s.testAccuracy},
                        {"wall_seconds", s.wallSeconds},
                        {"samples_per_second", s.samplesPerSecond}};
    if (!s.finalMetrics.empty()) { // only a script that reports its own has them
        nlohmann::json metrics = nlohmann::json::object();
        for (const auto& [name, value] : s.finalMetrics)
            metrics[name] = value; // a NaN as null
        j["final_metrics"] = std::move(metrics);
    }
    return j;
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
    if (const auto it = j.find("final_metrics"); it != j.end() && it->is_object())
        for (const auto& [name, value] : it->items())
            s.finalMetrics[name] =
                value.is_number() ? value.get<double>() : std::numeric_limits<double>::quiet_NaN();
    return s;
}

} // namespace plab
