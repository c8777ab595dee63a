// `train` and `presets`: headless training with a live progress line on stderr, the run log in
// --out, and the summary printed at the end.
#include "cli_commands.h"

#include "device/compute_backend.h"

#include "data/dataset.h"
#include "train/training_session.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace plab::cli {
namespace {

struct TrainArgs {
    std::string config, preset, data, out;
    std::vector<std::string> sets;
    std::int64_t steps = -1;
    int epochs = -1;
    int threads = -1;
    std::string device;
};

nlohmann::json readConfigFile(const std::string& path) {
    std::ifstream f(path);
    if (!f)
        throw ConfigError(path + ": cannot open the config file");
    std::stringstream text;
    text << f.rdbuf();
    try {
        return nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
        throw ConfigError(path + ": not valid JSON (" + std::string(e.what()) + ")");
    }
}

void merge(nlohmann::json& into, const nlohmann::json& from) {
    for (auto it = from.begin(); it != from.end(); ++it) {
        if (it->is_object() && into.contains(it.key()) && into[it.key()].is_object())
            merge(into[it.key()], *it);
        else
            into[it.key()] = *it;
    }
}

TrainConfig buildConfig(const TrainArgs& args) {
    nlohmann::json j = nlohmann::json::object();
    if (!args.preset.empty())
        merge(j, findPreset(args.preset).json);
    if (!args.config.empty())
        merge(j, readConfigFile(args.config));
    for (const std::string& s : args.sets)
        applySetting(j, s);
    if (args.steps >= 0)
        applySetting(j, "train.steps=" + std::to_string(args.steps));
    if (args.epochs >= 0) {
        applySetting(j, "train.epochs=" + std::to_string(args.epochs));
        applySetting(j, "train.steps=0");
    }
    if (args.threads >= 0)
        applySetting(j, "threads=" + std::to_string(args.threads));
    if (!args.data.empty())
        j["data"]["source"] = args.data;
    if (!args.device.empty())
        j["device"] = args.device;
    return configFromJson(j);
}

} // namespace

std::shared_ptr<const DataSplit> loadData(const TrainConfig& config) {
    if (config.dataSource == "synthetic")
        return std::make_shared<const DataSplit>(
            makeSyntheticData(config.seed, config.syntheticTrain, config.syntheticTest));
    const std::string dir =
        config.dataSource == "fashion-mnist" ? kFashionMnistDir : config.dataSource;
    return std::make_shared<const DataSplit>(loadIdxDirectory(dir));
}

namespace {

int runTrain(const TrainArgs& args) {
    const TrainConfig config = buildConfig(args);
    const auto data = loadData(config); // bad input fails before anything else is printed
    const DeviceChoice device = resolveDevice(parseDeviceSpec(config.device));
    if (!device.notice.empty())
        std::fprintf(stderr, "%s\n", device.notice.c_str());
    const std::string out = args.out.empty() ? std::string("runs/latest") : args.out;
    TrainingSession session(config, data, out);
    if (!session.deviceNotice().empty() && session.deviceNotice() != device.notice)
        std::fprintf(stderr, "%s\n", session.deviceNotice().c_str()); // e.g. out of device memory
    const bool tty = isatty(fileno(stderr)) != 0;
    std::fprintf(stderr,
                 "training %s on %s (%zu train / %zu test) on %s, %lld steps, run log in %s\n",
                 config.model.type.c_str(), data->train.name.c_str(), data->train.count(),
                 data->test.count(), session.deviceName().c_str(),
                 static_cast<long long>(session.plannedSteps()), out.c_str());
    const auto start = std::chrono::steady_clock::now();
    session.start();
    StepScalars last;
    auto lastPrint = start - std::chrono::seconds(10);
    for (;;) {
        const SessionState state = session.state();
        while (auto s = session.popScalars())
            last = *s;
        const auto now = std::chrono::steady_clock::now();
        const bool done = state == SessionState::Finished || state == SessionState::Stopped ||
                          state == SessionState::Diverged || state == SessionState::Failed;
        if (now - lastPrint > std::chrono::milliseconds(tty ? 200 : 5000) || done) {
            const double elapsed = std::chrono::duration<double>(now - start).count();
            const double eta = last.step > 0
                                   ? elapsed / static_cast<double>(last.step) *
                                         static_cast<double>(session.plannedSteps() - last.step)
                                   : 0.0;
            std::fprintf(
                stderr,
                "%sstep %lld/%lld  epoch %d  loss %.4f  acc %.3f  scale %g  %.0f samples/s  "
                "ETA %.0fs%s",
                tty ? "\r" : "", static_cast<long long>(last.step),
                static_cast<long long>(session.plannedSteps()), last.epoch, last.loss,
                last.accuracy, last.scale, last.samplesPerSecond, eta, tty ? "   " : "\n");
            lastPrint = now;
        }
        if (done)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (tty)
        std::fputc('\n', stderr);
    session.waitUntilDone();
    std::ifstream summary(out + "/summary.json");
    std::printf("%s", std::string(std::istreambuf_iterator<char>(summary), {}).c_str());
    const SessionState state = session.state();
    if (state != SessionState::Finished) {
        std::fprintf(stderr, "precision-lab-cli: training %s: %s\n", toString(state),
                     session.stopReason().c_str());
        return 3;
    }
    return 0;
}

} // namespace

Command addTrainCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("train", "Train a model under a precision recipe, headless");
    auto args = std::make_shared<TrainArgs>();
    cmd->add_option("--config", args->config, "JSON config file (see README)");
    cmd->add_option("--preset", args->preset, "Start from a preset (see `presets`)");
    cmd->add_option("--set", args->sets, "key.path=value, e.g. train.lr=0.01 (repeatable)");
    auto* steps = cmd->add_option("--steps", args->steps, "Number of steps");
    cmd->add_option("--epochs", args->epochs, "Number of epochs")->excludes(steps);
    cmd->add_option("--data", args->data, "synthetic, fashion-mnist, or a directory of IDX files");
    cmd->add_option("--out", args->out, "Run directory (default runs/latest)");
    cmd->add_option("--threads", args->threads, "Threads (0: all cores)");
    cmd->add_option("--device", args->device,
                    "auto | cpu | cuda | cuda:N (default: config's, auto)");
    return {cmd, [args] { return runTrain(*args); }};
}

Command addPresetsCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("presets", "List the built-in precision presets");
    return {cmd, [] {
                for (const Preset& p : presets())
                    std::printf("%-14s %s\n", p.name.c_str(), p.description.c_str());
                return 0;
            }};
}

} // namespace plab::cli
