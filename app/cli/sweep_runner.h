// A sweep's settings and its run, shared by `sweep` and by `compare --seeds N` (a compare over
// seeds is a sweep without a grid).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plab::cli {

struct SweepArgs {
    std::string file; // a sweep.json to run instead of the options below
    std::vector<std::string> presets = {"fp32"};
    int seeds = 1;
    std::vector<std::string> grid; // "key=v1,v2"
    std::vector<std::string> sets;
    std::int64_t steps = 300;
    int epochs = 0; // instead of steps when given
    std::string data;
    std::string baseline = "fp32";
    std::string out = "runs/sweep";
    unsigned jobs = 0;
    bool rerunFailed = false;
};

// Runs (or resumes) the sweep and writes its folder; returns the exit status.
int runSweep(const SweepArgs& args);

} // namespace plab::cli
