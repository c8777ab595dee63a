// Child training runs for `compare` and `sweep`: each a `precision-lab-cli train` process (its
// own address space, so one run's crash or divergence cannot take the others along), as many at
// once as there are slots, stdout discarded and stderr kept in a file beside its run folder.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace plab::cli {

// This program's path (/proc/self/exe), for starting children of the same build.
std::string selfExecutable();

// The last non-empty line of a file (a child's stderr: why it failed); empty when none.
std::string lastLine(const std::string& path);

class ChildRuns {
public:
    // Called as each child ends, with its label and exit status (128 + N for signal N).
    using OnEnd = std::function<void(const std::string& label, int status)>;
    ChildRuns(unsigned slots, OnEnd onEnd);

    // Starts `argv` (argv[0] the program) once a slot is free. Throws std::runtime_error when
    // the process cannot be started.
    void start(const std::string& label, const std::vector<std::string>& argv,
               const std::string& stderrPath);
    void waitAll();

private:
    void reap();
    unsigned m_slots;
    OnEnd m_onEnd;
    std::map<pid_t, std::string> m_running;
};

} // namespace plab::cli
