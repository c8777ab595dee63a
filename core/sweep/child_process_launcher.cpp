// Children by fork + exec rather than posix_spawn: only a forked child can ask for a signal when
// its parent dies (prctl), and must do so before exec. Between fork and exec only
// async-signal-safe calls (the app that forks has threads).
#include "sweep/child_process_launcher.h"

#include "record/record_file.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace plab {

std::string selfExecutable() {
    return std::filesystem::read_symlink("/proc/self/exe").string();
}

namespace {

// Why a child failed: the signal that killed it, else its own error line (the last one it wrote
// as "precision-lab-cli: ..."), else its last line. A killed run's last line is a progress line,
// which says nothing of why.
std::string failureReason(int code, const std::string& stderrPath) {
    if (code > 128 && code < 128 + 65) {
        const int signal = code - 128;
        const char* name = sigabbrev_np(signal);
        return "killed by signal " + std::to_string(signal) +
               (name != nullptr ? " (SIG" + std::string(name) + ")" : std::string());
    }
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

} // namespace

ChildProcessLauncher::ChildProcessLauncher(std::string program, bool overwrite)
    : m_program(std::move(program)), m_overwrite(overwrite) {}

ChildProcessLauncher::~ChildProcessLauncher() {
    if (m_children.empty())
        return;
    stopAll({SIGTERM, {}});
    while (!m_children.empty())
        collectEnded(std::chrono::milliseconds(50));
}

void ChildProcessLauncher::start(std::size_t index, const SweepRun& run) {
    writeFileAtomically(configPath(run), run.config.dump(2) + "\n");
    std::vector<std::string> args = {m_program,       "train", "--config",
                                     configPath(run), "--out", run.dir};
    if (m_overwrite) { // a stopped run goes on from its checkpoint; any other starts afresh
        args.push_back("--overwrite");
        args.push_back("--resume");
    }
    std::vector<char*> argv;
    for (std::string& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string errPath = stderrPath(run);
    // Opened here, not in the child: a planted link, FIFO or device at the log's name is refused
    // with its reason (the child could only exit 127), and never written through.
    const int err = openRegularFileForWriting(errPath, WriteOpen::Truncate);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid != 0)
        ::close(err); // the child's copy is its stderr
    if (pid < 0)
        throw std::runtime_error("cannot start " + m_program + " for " + run.dir + " (" +
                                 std::strerror(errno) + ")");
    if (pid == 0) {
        ::setpgid(0, 0); // a group of its own
        // The stop signals blocked across exec: `train` lets them in once its handler is set,
        // so a stop (or this process's death) while it starts up cannot kill it unrecorded.
        sigset_t stops;
        sigemptyset(&stops);
        for (int signal : {SIGINT, SIGTERM, SIGHUP})
            sigaddset(&stops, signal);
        ::sigprocmask(SIG_BLOCK, &stops, nullptr);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != parent) // the parent died before prctl took effect
            ::_exit(128 + SIGTERM);
        const int out = ::open("/dev/null", O_WRONLY);
        if (out < 0 || err < 0 || ::dup2(out, STDOUT_FILENO) < 0 || ::dup2(err, STDERR_FILENO) < 0)
            ::_exit(127);
        ::execve(argv[0], argv.data(), environ);
        ::_exit(127);
    }
    m_children[pid] = {index, errPath};
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
            // 0: completed; 3: ended early with a result (diverged); 128 + the signal passed
            // on: stopped with the sweep, its summary written.
            const int code = got < 0             ? -1
                             : WIFEXITED(status) ? WEXITSTATUS(status)
                                                 : 128 + WTERMSIG(status);
            RunEnd end{it->second.index, RunEnd::Outcome::Result, {}};
            if (m_stopSignal != 0 && code == 128 + m_stopSignal) {
                end.outcome = RunEnd::Outcome::Stopped;
            } else if (code != 0 && code != 3) {
                end.outcome = RunEnd::Outcome::Failed;
                end.reason = failureReason(code, it->second.stderrPath);
                end.recordFailed = code == 4; // `train`'s status for a record it could not write
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
    m_stopSignal = request.signal != 0 ? request.signal : SIGTERM;
    for (const auto& [pid, child] : m_children)
        ::kill(pid, m_stopSignal);
}

} // namespace plab
