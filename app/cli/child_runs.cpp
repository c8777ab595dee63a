#include "child_runs.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace plab::cli {

std::string selfExecutable() {
    return std::filesystem::read_symlink("/proc/self/exe").string();
}

std::string lastLine(const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty())
            last = line;
    return last;
}

namespace {
volatile std::sig_atomic_t g_stopSignal = 0;

extern "C" void onChildRunsStopSignal(int signal) {
    g_stopSignal = signal;
    std::signal(signal, SIG_DFL);
}
} // namespace

void catchStopSignals() {
    struct sigaction action {};
    action.sa_handler = onChildRunsStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // no SA_RESTART: a signal interrupts waitpid and sleeps
    for (int signal : {SIGINT, SIGTERM, SIGHUP})
        sigaction(signal, &action, nullptr);
}

int stopSignal() {
    return g_stopSignal;
}

ChildRuns::ChildRuns(unsigned slots, OnEnd onEnd)
    : m_slots(std::max(1u, slots)), m_onEnd(std::move(onEnd)) {}

bool ChildRuns::start(const std::string& label, const std::vector<std::string>& argv,
                      const std::string& stderrPath) {
    while (m_running.size() >= m_slots && g_stopSignal == 0)
        reap();
    if (g_stopSignal != 0)
        return false;
    std::vector<std::string> args = argv;
    std::vector<char*> cargv;
    for (std::string& a : args)
        cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderrPath.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0); // a group of its own
    pid_t pid = 0;
    const int failed = posix_spawn(&pid, cargv[0], &actions, &attributes, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (failed != 0)
        throw std::runtime_error("cannot start " + argv.front() + " for " + label);
    m_running[pid] = label;
    return true;
}

void ChildRuns::waitAll() {
    while (!m_running.empty())
        reap();
}

void ChildRuns::reap() {
    if (g_stopSignal != 0 && !m_forwarded) {
        m_forwarded = true;
        for (const auto& [child, label] : m_running)
            kill(child, g_stopSignal);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid <= 0)
        return; // interrupted by a signal: the caller's loop comes back here
    const auto it = m_running.find(pid);
    if (it == m_running.end())
        return;
    const std::string label = it->second;
    m_running.erase(it);
    m_onEnd(label, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

} // namespace plab::cli
