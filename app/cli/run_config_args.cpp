// `train`'s and `bench train`'s shared options and the config they build.
#include "run_config_args.h"

#include "util/thread_pool.h"

#include "cli_commands.h"

#include "train/run_config_builder.h"

namespace plab::cli {

void addRunConfigOptions(CLI::App* cmd, RunConfigArgs& args) {
    cmd->add_option("--config", args.config, "JSON config file (see docs/config.md)");
    cmd->add_option("--preset", args.preset, "Start from a preset (see `presets`)");
    cmd->add_option("--set", args.sets, "key.path=value, e.g. train.lr=0.01 (repeatable)");
    auto* steps =
        cmd->add_option("--steps", args.steps, "Number of steps")->check(wholeNumberAtLeast(1));
    cmd->add_option("--epochs", args.epochs, "Number of epochs")
        ->check(wholeNumberAtLeast(1))
        ->excludes(steps);
    cmd->add_option("--data", args.data,
                    "synthetic, fashion-mnist, a directory of IDX files; for the gpt: synthetic, "
                    "fortunes or text:FILE");
    cmd->add_option("--threads", args.threads, "Threads (0: all cores)")
        ->check(wholeNumberBetween(0, static_cast<long long>(kMaxThreads)));
    cmd->add_option("--device", args.device,
                    "auto | cpu | cuda | cuda:N (default: config's, auto)");
}

TrainConfig buildConfig(const RunConfigArgs& args) {
    RunConfigParts parts;
    parts.preset = args.preset;
    if (!args.config.empty())
        parts.base = readConfigFile(args.config);
    parts.settings = args.sets;
    if (args.steps >= 0)
        parts.steps = args.steps;
    if (args.epochs >= 0)
        parts.epochs = args.epochs;
    if (args.threads >= 0)
        parts.threads = args.threads;
    parts.data = args.data;
    parts.device = args.device;
    TrainConfig config = configFromJson(buildRunConfigJson(parts));
    // Sizes draw the synthetic data only: asked for another source, they would be ignored.
    for (const std::string& s : args.sets)
        for (const char* key : {"data.train_size=", "data.test_size="})
            if (s.rfind(key, 0) == 0 && config.dataSource != "synthetic")
                throw ConfigError("--set " + s + ": only the synthetic data is drawn to a size; " +
                                  config.dataSource + " brings its own");
    return config;
}

} // namespace plab::cli
