// WatchRecorder: the run record of a training run that another program does (a PyTorch script
// under precision_lab.torch.watch). The program hands over each step's scalars and, on
// statistics steps, copies of its tensors per stage (module) and role; a counting thread judges
// every tensor in each watched format (the core's casts: counts, histogram, amax, error sums,
// per-block statistics) and writes the step as one transaction of the record, so that the app,
// `export` and `compare` read it like any run while it is written.
//
// The hand-over never waits for the counting: at most `queueSteps` statistics steps wait, and a
// further one is dropped, its scalars still recorded with an event that says so.
//
// An emulated run (precision_lab.torch.emulate, core/torch_runs/emulated_run.h) counts its casts
// itself, as they happen: its steps bring their counted rows, which this recorder writes as
// they are (its source "pytorch-emulate", no formats of its own to judge in).
#pragma once

#include "numerics/tensor_cast.h"
#include "record/run_summary.h"
#include "recipe/precision_recipe.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace plab {

class RunLog;
class CpuOps;
class ThreadPool;
struct FormatJudge; // one watched format or recipe candidate, and what casts in it

// What a record says wrote it: meta "source", and the meta key of its description.
enum class ExternalSource { Watch, Emulate };

struct WatchSettings {
    ExternalSource source = ExternalSource::Watch;
    // Any spec TensorCast takes, or a recipe candidate's name (train/recipe_candidates.h: the
    // tensor cast as that framework recipe casts it, scaled); the first is the default view.
    // Empty for an emulated run only.
    std::vector<std::string> formats;
    std::vector<std::string> stageNames; // the watched modules, in order
    int every = 10;                      // a statistics step every `every` steps
    std::size_t queueSteps = 4;          // statistics steps that may wait to be counted
    unsigned threads = 1;                // counting threads (1: the counting thread alone)
    nlohmann::json description;          // what the watcher was given: config.json and meta
    bool overwrite = false;              // replace an earlier record in the folder
    int histogramsEvery = 1;             // statistics steps between recorded histograms
};

struct CapturedTensor {
    std::size_t stage = 0;
    TensorRole role = TensorRole::Weights;
    std::vector<float> values; // a copy, owned: the program goes on with its own
    std::size_t rowLength = 0; // block formats' rows (the tensor's last dimension); 0: 1-D
    // What the values are multiplied by before they are judged: the loss scale for weight
    // gradients read after the optimiser unscaled them; 1 for values that carry it already
    // (activation gradients in backward) or that never do.
    float multiplier = 1.0f;
};

// A cast that was counted where it happened (an emulated run's): its row as it is.
struct CountedTensor {
    std::size_t stage = 0;
    TensorRole role = TensorRole::Weights;
    std::string format;
    QuantStats stats;
    BlockStats blocks;
    double tensorScale = 1.0;
    std::string scaling; // the per-tensor scaling that cast it (StageStats::scaling)
};

struct WatchedStep {
    std::int64_t step = 0;
    std::optional<double> loss, learningRate;
    double scale = 1.0;                    // the loss scale this step used (1 without one)
    bool skipped = false;                  // its update was skipped (an overflow)
    std::map<std::string, double> metrics; // the script's own (step(metrics={...}))
    bool statistics = false;
    std::vector<CapturedTensor> tensors;
    std::vector<CountedTensor> counted;
};

class WatchRecorder {
public:
    // Creates and locks the record (RecordError when the folder holds another run or cannot be
    // written; FormatError naming a format that does not parse) and starts the counting thread.
    WatchRecorder(const std::string& dir, const WatchSettings& settings);
    ~WatchRecorder(); // close("stopped", false) when close() was not called; never throws
    WatchRecorder(const WatchRecorder&) = delete;
    WatchRecorder& operator=(const WatchRecorder&) = delete;

    const std::string& dir() const { return m_dir; }
    const WatchSettings& settings() const { return m_settings; }

    // Hands a step over. Returns false when it was a statistics step and the queue was full:
    // its tensors are dropped (with an event), its scalars still recorded. Throws RecordError
    // with the counting thread's failure (a full disk) once there was one.
    bool submit(WatchedStep step);
    // change: the config patch an edit applied (an emulated run steered from the app), or null.
    void event(std::int64_t step, const std::string& type, const std::string& message,
               const nlohmann::json& change = nullptr);
    // The run's description (config.json and its meta) replaced, in order with the steps: an
    // emulated run's recipe and timeline after an edit.
    void describe(const nlohmann::json& description);
    // Waits until every step handed over is in the record.
    void flush();
    // Waits for the queue, writes the summary ("completed", or why it ended) and closes the
    // record (its write-ahead log folded in, the CSV/JSONL exports written). Idempotent.
    void close(const std::string& stopReason = "completed", bool finished = true);

    std::uint64_t droppedSteps() const;
    std::uint64_t recordedSteps() const;

private:
    struct Item {
        std::optional<WatchedStep> step;
        std::int64_t eventStep = 0;
        std::string eventType, eventMessage;
        nlohmann::json eventChange;                // null, or the patch an edit applied
        std::optional<nlohmann::json> description; // a new description to write
    };
    void enqueue(Item item);
    void countingLoop(std::stop_token stop);
    void record(const WatchedStep& step);
    // What the record knows of the run: its steps, skips, last loss and the seconds since the
    // recorder started; samples per second it cannot know (no batch size): NaN, null in JSON.
    RunSummary summaryNow(bool finished, const std::string& stopReason) const;
    void throwIfFailed() const; // m_mutex held

    std::string m_dir;
    WatchSettings m_settings;
    void judgeInCandidate(FormatJudge& judge, const WatchedStep& step, const CapturedTensor& t,
                          std::vector<float>& out, bool withHistograms);

    // FP32: the inputs' histogram when no format is a plain element format
    std::unique_ptr<TensorCast> m_histogramCast;
    std::vector<float> m_scaled;         // a candidate's input: the values times their multiplier
    std::vector<BlockInfo> m_blockInfos; // a block-scaled candidate's scales
    std::unique_ptr<RunLog> m_log;
    std::unique_ptr<ThreadPool> m_pool;
    std::unique_ptr<CpuOps> m_ops;     // the recipe candidates' casts run on the CPU engine
    std::vector<FormatJudge> m_judges; // one per format, in the settings' order (after m_ops)
    mutable std::mutex m_mutex;
    // m_wake waits with the stop token: a stop requested between the counting thread's check and
    // its sleep would otherwise be a lost wake-up, and close() would wait on the join for ever.
    std::condition_variable_any m_wake;
    std::condition_variable m_idle;
    std::deque<Item> m_queue;
    std::size_t m_waitingStatistics = 0;
    bool m_busy = false;
    std::string m_failure;
    std::uint64_t m_dropped = 0, m_recorded = 0;
    std::int64_t m_lastStep = 0, m_skippedSteps = 0;
    double m_lastLoss = std::nan("");
    std::map<std::string, double> m_lastMetrics; // each metric's last reported value
    std::chrono::steady_clock::time_point m_started = std::chrono::steady_clock::now();
    bool m_closed = false;
    std::jthread m_thread; // last: started after everything it reads
};

} // namespace plab
