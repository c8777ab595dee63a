// RunLog: the run directory. config.json (replays the run), metrics.csv (a row per step),
// layers.csv (a row per stage, role and statistics step), histograms.csv (the non-empty log2|x|
// bins), events.jsonl, and summary.json. The directory is locked while a run writes it (a second
// run is refused, naming the holder), and an earlier run's folder is only reused when asked
// (overwrite). Each step's rows reach their file in one write of whole rows, and a failed write
// (a full disk, the folder removed) is cut back to the last whole row and thrown as RecordError;
// summary.json is only ever replaced by a complete new one ("finished": false until the run ends,
// refreshed with the steps completed while it runs).
#pragma once

#include "record/record_file.h"
#include "stats/training_snapshot.h"
#include "train/train_config.h"

#include <memory>
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

struct RunLogOptions {
    bool overwrite = false; // replace an earlier run's record in the same folder
};

class RunLog {
public:
    // Creates and locks the directory. Throws RecordError naming the path when it cannot be
    // created, is locked by another run, or holds an earlier run and overwrite is off.
    RunLog(const std::string& dir, const TrainConfig& config,
           const std::vector<std::string>& stageNames, const RunLogOptions& options = {});

    const std::string& dir() const { return m_dir; }
    void logStep(const StepScalars& s);
    void logStats(std::int64_t step, const std::vector<StageStats>& stages);
    void logEvent(std::int64_t step, const std::string& type, const std::string& message);
    void writeSummary(const RunSummary& summary); // atomic: temp file, sync, rename
    // The recipe changed mid-run: later layers.csv rows name the new formats.
    void setRecipe(const TrainConfig& config);

private:
    std::string m_dir;
    std::unique_ptr<RunDirectoryLock> m_lock;
    std::vector<std::string> m_stageNames;
    std::vector<std::string> m_roleFormats; // per stage * role
    int m_histogramsEvery = 1, m_statsSteps = 0;
    RowFile m_metrics, m_layers, m_histograms, m_events;
};

// How the run log writes a number: "nan", "inf", "-inf" for those (never an empty cell, which
// means "not measured"), else the shortest text that reads back as the same double.
std::string recordNumber(double v);

} // namespace plab
