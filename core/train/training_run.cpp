#include "train/training_run.h"

#include "train/gpt_trainer.h"
#include "train/trainer.h"

namespace plab {

std::unique_ptr<TrainingRun> makeTrainingRun(const TrainConfig& config,
                                             std::shared_ptr<const DataSplit> data) {
    if (config.model.type == "gpt")
        return std::make_unique<GptTrainer>(config, std::move(data));
    return std::make_unique<Trainer>(config, std::move(data));
}

} // namespace plab
