// Training the tiny GPT as the PyTorch peer trains it (AdamW lr 1e-3, betas 0.9 / 0.95, eps 1e-8,
// weight decay 0.1 on matrices and embeddings only, batch 32, random windows, no schedule, no
// clipping), with a precision recipe's casts, loss scaling and statistics when one is given; its
// validation loss over fixed windows. `bench gpt` runs it directly; GptTrainer (the run a
// session steers) wraps it.
#pragma once

#include "data/text_corpus.h"
#include "gpt/gpt_model.h"
#include "recipe/gpt_casts.h"
#include "recipe/loss_scaler.h"
#include "stats/training_snapshot.h"
#include "train/run_checkpoint.h"
#include "train/train_config.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace plab {

struct GptRunSettings {
    transformer::GptSpec spec;
    int batch = 32;
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0.1;
    std::uint64_t seed = 1;
    int validationWindows = 50; // drawn once from seed 1234, the same for every evaluation
    int threads = 1;            // for the matrix products (OpenBLAS)
    // A train config whose precision recipe and scaling the run applies (its model, data and
    // optimiser settings are not used: the GPT's are above). None: FP32, no statistics.
    std::optional<TrainConfig> precision;
};

struct GptStepResult {
    double loss = 0.0;     // nats per byte
    double accuracy = 0.0; // share of the batch's next bytes the model ranks first
    double scale = 1.0;    // the loss scale the step used
    bool skipped = false;  // gradients overflowed; the update was discarded
    std::string event;     // the scaler's reason (a skip, a scale change); empty: none
    bool diverged = false; // gradients overflowed under a policy that cannot back off
};

struct GptEvaluation {
    double loss = 0.0; // mean over the validation windows, nats per byte
    double accuracy = 0.0;
};

class GptRun {
public:
    // On `ops` (a GPU's engine), or on the CPU when null.
    GptRun(const GptRunSettings& settings, const TextCorpus& corpus,
           std::unique_ptr<TensorOps> ops = nullptr);

    GptStepResult step();
    // Statistics for the following steps (needs a precision config): every cast counted by
    // stage and role, the master weights, the optimiser state and lost updates, and each
    // stage's input channel amax. Counts add up until resetStats.
    void setCounting(bool on);
    void resetStats();
    // What was counted, one StageStats per stage (stageCount()); empty without a precision.
    std::vector<StageStats> stageStats() const;

    // Edits (take effect at the next step; amax histories start again).
    void setLearningRate(double lr) { m_settings.lr = lr; }
    void setLossScale(double scale);
    void setPrecision(const TrainConfig& precision); // recipe and scaling.*

    // The recipe's casts (null for FP32) and loss scale.
    const GptRecipeCasts* casts() const { return m_casts.get(); }
    double lossScale() const;
    std::int64_t skippedSteps() const { return m_skipped; }
    // What the run changed of the recipe, and why (empty: nothing).
    const std::string& notice() const { return m_notice; }
    const transformer::GptModel& model() const { return m_model; }
    GptEvaluation evaluate(); // in the recipe's formats, not counted
    double validationLoss() { return evaluate().loss; }
    // `length` bytes the model writes after `prompt` (at least one byte), each drawn from its
    // softmax at temperature 1 with a generator seeded by `seed`, the last `context` bytes as
    // its window: what the model has learnt, to read. Not counted in the statistics.
    std::string sample(const std::string& prompt, int length, std::uint64_t seed);
    std::int64_t stepsTaken() const { return m_step; }
    std::vector<float> parameters() const; // copied to the host
    // A checkpoint of the parameters, AdamW's moments, the window generator, the step, the
    // loss scaler and the amax histories (TrainingRun::saveState), and its restore.
    void saveState(RunCheckpoint& checkpoint) const;
    void restoreState(const RunCheckpoint& checkpoint);
    const TensorOps& ops() const { return *m_ops; }

private:
    void buildPrecision(); // casts, scaler, master and state formats from m_settings.precision
    void attachCasts();    // the model casts when anything is cast or counted
    void applyUpdate();

    GptRunSettings m_settings;
    const TextCorpus& m_corpus;
    std::unique_ptr<TensorOps> m_ops;
    transformer::GptModel m_model;
    // In the engine's memory; scratch: the master update's work space.
    Tensor m_params, m_grads, m_update, m_first, m_second, m_scratch;
    std::vector<std::uint8_t> m_inputs, m_targets, m_valInputs, m_valTargets;
    std::mt19937_64 m_rng;
    std::int64_t m_step = 0, m_skipped = 0;
    std::unique_ptr<GptRecipeCasts> m_casts;
    std::unique_ptr<LossScaler> m_scaler; // dynamic / enhanced
    // Per stage: AdamW's state kept in FP32, the recipe's format there lacking the range.
    std::vector<bool> m_stateInFp32;
    struct UpdateCasts {
        const Quantizer* format;
        QuantizeOptions options;
    };
    UpdateCasts updateCasts(int stage, TensorRole role, std::size_t at) const;
    std::string m_notice;
    bool m_counting = false;
    // Per stage (stageHolding): master weights and optimiser state counted, updates and lost
    // updates, the input channels' amax of the last counted forward.
    std::vector<QuantStats> m_masterStats, m_stateStats;
    std::vector<std::uint64_t> m_updates, m_lostUpdates;
    std::vector<std::vector<float>> m_channelAmax;
};

} // namespace plab
