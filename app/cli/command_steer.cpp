// `steer RUN`: one command to an emulated PyTorch run that its script is running
// (precision_lab.torch.emulate), as the app's controls send it (core/record/run_commands.h): a new
// loss scale, scaling policy or recipe setting, or pause / step / resume. The script applies it
// at its next step boundary and records it (an event, a timeline entry in config.json).
#include "cli_commands.h"

#include "record/run_commands.h"
#include "record/run_record.h"
#include "train/train_config.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace plab::cli {
namespace {

struct SteerOptions {
    std::string run;
    std::optional<double> scale;
    std::string policy;
    std::vector<std::string> settings;
    bool pause = false, resume = false, step = false;
};

// The patch the options make, checked against the run's recipe as the script will check it.
nlohmann::json patchOf(const SteerOptions& o) {
    nlohmann::json patch = nlohmann::json::object();
    for (const std::string& s : o.settings) {
        if (s.rfind("scaling.", 0) != 0 && s.rfind("recipe.", 0) != 0)
            throw std::invalid_argument("--set " + s.substr(0, 60) +
                                        ": an emulated run's scaling.* or recipe.* settings");
        applySetting(patch, s);
    }
    if (o.scale)
        patch["scaling"]["scale"] = *o.scale;
    if (!o.policy.empty())
        patch["scaling"]["policy"] = o.policy;
    if (patch.empty())
        return patch;
    const nlohmann::json recorded = RunRecord(o.run).meta("emulate");
    if (!recorded.is_object() || !recorded.contains("train_config"))
        throw std::invalid_argument(o.run + ": an emulated run's record without its recipe (meta "
                                            "emulate.train_config)");
    try {
        const TrainConfig config = configFromJson(recorded["train_config"]);
        (void)applyEdit(config, patch);
    } catch (const ConfigError& e) {
        throw std::invalid_argument(std::string("steer: ") + e.what());
    }
    return patch;
}

} // namespace

Command addSteerCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "steer", "Send a command to an emulated PyTorch run while its script runs: a loss scale, "
                 "a policy or recipe setting, or pause / step / resume");
    auto o = std::make_shared<SteerOptions>();
    cmd->add_option("run", o->run, "The run's folder (precision_lab.torch.emulate's run_dir)")
        ->required();
    cmd->add_option("--scale", o->scale,
                    "Loss scale from the next step (a dynamic policy goes on "
                    "from it)")
        ->check(CLI::Validator(
            [](const std::string& text) {
                // "nan" and "inf" parse as numbers, then said "null is out of range"
                const double v = std::strtod(text.c_str(), nullptr);
                return std::isfinite(v) && v > 0.0
                           ? std::string()
                           : "\"" + text + "\": expected a finite positive number";
            },
            "POSITIVE"));
    cmd->add_option("--policy", o->policy, "Scaling policy (static, dynamic, enhanced, ...)");
    cmd->add_option("--set", o->settings,
                    "A scaling.* or recipe.* setting, e.g. recipe.weights.format=fp8-e4m3 "
                    "(repeatable)");
    cmd->add_flag("--pause", o->pause, "Hold the script at its next step boundary");
    cmd->add_flag("--step", o->step, "One step, then held again (while paused)");
    cmd->add_flag("--resume", o->resume, "Let a paused script go on");
    return {cmd, [o] {
                const nlohmann::json patch = patchOf(*o);
                const int actions = int{o->pause} + int{o->step} + int{o->resume};
                if (actions + int{!patch.empty()} != 1)
                    throw std::invalid_argument(
                        "steer: give one of --pause, --step, --resume, or settings (--scale, "
                        "--policy, --set)");
                nlohmann::json command = {{"from", "precision-lab-cli steer"}};
                if (!patch.empty())
                    command["set"] = patch;
                else
                    command["action"] = o->pause ? "pause" : o->step ? "step" : "resume";
                std::int64_t number = 0;
                try {
                    number = sendRunCommand(o->run, command);
                } catch (const RecordWriteError&) {
                    throw; // the disk refused the command: exit 4, not bad input
                } catch (const RecordError& e) {
                    throw std::invalid_argument(e.what());
                }
                std::printf("command %lld sent to %s: %s (the script applies it at its next step "
                            "boundary; its events say what it did)\n",
                            static_cast<long long>(number), o->run.c_str(),
                            (patch.empty() ? command["action"] : command["set"]).dump().c_str());
                return 0;
            }};
}

} // namespace plab::cli
