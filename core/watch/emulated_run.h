// EmulatedRun: a PyTorch model trained under one of the core's recipes (precision_lab.torch.
// emulate). The program's own operators call cast() for each role's tensor of each emulated
// module; the casts are the RecipeCaster's (the trainer's own: formats, rounding with the run's
// Philox streams, amax and block scaling, weight tiles, the Hadamard operands), run on the CPU
// engine over the program's memory, and counted in the same pass on statistics steps. endStep()
// hands the step's scalars and counted rows to a WatchRecorder, whose thread writes them into
// the run record the app follows, so the program never waits on the disk.
//
// Casts may come from several threads (autograd's engine runs backward where it likes): they are
// serialised here.
#pragma once

#include "engine/cpu_ops.h"
#include "stats/training_snapshot.h"
#include "train/recipe_caster.h"
#include "util/thread_pool.h"
#include "watch/watch_recorder.h"

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

class EmulatedRun {
public:
    // Creates and locks the record (RecordError), checks the recipe against the stages
    // (ConfigError).
    EmulatedRun(const std::string& dir, const EmulationSettings& settings);

    const std::string& dir() const { return m_recorder->dir(); }
    std::int64_t step() const; // the step under way, 1-based
    bool statisticsStep() const;
    const RecipeCaster& caster() const { return m_caster; }

    // out <- the recipe's cast of in (n floats; out may be in) for the role at this stage, counted
    // on statistics steps. layout as RecipeCaster::cast. Each further call for the same stage and
    // role within a step (a module called twice) draws random words of its own.
    void cast(int stage, TensorRole role, const float* in, float* out, std::size_t n,
              const BlockLayout& layout);
    // The Hadamard weight-gradient operand (RecipeCaster::castAlongBatch): raw (batch, width)
    // -> out (width, batch), not counted.
    void castAlongBatch(int stage, TensorRole role, const float* raw, float* out, std::size_t batch,
                        std::size_t width);

    // Ends the step under way: its scalars and counted casts go to the record.
    void endStep(std::optional<double> loss, std::optional<double> learningRate, double scale,
                 bool skipped);
    void event(const std::string& type, const std::string& message);
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
    std::vector<std::array<std::uint8_t, kRoleCount>> m_calls; // casts this step
    std::vector<float> m_work;                                 // castAlongBatch's transform
};

} // namespace plab
