// The options that say what to train (--config, --preset, --set, --steps, --epochs, --data,
// --threads, --device), shared by `train` and `bench train`, and how they become a TrainConfig.
#pragma once

#include "data/dataset.h"
#include "train/train_config.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace plab::cli {

struct RunConfigArgs {
    std::string config, preset, data, device;
    std::vector<std::string> sets;
    std::int64_t steps = -1;
    int epochs = -1;
    int threads = -1;
};

// Registers the options on a subcommand.
void addRunConfigOptions(CLI::App* cmd, RunConfigArgs& args);
// By the one builder (train/run_config_builder.h): preset, config file, --set in order, then
// the dedicated options.
TrainConfig buildConfig(const RunConfigArgs& args);

} // namespace plab::cli
