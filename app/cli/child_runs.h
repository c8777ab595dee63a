// Child training runs for `compare` and `sweep`: each a `precision-lab-cli train` process (its
// own address space, so one run's crash or divergence cannot take the others along), as many at
// once as there are slots, stdout discarded and stderr kept in a file beside its run folder.
// Each child is in a process group of its own, so a terminal's Ctrl-C reaches only the parent,
// which passes it on exactly once: a second signal would end a child before its summary.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace plab::cli {

// This program's path (/proc/self/exe), for starting children of the same build.
std::string selfExecutable();

// The last non-empty line of a file (a child's stderr: why it failed); empty when none.
std::string lastLine(const std::string& path);

// The first SIGINT, SIGTERM or SIGHUP after this is noted (stopSignal()) instead of ending the
// process, and interrupts a wait for children; the handler then restores the default action, so
// a second one ends the parent at once (its children still stop cleanly).
void catchStopSignals();
int stopSignal(); // the signal caught, 0 when none

class ChildRuns {
public:
    // Called as each child ends, with its label and exit status (128 + N for signal N).
    using OnEnd = std::function<void(const std::string& label, int status)>;
    ChildRuns(unsigned slots, OnEnd onEnd);

    // Starts `argv` (argv[0] the program) once a slot is free; false (nothing started) once a
    // stop signal was caught. Throws std::runtime_error when the process cannot be started.
    bool start(const std::string& label, const std::vector<std::string>& argv,
               const std::string& stderrPath);
    // Waits for every child; a stop signal caught meanwhile is passed on to each, once.
    void waitAll();

private:
    void reap();
    unsigned m_slots;
    OnEnd m_onEnd;
    std::map<pid_t, std::string> m_running;
    bool m_forwarded = false;
};

} // namespace plab::cli
