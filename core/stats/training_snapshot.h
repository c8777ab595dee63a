// What a training step publishes: per-step scalars, and per stage and tensor role the format
// engine's counters and histograms, plus lost updates. Plain data, copied into the mailbox.
#pragma once

#include "numerics/block_stats.h"
#include "numerics/quant_stats.h"
#include "numerics/tensor_role.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace plab {

struct StepScalars {
    std::int64_t step = 0; // 1-based index of the step just taken
    int epoch = 0;
    double loss = 0.0;
    double accuracy = 0.0; // of this training batch
    double scale = 1.0;    // loss scale used by this step
    bool skipped = false;  // update discarded (overflow)
    double samplesPerSecond = 0.0;
    double learningRate = 0.0;
    bool evaluated = false; // the test set was evaluated after this step (test* below)
    double testLoss = std::numeric_limits<double>::quiet_NaN(); // NaN when not evaluated
    double testAccuracy = std::numeric_limits<double>::quiet_NaN();
};

struct StageStats {
    std::array<QuantStats, kRoleCount> roles;
    std::uint64_t updates = 0;     // weight updates attempted (nonzero update values)
    std::uint64_t lostUpdates = 0; // of those, how many left the master weight unchanged
    double gradientScale = 1.0;    // the scale this stage's gradients carried (per-layer policy)
    std::array<double, kRoleCount> tensorScale{1, 1, 1, 1, 1, 1}; // amax scaling, per role
    // The per-tensor scaling that cast each role ("none", "amax-current", "nvfp4", ...: the
    // stage's own or the run's, recipe/tensor_scaling.h); empty where not known.
    std::array<std::string_view, kRoleCount> scaling{};
    // Block scaling: NVFP4's s_enc lands in tensorScale; per-block statistics here.
    std::array<BlockStats, kRoleCount> blocks{};
    // A sample of each cast's unquantised input (stats/tensor_sample.h) for the format what-if,
    // in rows of samples' runLength values; empty for master weights and optimiser state.
    struct Sample {
        std::vector<float> values;
        std::size_t runLength = 0;
        // The whole tensor's largest finite |x| (what current amax scaling takes), for the
        // what-if's tensor-scaled rows; 0 when not known (a plain cast of a tensor holding an
        // Inf): the sample's own then.
        double tensorAmax = 0.0;
    };
    std::array<Sample, kRoleCount> samples{};
    // Transformer stages: per channel of the stage's input (the LayerNorm output its first
    // product reads), the largest |x| of the statistics step's forward; empty for other models.
    // Outlier channels (LLM.int8's outlier features) show here.
    std::vector<float> channelAmax;
    double lostUpdateFraction() const {
        return updates == 0 ? 0.0 : static_cast<double>(lostUpdates) / static_cast<double>(updates);
    }
    const QuantStats& role(TensorRole r) const { return roles[static_cast<std::size_t>(r)]; }
    QuantStats& role(TensorRole r) { return roles[static_cast<std::size_t>(r)]; }
};

// The mean over layers of the share of nonzero activation gradients flushed (layers whose
// gradients were all zero left out): the one curve Compare draws per run, live from snapshots
// and afterwards from the record. NaN when no layer had a nonzero gradient.
inline double meanFlushedActivationGradients(const std::vector<StageStats>& stages) {
    double sum = 0.0;
    int count = 0;
    for (const StageStats& st : stages) {
        const QuantStats& q = st.role(TensorRole::ActivationGradients);
        if (q.total() == q.count(QuantClass::Zero))
            continue; // nothing nonzero: no share to average
        sum += q.flushedShare();
        ++count;
    }
    return count > 0 ? sum / count : std::numeric_limits<double>::quiet_NaN();
}

struct TrainingSnapshot {
    StepScalars scalars;
    // Text models: what the model wrote at the latest evaluation (empty otherwise).
    std::string sample;
    std::int64_t sampleStep = 0;
    std::int64_t statsStep = 0; // step the stage statistics come from (they are every k steps)
    std::vector<std::string> stageNames;
    std::vector<StageStats> stages;
};

} // namespace plab
