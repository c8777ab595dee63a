// `bench train`: the steady-state step rate of one recipe on one engine, apart from what a
// `train` run also spends: engine start-up (CUDA module loading, cuBLAS), the upload of the
// resident data sets, warm-up steps, evaluation and writing the run log (with statistics every
// step, a full histogram per stage and role). `train`'s summary gives the end-to-end rate; this
// gives the step itself, and the set-up time separately, so the two can be reported side by side.
#include "cli_commands.h"
#include "run_config_args.h"

#include "train/run_data.h"
#include "train/training_run.h"

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace plab::cli {
namespace {

// A run that diverged while timed: exit 3, as for `train` (README: exit statuses), not 2.
struct Diverged : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct TrainBenchArgs {
    RunConfigArgs run;
    int warmup = 20;
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int runTrainBench(const TrainBenchArgs& args) {
    if (args.warmup < 0)
        throw std::invalid_argument("bench train: --warmup " + std::to_string(args.warmup) +
                                    ": expected 0 or more steps");
    const TrainConfig config = buildConfig(args.run);
    const auto data = loadRunData(config);
    const auto setupStart = std::chrono::steady_clock::now();
    const std::unique_ptr<TrainingRun> run = makeTrainingRun(config, data);
    TrainingRun& trainer = *run;
    const double setupSeconds = secondsSince(setupStart);
    if (!trainer.deviceNotice().empty())
        std::fprintf(stderr, "%s\n", trainer.deviceNotice().c_str());
    const std::int64_t timedSteps = trainer.plannedSteps();
    if (timedSteps < 1)
        throw std::invalid_argument("bench train: no steps to time (--steps or --epochs)");

    const auto steps = [&](std::int64_t count) {
        for (std::int64_t i = 0; i < count; ++i)
            if (const StepResult r = trainer.step(); r.diverged)
                throw Diverged("bench train: diverged at step " +
                               std::to_string(trainer.stepsTaken()) + ": " + r.event);
        trainer.flushStatistics(); // a GPU's last statistics are part of the work timed
    };
    double warmupSeconds = 0.0, timedSeconds = 0.0;
    try {
        const auto warmupStart = std::chrono::steady_clock::now();
        steps(args.warmup);
        warmupSeconds = secondsSince(warmupStart);
        const auto timedStart = std::chrono::steady_clock::now();
        steps(timedSteps);
        timedSeconds = secondsSince(timedStart);
    } catch (const Diverged& e) {
        std::fprintf(stderr, "precision-lab-cli: %s\n", e.what());
        return kExitTrainingFailed;
    }

    const double samplesPerSecond =
        static_cast<double>(timedSteps) * config.batchSize / timedSeconds;
    std::printf("bench train: %s, batch %d, statistics every %d step(s), on %s\n",
                config.model.type.c_str(), config.batchSize, config.statsEvery,
                trainer.deviceName().c_str());
    std::printf("  set-up (engine, parameters, resident data) %.3f s; warm-up %d steps %.3f s\n",
                setupSeconds, args.warmup, warmupSeconds);
    std::printf("  %lld timed steps %.3f s: %.3f ms/step\n", static_cast<long long>(timedSteps),
                timedSeconds, 1e3 * timedSeconds / static_cast<double>(timedSteps));
    std::printf("steady_samples_per_second: %.1f\n", samplesPerSecond);
    return 0;
}

} // namespace

void addBenchTrainSubcommand(CLI::App* bench, std::function<int()>& action) {
    auto* cmd = bench->add_subcommand(
        "train", "Steady-state training steps per second (no start-up, evaluation or run log)");
    auto args = std::make_shared<TrainBenchArgs>();
    addRunConfigOptions(cmd, args->run);
    cmd->add_option("--warmup", args->warmup, "Untimed steps first")
        ->check(wholeNumberAtLeast(0))
        ->capture_default_str();
    cmd->callback([args, &action] { action = [args] { return runTrainBench(*args); }; });
}

} // namespace plab::cli
