#include "child_runs.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

ChildRuns::ChildRuns(unsigned slots, OnEnd onEnd)
    : m_slots(std::max(1u, slots)), m_onEnd(std::move(onEnd)) {}

void ChildRuns::start(const std::string& label, const std::vector<std::string>& argv,
                      const std::string& stderrPath) {
    while (m_running.size() >= m_slots)
        reap();
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
    pid_t pid = 0;
    const int failed = posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (failed != 0)
        throw std::runtime_error("cannot start " + argv.front() + " for " + label);
    m_running[pid] = label;
}

void ChildRuns::waitAll() {
    while (!m_running.empty())
        reap();
}

void ChildRuns::reap() {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid <= 0)
        return;
    const auto it = m_running.find(pid);
    if (it == m_running.end())
        return;
    const std::string label = it->second;
    m_running.erase(it);
    m_onEnd(label, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

} // namespace plab::cli
