#include "slurm_jobs.h"

#include "util/thread_pool.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <regex>
#include <stdexcept>

extern char** environ;

namespace plab::cli {

nlohmann::json SlurmOptions::toJson() const {
    return {{"partition", partition},
            {"time", time},
            {"mem", mem},
            {"cpus_per_task", cpusPerTask},
            {"max_running", maxRunning},
            {"sbatch_args", sbatchArgs},
            {"poll_seconds", pollSeconds}};
}

void SlurmOptions::update(const nlohmann::json& j, const std::string& where, bool optionNames) {
    // A field as the user wrote it: --cpus-per-task on the command line, slurm.cpus_per_task in
    // a sweep file.
    const auto name = [&](const std::string& key) {
        if (!optionNames)
            return where + "." + key;
        static const std::map<std::string, std::string> options = {
            {"partition", "--partition"},
            {"time", "--time"},
            {"mem", "--mem"},
            {"cpus_per_task", "--cpus-per-task"},
            {"max_running", "--max-running"},
            {"sbatch_args", "--sbatch-arg"},
            {"poll_seconds", "--poll"}};
        return "sweep: " + options.at(key);
    };
    if (!j.is_object())
        throw std::invalid_argument(where + ": expected an object of Slurm options");
    try {
        partition = j.value("partition", partition);
        time = j.value("time", time);
        mem = j.value("mem", mem);
        cpusPerTask = j.value("cpus_per_task", cpusPerTask);
        maxRunning = j.value("max_running", maxRunning);
        sbatchArgs = j.value("sbatch_args", sbatchArgs);
        pollSeconds = j.value("poll_seconds", pollSeconds);
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(where + ": " + e.what());
    }
    // Each run's training threads too: refused here what every task's run would refuse on its
    // node (issue 65 item 13: submitted, then each task failed).
    if (cpusPerTask < 1 || cpusPerTask > static_cast<int>(kMaxThreads))
        throw std::invalid_argument(name("cpus_per_task") + ": " + std::to_string(cpusPerTask) +
                                    ": expected 1 to " + std::to_string(kMaxThreads) +
                                    " (each run's training threads)");
    if (maxRunning < 0)
        throw std::invalid_argument(name("max_running") + ": expected 0 (no limit) or more");
    if (!(pollSeconds >= 0.1 && pollSeconds <= 3600.0))
        throw std::invalid_argument(name("poll_seconds") + ": expected 0.1 to 3600 seconds");
    // Every value is written into the job script's #SBATCH lines: a control character (a
    // newline) would end the line and run the rest as a command. Each takes its documented
    // syntax only.
    const auto check = [&](const std::string& key, const std::string& value,
                           const std::regex& syntax, const char* expected) {
        if (!value.empty() && !std::regex_match(value, syntax))
            throw std::invalid_argument(name(key) + ": " + printable(value) + ": expected " +
                                        expected);
    };
    static const std::regex partitionSyntax("[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*");
    static const std::regex timeSyntax(
        "[0-9]+(-[0-9]+)?(:[0-9]+){0,2}|UNLIMITED|INFINITE|unlimited|infinite");
    static const std::regex memSyntax("[0-9]+[KMGTkmgt]?");
    static const std::regex sbatchArgSyntax("--[A-Za-z][A-Za-z0-9-]*(=[^\\x00-\\x1f\\x7f]*)?");
    check("partition", partition, partitionSyntax,
          "partition names (letters, digits, _ . -), comma-separated");
    check("time", time, timeSyntax,
          "a Slurm time: minutes, [days-]hours:minutes:seconds, days-hours or UNLIMITED");
    check("mem", mem, memSyntax, "a size such as 2000 or 2G (units K, M, G, T)");
    for (const std::string& a : sbatchArgs) {
        if (a.empty() || !std::regex_match(a, sbatchArgSyntax))
            throw std::invalid_argument(
                name("sbatch_args") + ": " + printable(a) +
                ": expected one sbatch option such as --account=lab (no control characters)");
        // The lines the job script writes itself: a later #SBATCH line would override them
        // (`--array=0-99` ran 100 tasks of a 3-run sweep; `--output` lost the logs).
        const std::string option = a.substr(0, a.find('='));
        for (const char* own : {"--array", "--job-name", "--output", "--error", "--ntasks",
                                "--cpus-per-task", "--partition", "--time", "--mem"})
            if (option == own)
                throw std::invalid_argument(
                    name("sbatch_args") + ": " + printable(a) + ": " + option +
                    " is written by the sweep itself (its array of runs, their logs, and the "
                    "--partition, --time, --mem and --cpus-per-task options)");
    }
}

std::string printable(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            char code[8];
            std::snprintf(code, sizeof code, "\\x%02x", u);
            out += code;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

void checkScriptPath(const std::string& path, const std::string& what) {
    for (const char c : path) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f)
            throw std::invalid_argument(what + ": " + printable(path) +
                                        ": a folder name with a control character cannot be "
                                        "written into a Slurm job script; choose another");
    }
}

