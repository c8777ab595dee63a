// Runs a sweep's runs as child processes of `program` (precision-lab-cli): each trains with
// `train --config <DIR>.config.json --out <DIR>`, the config the sweep planned written beside
// the run folder, so the child trains exactly that config (no argument list has to agree with
// it). Its own address space, so one run's crash cannot take the others along; stdout discarded,
// stderr kept in <DIR>.stderr.log (its last line is a failure's reason). Each child is in a
// process group of its own (a terminal's Ctrl-C reaches only the parent, which passes it on once)
// and gets SIGTERM when its parent dies (PR_SET_PDEATHSIG), so a killed sweep leaves no orphans
// training on; each stops at its next step with its summary.
#pragma once

#include "sweep/run_launcher.h"

#include <sys/types.h>

#include <map>
#include <string>

namespace plab {

class ChildProcessLauncher : public RunLauncher {
public:
    // overwrite: the children may replace an earlier run in their folder (a sweep's resume),
    // and a stopped one goes on from its checkpoint (train --resume --overwrite).
    ChildProcessLauncher(std::string program, bool overwrite);
    ~ChildProcessLauncher() override; // stops and reaps what still runs

    void start(std::size_t index, const SweepRun& run) override;
    std::vector<RunEnd> collectEnded(std::chrono::milliseconds wait) override;
    void stopAll(const StopRequest& request) override;
    std::size_t going() const override { return m_children.size(); }

    static std::string configPath(const SweepRun& run) { return run.dir + ".config.json"; }
    static std::string stderrPath(const SweepRun& run) { return run.dir + ".stderr.log"; }

private:
    struct Child {
        std::size_t index;
        std::string stderrPath;
    };
    std::string m_program;
    bool m_overwrite;
    std::map<pid_t, Child> m_children;
    int m_stopSignal = 0; // passed on to the children (0: not stopped)
};

// This program's path (/proc/self/exe), for starting children of the same build.
std::string selfExecutable();

} // namespace plab
