// A sweep's settings and its run, shared by `sweep` and by `compare --seeds N` (a compare over
// seeds is a sweep without a grid).
#pragma once

#include "sweep/sweep_plan.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace plab::cli {

struct SweepArgs {
    std::string file; // a sweep.json to run instead of the options below
    Sweep sweep;      // presets, seeds, settings, steps, data, baseline; the grid from `grid`
    std::vector<std::string> grid; // "key=v1,v2"
    // A script sweep: --recipes as given (presets, aliases, recipe files) and the command after
    // `--` (sweep/script_sweep.h).
    std::vector<std::string> recipes;
    std::vector<std::string> command;
    std::string out = "runs/sweep";
    bool outGiven = false; // without --out, `--file DIR/sweep.json` resumes the sweep in DIR
    unsigned jobs = 0;
    bool rerunFailed = false;
    bool collectOnly = false; // tabulate the folder's finished runs, start none

    // Where the runs go: "local" (child processes here) or "slurm" (an array job). With --file,
    // the file's backend and "slurm" object unless given here.
    std::string backend;  // empty: the file's, else local
    nlohmann::json slurm; // Slurm options given on the command line (SlurmOptions keys)
    bool noWait = false;  // slurm: submit and return
    // One task of a Slurm array job: run the run folder on line taskIndex + 1 of taskList.
    std::string taskList;
    int taskIndex = -1;
};

// Runs (or resumes) the sweep and writes its folder; returns the exit status.
int runSweep(const SweepArgs& args);

} // namespace plab::cli