std::string shellQuote(const std::string& text) {
    std::string out = "'";
    for (const char c : text)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string arrayJobScript(const SlurmOptions& o, const std::string& jobName, int tasks,
                           const std::string& logPattern, const std::string& command) {
    std::string s = "#!/bin/bash\n";
    s += "#SBATCH --job-name=" + jobName + "\n";
    s += "#SBATCH --array=0-";
    s += std::to_string(tasks - 1);
    if (o.maxRunning > 0) {
        s += '%';
        s += std::to_string(o.maxRunning);
    }
    s += '\n';
    s += "#SBATCH --output=" + logPattern + "\n";
    s += "#SBATCH --ntasks=1\n";
    s += "#SBATCH --cpus-per-task=" + std::to_string(o.cpusPerTask) + "\n";
    if (!o.partition.empty())
        s += "#SBATCH --partition=" + o.partition + "\n";
    if (!o.time.empty())
        s += "#SBATCH --time=" + o.time + "\n";
    if (!o.mem.empty())
        s += "#SBATCH --mem=" + o.mem + "\n";
    for (const std::string& a : o.sbatchArgs)
        s += "#SBATCH " + a + "\n";
    s += command + "\n";
    return s;
}

CommandResult runCommand(const std::vector<std::string>& argv) {
    int fds[2];
    if (pipe(fds) != 0)
        return {127, "cannot create a pipe"};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    std::vector<std::string> args = argv;
    std::vector<char*> cargv;
    for (std::string& a : args)
        cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_t pid = 0;
    const int failed = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    CommandResult result;
    if (failed != 0) {
        close(fds[0]);
        return {127, argv.front() + ": not found on PATH"};
    }
    char buffer[4096];
    for (;;) {
        const ssize_t n = read(fds[0], buffer, sizeof buffer);
        if (n > 0)
            result.output.append(buffer, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

namespace {
std::string firstLine(const std::string& text) {
    const std::size_t start = text.find_first_not_of(" \n");
    if (start == std::string::npos)
        return {};
    return text.substr(start, text.find('\n', start) - start);
}
// Slurm's commands print their reason last ("sbatch: fatal: ..." after the errors leading to it).
std::string lastLineOf(const std::string& text) {
    const std::size_t end = text.find_last_not_of(" \n");
    if (end == std::string::npos)
        return {};
    const std::size_t start = text.rfind('\n', end);
    return text.substr(start == std::string::npos ? 0 : start + 1,
                       end + 1 - (start == std::string::npos ? 0 : start + 1));
}
} // namespace

std::string submitJob(const std::string& scriptPath) {
    const CommandResult r = runCommand({"sbatch", "--parsable", scriptPath});
    const std::string line = firstLine(r.output);
    // --parsable prints "ID" or "ID;cluster".
    const std::string id = line.substr(0, line.find(';'));
    if (r.status == 127)
        throw std::runtime_error("sbatch " + scriptPath + ": " + r.output +
                                 " (--backend slurm runs where Slurm's client commands are)");
    if (r.status != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
        const std::string why = lastLineOf(r.output);
        throw std::runtime_error("sbatch " + scriptPath + ": " +
                                 (why.empty() ? "exit " + std::to_string(r.status) : why));
    }
    return id;
}

JobState jobState(const std::string& jobId, std::string* why) {
    const CommandResult r = runCommand({"squeue", "--noheader", "--jobs", jobId, "--format=%T"});
    if (r.status == 0)
        return firstLine(r.output).empty() ? JobState::Ended : JobState::Active;
    if (r.output.find("Invalid job id") != std::string::npos)
        return JobState::Ended; // gone from the controller's memory: long over
    if (why)
        *why = "squeue: " +
               (r.output.empty() ? "exit " + std::to_string(r.status) : firstLine(r.output));
    return JobState::Unknown;
}

} // namespace plab::cli
