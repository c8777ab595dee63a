// GptTrainer: the tiny GPT as a TrainingRun, so that a session, the CLI's `train`, the run
// record, `compare` and the GUI run it as they run the MLP: config.model (type gpt, its shape),
// config.train (AdamW, batch, lr, statistics and evaluation cadence), the recipe and scaling
// policy; data: DataSplit::text. It trains on the engine config.device resolves to (a GPU's
// when there is one, as the MLP's trainer).
#pragma once

#include "train/gpt_run.h"
#include "train/training_run.h"

#include <chrono>
#include <memory>

namespace plab {

class GptTrainer final : public TrainingRun {
public:
    // Throws ConfigError for settings the GPT does not take (an optimiser other than adamw,
    // gradient clipping, a stage override past its stages) and DataError
    // when the split holds no text.
    GptTrainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data);
    // On the given engine (tests compare engines with it); null: as config.device says.
    GptTrainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data,
               std::unique_ptr<TensorOps> ops);

    StepResult step() override;
    // Validation loss and next-byte accuracy over the fixed windows, and a few lines the model
    // writes after the validation text's first line.
    Evaluation evaluate() override;

    int stageCount() const override { return m_run->model().stageCount(); }
    std::vector<std::string> stageNames() const override;
    const std::vector<StageStats>& stageStats() const override { return m_stats; }
    std::int64_t statsStep() const override { return m_statsStep; }
    const std::vector<StageStats>& completedStats() const override { return m_stats; }
    // Each counting step waits for its statistics (a GPU's too): they are complete at once.
    bool flushStatistics() const override { return false; }
    std::string deviceName() const override { return m_run->ops().name(); }
    const std::string& deviceNotice() const override { return m_deviceNotice; }
    std::int64_t stepsTaken() const override { return m_run->stepsTaken(); }
    std::int64_t stepsPerEpoch() const override;
    std::int64_t plannedSteps() const override;

    void setLearningRate(double lr) override;
    void setLossScale(double scale) override { m_run->setLossScale(scale); }
    void setRecipe(const PrecisionRecipe& recipe) override;
    void setScaling(const TrainConfig& scaling) override;
    void saveState(RunCheckpoint& checkpoint) const override { m_run->saveState(checkpoint); }
    void restoreState(const RunCheckpoint& checkpoint) override { m_run->restoreState(checkpoint); }

    const GptRun& run() const { return *m_run; }

private:
    TrainConfig m_config;
    std::shared_ptr<const DataSplit> m_data;
    std::unique_ptr<GptRun> m_run;
    std::string m_deviceNotice;
    std::vector<StageStats> m_stats;
    std::int64_t m_statsStep = 0;
    double m_samplesPerSecond = 0.0;
};

} // namespace plab
