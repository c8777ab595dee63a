// Trainer: one model, its data, recipe, optimiser and loss scaler, stepped synchronously. Every
// tensor passes through the format engine where hardware would round it, and on statistics steps
// the same quantise calls count classes and histograms per stage and role. TrainingSession runs
// a Trainer on its own thread; tests and benchmarks drive it directly.
#pragma once

#include "data/dataset.h"
#include "engine/optimizer.h"
#include "engine/tensor_ops.h"
#include "nn/model.h"
#include "numerics/amax_scaling.h"
#include "recipe/loss_scaler.h"
#include "recipe/recipe_caster.h"
#include "stats/training_snapshot.h"
#include "train/train_config.h"
#include "train/training_run.h"
#include "util/thread_pool.h"

#include <array>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace plab {

class Trainer final : public TrainingRun {
public:
    // Runs on the device config.device resolves to (see resolveDevice): a GPU's TensorOps when
    // one is usable, else the CPU's.
    Trainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data);
    // Runs on the given engine (tests: the GPU engine's kernels emulated on the host).
    Trainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data,
            std::unique_ptr<TensorOps> ops, std::string deviceNotice = {});

    StepResult step() override;
    Evaluation evaluate() override; // the whole test set, forward in the recipe's formats

    const TrainConfig& config() const { return m_config; }
    const Model& model() const { return m_model; }
    int stageCount() const override { return m_model.stageCount(); }
    std::vector<std::string> stageNames() const override;
    // The latest complete statistics, waiting for any still on their way from the device.
    const std::vector<StageStats>& stageStats() const override;
    std::int64_t statsStep() const override { return m_completeStep; } // their step; 0: none yet
    // The latest complete statistics without waiting (what a live view shows).
    const std::vector<StageStats>& completedStats() const override;
    // Waits for statistics on their way; true when that completed a step's (then stageStats()
    // and statsStep() hold them). Sessions call it where a run stops or pauses.
    bool flushStatistics() const override;
    std::vector<float> masterWeights() const;                         // a host copy
    std::string deviceName() const override { return m_ops->name(); } // "cpu", "cuda:0 (...)"
    // Why the engine is not the one asked for (e.g. no usable GPU); empty when it is.
    const std::string& deviceNotice() const override { return m_deviceNotice; }
    std::int64_t stepsTaken() const override { return m_step; }
    int epoch() const { return m_epoch; }
    std::int64_t stepsPerEpoch() const override;
    std::int64_t plannedSteps() const override; // from steps, or epochs x steps per epoch
    LossScaler& scaler() { return *m_scaler; }

    // Take effect at the next step.
    void setLearningRate(double lr) override { m_config.learningRate = lr; }
    void setLossScale(double scale) override { m_scaler->setScale(scale); }
    void setRecipe(const PrecisionRecipe& recipe) override;
    // Switches the scaling policy (scaling.* of the config) at the next step.
    void setScaling(const TrainConfig& scaling) override;
    void saveState(RunCheckpoint& checkpoint) const override;
    void restoreState(const RunCheckpoint& checkpoint) override;

