// Children by fork + exec rather than posix_spawn: only a forked child can ask for a signal when
// its parent dies (prctl), and must do so before exec. Between fork and exec only
// async-signal-safe calls (the app that forks has threads).
#include "sweep/child_process_launcher.h"

#include "record/record_file.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace plab {

std::string selfExecutable() {
    return std::filesystem::read_symlink("/proc/self/exe").string();
}

std::string childFailureReason(int code, const std::string& stderrPath) {
    if (code > 128 && code < 128 + 65) {
        const int signal = code - 128;
        const char* name = sigabbrev_np(signal);
        return "killed by signal " + std::to_string(signal) +
               (name != nullptr ? " (SIG" + std::string(name) + ")" : std::string());
    }
    // Its own error line, else its last line: a killed run's last line is a progress line,
    // which says nothing of why; a script's is its traceback's exception.
    std::ifstream in(stderrPath);
    std::string line, last, error;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        last = line;
        if (line.rfind("precision-lab-cli: ", 0) == 0)
            error = line;
    }
    const std::string why = !error.empty() ? error : last;
    return "exit " + std::to_string(code) + (why.empty() ? "" : ": " + why);
}

ChildSpec TrainChildCommand::prepare(const SweepRun& run) const {
    writeFileAtomically(configPath(run), run.config.dump(2) + "\n");
    ChildSpec spec;
    spec.argv = {m_program, "train", "--config", configPath(run), "--out", run.dir};
    if (m_overwrite) { // a stopped run goes on from its checkpoint; any other starts afresh
        spec.argv.push_back("--overwrite");
        spec.argv.push_back("--resume");
    }
    return spec;
}

std::string TrainChildCommand::failure(const SweepRun&, int code,
                                       const std::string& stderrPath) const {
    // 0: completed; 3: ended early with a result (diverged).
    return code == 0 || code == 3 ? std::string() : childFailureReason(code, stderrPath);
}

int TrainChildCommand::stopSignal() const {
    return SIGTERM;
}

ChildProcessLauncher::ChildProcessLauncher(std::shared_ptr<const ChildCommand> command)
    : m_command(std::move(command)) {}

ChildProcessLauncher::ChildProcessLauncher(std::string program, bool overwrite)
    : m_command(std::make_shared<TrainChildCommand>(std::move(program), overwrite)) {}

ChildProcessLauncher::~ChildProcessLauncher() {
    if (m_children.empty())
        return;
    stopAll({m_command->stopSignal(), {}});
    while (!m_children.empty())
        collectEnded(std::chrono::milliseconds(50));
}

void ChildProcessLauncher::start(std::size_t index, const SweepRun& run) {
    ChildSpec spec = m_command->prepare(run);
    if (spec.argv.empty())
        throw std::runtime_error("no command to run for " + run.dir);
    std::vector<char*> argv;
    for (std::string& a : spec.argv)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    // The environment built here: between fork and exec only async-signal-safe calls.
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const std::string_view name = entry.substr(0, entry.find('='));
        const bool replaced = std::any_of(
            spec.environment.begin(), spec.environment.end(), [&](const std::string& mine) {
                return std::string_view(mine).substr(0, mine.find('=')) == name;
            });
        if (!replaced)
            environment.emplace_back(entry);
    }
    environment.insert(environment.end(), spec.environment.begin(), spec.environment.end());
    std::vector<char*> envp;
    for (std::string& e : environment)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string errPath = stderrPath(run);
    // Opened here, not in the child: a planted link, FIFO or device at the log's name is refused
    // with its reason (the child could only exit 127), and never written through.
    const int err = openRegularFileForWriting(errPath, WriteOpen::Truncate);
    int out = -1;
    try {
        out = spec.stdoutPath.empty()
                  ? ::open("/dev/null", O_WRONLY | O_CLOEXEC)
                  : openRegularFileForWriting(spec.stdoutPath, WriteOpen::Truncate);
    } catch (...) {
        ::close(err);
        throw;
    }
    const int stop = m_command->stopSignal();
    const bool block = spec.stopSignalsBlocked;
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0) { // the child's copies are its stdout and stderr
        ::close(err);
        if (out >= 0)
            ::close(out);
    }
    if (pid < 0)
        throw std::runtime_error("cannot start " + spec.argv.front() + " for " + run.dir + " (" +
                                 std::strerror(errno) + ")");
    if (pid == 0) {
        ::setpgid(0, 0); // a group of its own
        sigset_t stops;
        sigemptyset(&stops);
        for (int signal : {SIGINT, SIGTERM, SIGHUP})
            sigaddset(&stops, signal);
        ::sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &stops, nullptr);
        ::prctl(PR_SET_PDEATHSIG, stop);
        if (::getppid() != parent) // the parent died before prctl took effect
            ::_exit(128 + stop);
        if (out < 0 || err < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(err, STDERR_FILENO) < 0)
            ::_exit(127);
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }
    m_children[pid] = {index, run, errPath};
}

std::vector<RunEnd> ChildProcessLauncher::collectEnded(std::chrono::milliseconds wait) {
    std::vector<RunEnd> ended;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (true) {
        for (auto it = m_children.begin(); it != m_children.end();) {
            int status = 0;
            const pid_t got = ::waitpid(it->first, &status, WNOHANG);
            if (got == 0 || (got < 0 && errno == EINTR)) {
                ++it;
                continue;
            }
            // 128 + the signal passed on: stopped with the sweep, its summary written; else
            // the command says whether the status is a result.
            const int code = got < 0             ? -1
                             : WIFEXITED(status) ? WEXITSTATUS(status)
                                                 : 128 + WTERMSIG(status);
            RunEnd end{it->second.index, RunEnd::Outcome::Result, {}};
            if (m_stopSignal != 0 && code == 128 + m_stopSignal) {
                end.outcome = RunEnd::Outcome::Stopped;
            } else if (std::string why =
                           m_command->failure(it->second.run, code, it->second.stderrPath);
                       !why.empty()) {
                end.outcome = RunEnd::Outcome::Failed;
                end.reason = std::move(why);
                end.recordFailed = m_command->recordFailed(code);
            }
            ended.push_back(std::move(end));
            it = m_children.erase(it);
        }
        if (!ended.empty() || m_children.empty() || std::chrono::steady_clock::now() >= deadline)
            return ended;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void ChildProcessLauncher::stopAll(const StopRequest& request) {
    if (m_stopSignal != 0)
        return;
    // A script's children stop on theirs (SIGINT: Python's KeyboardInterrupt, whose exit
    // handlers write the summary), whatever signal stopped the sweep.
    m_stopSignal = request.signal != 0 && m_command->stopSignal() == SIGTERM
                       ? request.signal
                       : m_command->stopSignal();
    for (const auto& [pid, child] : m_children)
        ::kill(m_command->stopsGroup() ? -pid : pid, m_stopSignal);
}

} // namespace plab
