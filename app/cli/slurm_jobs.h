// Slurm for `sweep --backend slurm`: the array job's script (one task per run folder), sbatch to
// submit it and squeue to learn when it has ended. Only Slurm's own commands, found on PATH, are
// used, so the cluster's configuration applies as it does to its users (SLURM_CONF, the default
// partition, accounts).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace plab::cli {

// The job's resources, from options or the "slurm" object of a sweep.json.
struct SlurmOptions {
    std::string partition;               // empty: the cluster's default
    std::string time;                    // --time, e.g. "1:00:00"; empty: the partition's default
    std::string mem;                     // --mem, e.g. "2G"; empty: the partition's default
    int cpusPerTask = 1;                 // also each run's --threads
    int maxRunning = 0;                  // the array's %N throttle; 0: no limit
    std::vector<std::string> sbatchArgs; // more sbatch options, e.g. "--account=lab"
    double pollSeconds = 5.0;            // how often progress is read while the job runs

    nlohmann::json toJson() const;
    // Fields absent from `j` keep their value; std::invalid_argument naming the field: as
    // `where`.key (a sweep file's "slurm" object), or as its command-line option.
    void update(const nlohmann::json& j, const std::string& where, bool optionNames = false);
};

// The batch script of an array job of `tasks` tasks, each running `command` (a shell line in
// which $SLURM_ARRAY_TASK_ID picks the task), its output in `logPattern` (%A job, %a task).
std::string arrayJobScript(const SlurmOptions& options, const std::string& jobName, int tasks,
                           const std::string& logPattern, const std::string& command);

// `text` as one word for a POSIX shell: in single quotes, each ' written as '\''.
std::string shellQuote(const std::string& text);
// `text` in double quotes with its control characters as \xNN: how a message shows a value.
std::string printable(const std::string& text);
// std::invalid_argument naming `what` when `path` holds a control character: a job script's
// #SBATCH lines (its log paths) cannot quote one.
void checkScriptPath(const std::string& path, const std::string& what);

struct CommandResult {
    int status = -1;    // the exit status; 127 when the program cannot be started
    std::string output; // stdout and stderr together
};
// Runs a program (looked up on PATH) and waits for it.
CommandResult runCommand(const std::vector<std::string>& argv);

// Submits the script with `sbatch --parsable`; returns the job id. std::runtime_error with
// sbatch's own message when it refuses (or is not installed).
std::string submitJob(const std::string& scriptPath);

enum class JobState { Active, Ended, Unknown };
// Active while any task of the job is pending, running or completing (squeue lists it); Ended
// when squeue lists none or no longer knows the job; Unknown when squeue fails (`why` says so).
JobState jobState(const std::string& jobId, std::string* why = nullptr);

} // namespace plab::cli
