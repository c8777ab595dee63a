// EmulatedRun: a PyTorch model trained under one of the core's recipes (precision_lab.torch.
// emulate). The program's own operators call cast() for each role's tensor of each emulated
// module; the casts are the RecipeCaster's (the trainer's own: formats, rounding with the run's
// Philox streams, amax and block scaling, weight tiles, the Hadamard operands), run on the CPU
// engine over the program's memory, and counted in the same pass on statistics steps. endStep()
// hands the step's scalars and counted rows to a WatchRecorder, whose thread writes them into
// the run record the app follows, so the program never waits on the disk.
//
// Steering (run_commands.h): at each step boundary the program calls steer(), which applies the
// edits of a replayed timeline that are due and the commands another process (the app) wrote into
// the run's folder: a recipe or scaling change goes to the casts from the next step on, and is
// recorded as an event and an entry of config.json's timeline, so that running the script again
// with that config does the same steps. The program's loss scaler (Python's) takes the scaling
// part of each change steer() returns.
//
// Casts may come from several threads (autograd's engine runs backward where it likes): they are
// serialised here.
#pragma once

#include "engine/cpu_ops.h"
#include "recipe/recipe_caster.h"
#include "record/run_commands.h"
#include "stats/training_snapshot.h"
#include "torch_runs/watch_recorder.h"
#include "train/run_timeline.h"
#include "util/thread_pool.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace plab {

struct EmulationSettings {
    TrainConfig config;                  // the recipe, scaling settings and seed (the rest unused)
    std::vector<std::string> stageNames; // the emulated modules, in order
    int every = 1;                       // statistics every `every` steps (the first included)
    int histogramsEvery = 10;            // statistics steps between recorded histograms
    unsigned threads = 1;                // the casts' threads
    nlohmann::json description;          // what the emulator was given: config.json and meta
    bool overwrite = false;
};

// A change steer() applied, for the program's side of it (its loss scaler takes "scaling").
struct SteeringChange {
    std::string action; // "set" (an edit), "pause", "resume", "step"
    nlohmann::json set; // "set": the config patch applied
};

class EmulatedRun {
public:
    // Creates and locks the record (RecordError), checks the recipe against the stages
    // (ConfigError).
    EmulatedRun(const std::string& dir, const EmulationSettings& settings);

    const std::string& dir() const { return m_recorder->dir(); }
    std::int64_t step() const; // the step under way, 1-based
    bool statisticsStep() const;
    const RecipeCaster& caster() const { return m_caster; }

    // What a checkpoint of the script (the model's state_dict) keeps of the emulation, so that a
    // run resumed from it casts the next step as the uninterrupted run would (issue 65 item
    // 16; Transformer Engine keeps its amax histories in the module's _extra_state): the steps
    // taken (the casts' random streams are the step's) and the delayed-scaling amax histories.
    // kCastingStateVersion first.
    static constexpr double kCastingStateVersion = 1.0;
    std::vector<double> castingState() const;
    // Before the first step only (ConfigError otherwise, and for a state of another recipe's
    // stages or version): the record's steps then go on from the saved step's number.
    void restoreCastingState(const std::vector<double>& state);

    // out <- the recipe's cast of in (n floats; out may be in) for the role at this stage, counted
    // on statistics steps. layout as RecipeCaster::cast. Each further call for the same stage and
    // role within a step (a module called twice) draws random words of its own.
    // agreedAmax: RecipeCaster::cast's (the data-parallel group's amax), kOwnAmax otherwise.
    // training false (a forward under torch.no_grad: an evaluation): cast as training would,
    // but neither counted nor entered in an amax history, and drawing no call of its own, so
    // that training goes on as if it had not run.
    void cast(int stage, TensorRole role, const float* in, float* out, std::size_t n,
              const BlockLayout& layout, double agreedAmax = RecipeCaster::kOwnAmax,
              bool training = true);
    // The Hadamard weight-gradient operand (RecipeCaster::castAlongBatch): raw (batch, width)
    // -> out (width, batch), not counted.
    void castAlongBatch(int stage, TensorRole role, const float* raw, float* out, std::size_t batch,
                        std::size_t width);

    // Ends the step under way: its scalars, the script's own metrics and the counted casts go to
    // the record.
    void endStep(std::optional<double> loss, std::optional<double> learningRate, double scale,
                 bool skipped, std::map<std::string, double> metrics = {});
    void event(const std::string& type, const std::string& message);

    // At the boundary before the step under way: the replayed timeline's edits that are due (of
    // the steps taken so far), then the commands written since the last look. Each is applied, or
    // refused with an event saying why (never an exception: a bad command is the sender's
    // mistake, not the script's). Returns the changes applied, in order.
    std::vector<SteeringChange> steer();
    // Whether the program must wait at this boundary (paused from the app, no step granted); it
    // calls steer() again while it waits.
    bool holding() const;
    bool paused() const;
    // The recipe and scaling the casts use now: the run's config with every edit applied.
    TrainConfig effectiveConfig() const;
    void flush() { m_recorder->flush(); }
    void close(const std::string& reason, bool finished);

private:
    EmulationSettings m_settings;
    CpuOps m_ops;
    ThreadPool m_pool;
    RecipeCaster m_caster;
    std::unique_ptr<WatchRecorder> m_recorder;
    mutable std::mutex m_mutex;
    std::int64_t m_step = 1;
    std::vector<StageStats> m_stats;                  // the step's counts, by stage
    std::vector<std::array<bool, kRoleCount>> m_cast; // which (stage, role) were cast this step
    std::vector<float> m_work;                        // castAlongBatch's transform

    // Steering (under m_mutex).
    std::string applyChange(const nlohmann::json& patch, const std::string& from,
                            std::int64_t taken, std::vector<SteeringChange>& changes);
    void steeringEvent(std::int64_t step, const std::string& type, const std::string& message,
                       const nlohmann::json& change = nullptr);
    CommandInbox m_inbox;
    RunTimeline m_timeline; // the config with every edit so far, and what replays the run
    bool m_paused = false, m_holding = false;
    int m_stepsGranted = 0; // steps allowed while paused ("step" commands)
};

} // namespace plab
