// TrainingRun: what a TrainingSession steers, whatever the model. Trainer runs the image models
// (MLP, CNN) on the CPU or a GPU engine; GptTrainer runs the tiny GPT on text. makeTrainingRun
// picks by config.model.type.
#pragma once

#include "data/dataset.h"
#include "stats/training_snapshot.h"
#include "train/run_checkpoint.h"
#include "train/train_config.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace plab {

struct StepResult {
    StepScalars scalars;
    // Statistics of step statsStep became complete during this call: stageStats() holds them.
    // On the CPU that is the step itself; a GPU's arrive while the next step runs.
    bool statsCollected = false;
    std::int64_t statsStep = 0;
    std::string event;     // e.g. why a step was skipped; empty if nothing happened
    bool diverged = false; // Inf/NaN that the scaling policy cannot recover from
};

struct Evaluation {
    double loss = 0.0;     // nats per sample (images) or per byte (text)
    double accuracy = 0.0; // of the class, or of the next byte
    // Text models: a few lines the model writes, to read at each evaluation (empty otherwise).
    std::string sample;

    // A model whose test loss is Inf or NaN (diverged weights) has no accuracy either: an
    // argmax over NaN logits still picks a class (class 0: 10% on ten balanced classes). Both
    // are NaN then, null in the record.
    static Evaluation of(double loss, double accuracy, std::string sample = {}) {
        if (!std::isfinite(loss))
            accuracy = std::nan("");
        return {loss, accuracy, std::move(sample)};
    }
};

class TrainingRun {
public:
    virtual ~TrainingRun() = default;

    virtual StepResult step() = 0;
    virtual Evaluation evaluate() = 0; // the test (validation) set, in the recipe's formats

    virtual int stageCount() const = 0;
    virtual std::vector<std::string> stageNames() const = 0;
    // The latest complete statistics, waiting for any still on their way from a device.
    virtual const std::vector<StageStats>& stageStats() const = 0;
    virtual std::int64_t statsStep() const = 0; // their step; 0: none yet
    // The latest complete statistics without waiting (what a live view shows).
    virtual const std::vector<StageStats>& completedStats() const = 0;
    // Waits for statistics on their way; true when that completed a step's.
    virtual bool flushStatistics() const = 0;
    virtual std::string deviceName() const = 0; // "cpu", "cuda:0 (...)"
    // Why the engine is not the one asked for (e.g. no usable GPU); empty when it is.
    virtual const std::string& deviceNotice() const = 0;
    virtual std::int64_t stepsTaken() const = 0;
    virtual std::int64_t stepsPerEpoch() const = 0;
    virtual std::int64_t plannedSteps() const = 0; // from steps, or epochs x steps per epoch

    // Take effect at the next step.
    virtual void setLearningRate(double lr) = 0;
    virtual void setLossScale(double scale) = 0;
    // Throws ConfigError for an override of a stage the model lacks.
    virtual void setRecipe(const PrecisionRecipe& recipe) = 0;
    // Switches the scaling policy (scaling.* of the config) at the next step.
    virtual void setScaling(const TrainConfig& scaling) = 0;

    // Everything the next steps depend on (parameters, optimiser moments, the loss scaler,
    // delayed scaling's amax histories, the data order and its generator, the step), into a
    // checkpoint; restoreState puts it into a run built from the config in effect at that step,
    // which then steps on as the saved run would have. Throws RecordError for a checkpoint that
    // does not fit this run (another model's sizes, a part missing).
    virtual void saveState(RunCheckpoint& checkpoint) const = 0;
    virtual void restoreState(const RunCheckpoint& checkpoint) = 0;
};

// Throws ConfigError for an override of a stage the model does not have (it would silently do
// nothing): stages are 0..stageCount-1, or -1 for the last; kind overrides only where they apply
// (the GPT).
void checkRecipeStages(const PrecisionRecipe& recipe, int stageCount, bool kindsApply = false);

// The run config.model.type asks for, on `data` (loadRunData's: images, or text for the GPT).
// Throws ConfigError / DataError for settings or data the model cannot use.
std::unique_ptr<TrainingRun> makeTrainingRun(const TrainConfig& config,
                                             std::shared_ptr<const DataSplit> data);

} // namespace plab