private:
    void allocateEngineState();
    void applyScalingPolicy(); // the trainer's part of m_config.scalingPolicy (per-layer)
    const Quantizer& quantizer(int stage, TensorRole role) const;
    QuantizeOptions options(int stage, TensorRole role) const;
    void refreshWeights(bool collect, bool training); // weights used in forward = Q(master)
    // Quantises one tensor of a role (in -> values; they may be the same) as the recipe says
    // (RecipeCaster::cast), counted and sampled for the what-if on statistics steps.
    void quantizeRole(int stage, TensorRole role, Tensor in, Tensor values,
                      const BlockLayout& layout, bool collect, bool training);
    // On statistics steps: a sample of a cast's input for the format what-if.
    void keepSample(StageStats::Sample& sample, Tensor input, const BlockLayout& layout);
    // A sample's tensorAmax from the amax a cast found over the whole tensor (0: unknown).
    static double finiteAmax(double castAmax);
    // A sample's tensorAmax still to be read from its role's counted amax, which an engine with
    // late statistics (a GPU) delivers only with the counts: statisticsArrived() fills it in.
    static constexpr double kAmaxFromCounts = -1.0;
    // The in-flight bank's statistics have landed: it becomes the complete one.
    void statisticsArrived() const;
    BlockLayout weightLayout(int stage) const;
    // The random Hadamard transform (scaling.hadamard): a linear layer's weight gradient from
    // its operands as they were before the casts (kept in m_raw*), each transformed along the
    // batch in groups of 16 and cast in blocks along it, as NVIDIA's NVFP4 recipe does
    // (RecipeCaster::castAlongBatch).
    bool hadamardFor(std::size_t layer) const;
    void hadamardWeightGradient(std::size_t layer, int batch);
    static Tensor ensure(Tensor& t, std::size_t n, TensorOps& ops);
    BlockLayout activationLayout(std::size_t layer, int batch) const;
    std::string locateOverflow(double loss) const; // first stage/role with Inf/NaN
    void forward(int batch, bool collect, bool withStats);
    void backward(int batch, bool collect);
    void applyUpdate(bool collect);
    void nextBatch();
    Tensor stageParameters(const Tensor& all, int stage) const; // the stage's weight layer's
    Tensor activation(const std::vector<Tensor>& perLayer, std::size_t layer, int batch) const;

    TrainConfig m_config;
    std::shared_ptr<const DataSplit> m_data;
    Model m_model;
    ThreadPool m_pool;
    std::unique_ptr<LossScaler> m_scaler;
    OptimizerSettings m_optimizerSettings;

    // Tensors live in the engine's memory; the host keeps only the batch it assembles.
    std::unique_ptr<TensorOps> m_ops;
    std::string m_deviceNotice;
    Tensor m_master, m_weights, m_grads, m_update;
    OptimizerState m_optimizerState;
    const float* m_forwardWeights = nullptr; // m_weights, or m_master when that is identical
    Tensor m_input;
    std::uint8_t* m_labels = nullptr;
    Tensor m_trainRows, m_testRows; // the data sets, resident in the engine's memory
    std::vector<std::uint8_t> m_labelsHost;
    std::vector<Tensor> m_out, m_dout; // per layer: (B, outSize)
    // Statistics in two banks: one collects the current step's while the other may still be
    // arriving from the device (see TensorOps::sendStatistics) or hold the latest complete ones.
    // mutable: statistics land (and are completed) in const readers such as stageStats().
    mutable std::array<std::vector<StageStats>, 2> m_statsBank;
    int m_collecting = 0;
    mutable int m_completeBank = -1, m_inFlightBank = -1;
    mutable std::int64_t m_completeStep = 0, m_inFlightStep = 0;
    std::vector<StageStats>& stats() { return m_statsBank[static_cast<std::size_t>(m_collecting)]; }
    void startCollecting();
    std::vector<double> m_stageScale; // cumulative gradient scale per stage (last = loss scale)
    bool m_perLayer = false;
    double m_lossScale = 1.0;               // the policy's scale for the current step
    std::unique_ptr<RecipeCaster> m_caster; // after m_ops, on which it casts
    // Per layer, for the transform: a stage end's output and gradient before their casts (and
    // the gradients below it within its stage), the data before its cast; work space.
    std::vector<Tensor> m_rawOut, m_rawGrad;
    Tensor m_rawInput, m_rhtOperandA, m_rhtOperandB, m_rhtTransformed;

    std::vector<std::uint32_t> m_order;
    std::size_t m_cursor = 0;
    std::mt19937_64 m_shuffle;
    std::int64_t m_step = 0;
    int m_epoch = 0;
    double m_samplesPerSecond = 0.0;
};

} // namespace plab
