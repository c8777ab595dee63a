// `train` and `presets`: headless training with a live progress line on stderr, the run log in
// --out, and the summary printed at the end.
#include "cli_commands.h"
#include "run_config_args.h"

#include "device/compute_backend.h"

#include "data/dataset.h"
#include "record/run_folder.h"
#include "train/presets.h"
#include "train/run_data.h"
#include "train/run_log.h"
#include "train/training_session.h"
#include "util/folder_size.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace plab::cli {
namespace {

struct TrainArgs {
    RunConfigArgs run;
    std::string out;
    bool overwrite = false;
    bool resume = false;
};

// The first SIGINT, SIGTERM or SIGHUP asks the run to stop at the next step boundary (summary
// and `end` event written); the handler then restores the default action, so a second one ends
// the process at once.
volatile std::sig_atomic_t g_signal = 0;

extern "C" void onStopSignal(int signal) {
    g_signal = signal;
    std::signal(signal, SIG_DFL);
}

const char* signalName(int signal) {
    switch (signal) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    }
    return "a signal";
}

int runTrain(const TrainArgs& args) {
    // The stop signals are caught from the start, and then let in: a sweep's launcher starts
    // its children with them blocked (child_process_launcher.cpp), so that one sent while this
    // process starts up waits for the handler instead of killing it before its summary.
    // While the data loads the handler interrupts system calls (no SA_RESTART): an open or read
    // that waits for a writer (a FIFO, a stalled network file) returns, and the stop is seen.
    // Afterwards interrupted calls restart, as the record's writers expect.
    const auto catchStops = [](int flags) {
        struct sigaction action {};
        action.sa_handler = onStopSignal;
        sigemptyset(&action.sa_mask);
        action.sa_flags = flags;
        for (int signal : {SIGINT, SIGTERM, SIGHUP})
            if (g_signal != signal) // the one caught already stays at its default
                sigaction(signal, &action, nullptr);
    };
    const auto interruptedBeforeStart = [](int signal) {
        std::fprintf(stderr,
                     "precision-lab-cli: train: interrupted by %s before the run started; "
                     "nothing recorded\n",
                     signalName(signal));
        return 128 + signal;
    };
    catchStops(0);
    sigset_t stops;
    sigemptyset(&stops);
    for (int signal : {SIGINT, SIGTERM, SIGHUP})
        sigaddset(&stops, signal);
    sigprocmask(SIG_UNBLOCK, &stops, nullptr);
    // --resume without a config: the run's own (what replays it), as its folder holds it.
    RunConfigArgs what = args.run;
    if (args.resume && what.config.empty() && what.preset.empty()) {
        if (args.out.empty())
            throw std::invalid_argument(
                "--resume: needs --out, the folder of the run to go on with");
        what.config = args.out + "/config.json";
    }
    const TrainConfig config = buildConfig(what);
    if (const int signal = g_signal; signal != 0) // let in before a read that may never return
        return interruptedBeforeStart(signal);
    std::shared_ptr<const DataSplit> data;
    try {
        data = loadRunData(config); // bad input fails before anything else is printed
    } catch (const std::exception&) {
        if (const int signal = g_signal; signal != 0) // the failure is the interrupted read's
            return interruptedBeforeStart(signal);
        throw;
    }
    if (const int signal = g_signal; signal != 0) // before the run's folder is made
        return interruptedBeforeStart(signal);
    catchStops(SA_RESTART);
    const DeviceChoice device = resolveDevice(parseDeviceSpec(config.device));
    if (!device.notice.empty())
        std::fprintf(stderr, "%s\n", device.notice.c_str());
    // Without --out: runs/train-<date>-<time>, made here (atomically: two runs in one
    // millisecond get two folders).
    const std::string out = args.out.empty() ? newTimestampedFolder("runs", "train-") : args.out;
    TrainingSession session(config, data, out, RunLogOptions{args.overwrite, args.resume});
    if (session.resumedFrom() > 0)
        std::fprintf(stderr, "resuming %s from its checkpoint of step %lld\n", out.c_str(),
                     static_cast<long long>(session.resumedFrom()));
    if (!session.deviceNotice().empty() && session.deviceNotice() != device.notice)
        std::fprintf(stderr, "%s\n", session.deviceNotice().c_str()); // e.g. out of device memory
    const bool tty = isatty(fileno(stderr)) != 0;
    std::fprintf(stderr, "training %s on %s on %s, %lld steps, run log in %s\n",
                 config.model.type.c_str(), describeData(*data).c_str(),
                 session.deviceName().c_str(), static_cast<long long>(session.plannedSteps()),
                 out.c_str());
    const auto start = std::chrono::steady_clock::now();
    session.start();
    StepScalars last;
    bool stopAsked = false;
    auto lastPrint = start - std::chrono::seconds(10);
    for (;;) {
        const SessionState state = session.state();
        while (auto s = session.popScalars())
            last = *s;
        const auto now = std::chrono::steady_clock::now();
        const bool done = hasEnded(state);
        // Not before this process's first step: a resumed run's line said "step 0/1500".
        const bool stepped = last.step > session.resumedFrom();
        if (stepped && (done || now - lastPrint > std::chrono::milliseconds(tty ? 200 : 5000))) {
            const double elapsed = std::chrono::duration<double>(now - start).count();
            const std::int64_t taken = last.step - session.resumedFrom(); // by this process
            const double eta = taken > 0
                                   ? elapsed / static_cast<double>(taken) *
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
        if (const int signal = g_signal; signal != 0 && !stopAsked) {
            stopAsked = true;
            session.stop(std::string("interrupted by ") + signalName(signal));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (tty)
        std::fputc('\n', stderr);
    session.waitUntilDone();
    // What the record takes on disk, so that its size is never a surprise.
    std::fprintf(stderr, "run record: %s in %s\n", megabytesText(runFilesBytes(out)).c_str(),
                 out.c_str());
    if (data->text && session.latestSnapshot() != nullptr) {
        // A text model's loss in bits per byte (what its papers report), and what it writes.
        const TrainingSnapshot& final = *session.latestSnapshot();
        const double loss = final.scalars.testLoss;
        if (std::isfinite(loss))
            std::fprintf(stderr, "validation loss %.4f nats/byte = %.3f bits/byte\n", loss,
                         loss / std::log(2.0));
        if (!final.sample.empty())
            std::fprintf(stderr, "sample at step %lld:\n%s\n",
                         static_cast<long long>(final.sampleStep), final.sample.c_str());
    }
    // From the session, not the file: on a full disk the file may be the one written at the
    // start ("steps": 0, "running"), while this says how many steps the record holds and why
    // the run stopped.
    std::printf("%s\n", toJson(session.finalSummary()).dump(2).c_str());
    std::fflush(stdout);
    const SessionState state = session.state();
    if (state == SessionState::Finished)
        return 0;
    std::fprintf(stderr, "precision-lab-cli: training %s: %s\n", toString(state),
                 session.stopReason().c_str());
    if (!session.recordError().empty())
        return kExitRecordFailed;
    if (g_signal != 0 && state == SessionState::Stopped)
        return 128 + g_signal;
    return kExitTrainingFailed;
}

} // namespace

Command addTrainCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("train", "Train a model under a precision recipe, headless");
    auto args = std::make_shared<TrainArgs>();
    addRunConfigOptions(cmd, args->run);
    cmd->add_option("--out", args->out, "Run directory (default: a new runs/train-<date>-<time>)");
    cmd->add_flag("--overwrite", args->overwrite,
                  "Replace an earlier run's record in --out (otherwise refused)");
    cmd->add_flag("--resume", args->resume,
                  "Go on from the checkpoint a stopped run left in --out (its config.json unless "
                  "--config or --preset is given); with --overwrite, start afresh when there is "
                  "none");
    return {cmd, [args] { return runTrain(*args); }};
}

Command addPresetsCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("presets", "List the built-in precision presets");
    return {cmd, [] {
                for (const Preset& p : presets())
                    std::printf("%-14s %s\n%-14s after %s\n", p.name.c_str(), p.description.c_str(),
                                "", p.paper.c_str());
                return 0;
            }};
}

} // namespace plab::cli
