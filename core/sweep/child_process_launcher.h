// Runs a sweep's runs as child processes: what each child runs is a ChildCommand's
// (TrainChildCommand: this program's `train` on the config the sweep planned; a script sweep's
// ScriptChildCommand, sweep/script_sweep.h: the user's command with the run's recipe and seed in
// its environment). Its own address space, so one run's crash cannot take the others along;
// stderr kept in <DIR>.stderr.log (its last line is a failure's reason). Each child is in a
// process group of its own (a terminal's Ctrl-C reaches only the parent, which passes it on once)
// and gets the command's stop signal when its parent dies (PR_SET_PDEATHSIG), so a killed sweep
// leaves no orphans training on; each stops at its next step with its summary.
#pragma once

#include "sweep/run_launcher.h"

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace plab {

// What one child runs.
struct ChildSpec {
    std::vector<std::string> argv;        // argv[0] a path: the program, found before the fork
    std::vector<std::string> environment; // NAME=value set over this process's environment
    std::string stdoutPath;               // empty: discarded
    // `train` lets the stop signals in once its handler is set (so a stop while it starts up
    // cannot kill it unrecorded); a script's interpreter would never unblock them.
    bool stopSignalsBlocked = true;
};

class ChildCommand {
public:
    virtual ~ChildCommand() = default;
    // Writes what the child reads first; throws std::runtime_error when the run cannot start
    // (a recipe that does not resolve, a program not found), which fails that run alone.
    virtual ChildSpec prepare(const SweepRun& run) const = 0;
    // Why a child that exited with `code` failed (empty: it ended with a result). Not called
    // for a child the sweep stopped.
    virtual std::string failure(const SweepRun& run, int code,
                                const std::string& stderrPath) const = 0;
    // Passed on to the children when the sweep stops, and sent when the parent dies.
    virtual int stopSignal() const = 0;
    // Whether a stop goes to the child's whole process group (a script's own workers too).
    virtual bool stopsGroup() const { return false; }
    // A child's status that is a full disk (the .failed marker says so; the sweep's exit too).
    virtual bool recordFailed(int /*code*/) const { return false; }
};

// `train --config <DIR>.config.json --out <DIR>` of `program` (precision-lab-cli), the config the
// sweep planned written beside the run folder, so the child trains exactly that config.
class TrainChildCommand : public ChildCommand {
public:
    // overwrite: the children may replace an earlier run in their folder (a sweep's resume),
    // and a stopped one goes on from its checkpoint (train --resume --overwrite).
    TrainChildCommand(std::string program, bool overwrite)
        : m_program(std::move(program)), m_overwrite(overwrite) {}
    ChildSpec prepare(const SweepRun& run) const override;
    std::string failure(const SweepRun& run, int code,
                        const std::string& stderrPath) const override;
    int stopSignal() const override;
    bool recordFailed(int code) const override { return code == 4; }

    static std::string configPath(const SweepRun& run) { return run.dir + ".config.json"; }

private:
    std::string m_program;
    bool m_overwrite;
};

class ChildProcessLauncher : public RunLauncher {
public:
    explicit ChildProcessLauncher(std::shared_ptr<const ChildCommand> command);
    // The CLI's sweeps and comparisons of the core's presets: TrainChildCommand.
    ChildProcessLauncher(std::string program, bool overwrite);
    ~ChildProcessLauncher() override; // stops and reaps what still runs

    void start(std::size_t index, const SweepRun& run) override;
    std::vector<RunEnd> collectEnded(std::chrono::milliseconds wait) override;
    void stopAll(const StopRequest& request) override;
    std::size_t going() const override { return m_children.size(); }

    static std::string stderrPath(const SweepRun& run) { return run.dir + ".stderr.log"; }

private:
    struct Child {
        std::size_t index;
        SweepRun run;
        std::string stderrPath;
    };
    std::shared_ptr<const ChildCommand> m_command;
    std::map<pid_t, Child> m_children;
    int m_stopSignal = 0; // passed on to the children (0: not stopped)
};

// This program's path (/proc/self/exe), for starting children of the same build.
std::string selfExecutable();
// The last line a child wrote on stderr that says why it failed: its own "precision-lab-cli: "
// line, else its last line; "killed by signal N (SIGX)" for a status past 128.
std::string childFailureReason(int code, const std::string& stderrPath);

} // namespace plab
