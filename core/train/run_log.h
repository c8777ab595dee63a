// RunLog: the run directory. config.json (replays the run), metrics.csv (a row per step),
// layers.csv (a row per stage, role and statistics step), histograms.csv (the non-empty log2|x|
// bins), events.jsonl, and summary.json. Every write is flushed, so a run killed mid-way keeps
// every completed step; summary.json says "finished": false until the run ends.
#pragma once

#include "stats/training_snapshot.h"
#include "train/train_config.h"

#include <fstream>
#include <string>
#include <vector>

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

class RunLog {
public:
    // Creates the directory (and parents). Throws std::runtime_error naming the path if it
    // cannot be created or written.
    RunLog(const std::string& dir, const TrainConfig& config,
           const std::vector<std::string>& stageNames);

    const std::string& dir() const { return m_dir; }
    void logStep(const StepScalars& s);
    void logStats(std::int64_t step, const std::vector<StageStats>& stages);
    void logEvent(std::int64_t step, const std::string& type, const std::string& message);
    void writeSummary(const RunSummary& summary); // atomic: temp file, then rename

private:
    std::ofstream open(const std::string& name);

    std::string m_dir;
    std::vector<std::string> m_stageNames;
    std::vector<std::string> m_roleFormats; // per stage * role
    std::ofstream m_metrics, m_layers, m_histograms, m_events;
};

} // namespace plab
