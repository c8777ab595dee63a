// The runs of a sweep, planned once: every grid point times every seed, each with its run folder
// and the config it trains with (built by Sweep::runConfigJson, the one builder). The CLI's
// sweep and compare, the Slurm tasks and the app's Compare all run these, so that one sweep
// means the same runs whoever starts it.
#pragma once

#include "sweep/sweep_plan.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace plab {

struct SweepRun {
    std::size_t point = 0; // into Sweep::points()
    int seed = 1;
    std::string dir;      // DIR/<point>/seed-<k>
    std::string relative; // <point>/seed-<k>
    nlohmann::json config;
};

// Points in order, each with seeds 1..N; `threads` per run goes into each config.
std::vector<SweepRun> planSweepRuns(const Sweep& sweep, const std::string& dir, int threads = 1);

// A comparison on one seed: DIR/<preset> per preset (the CLI's `compare` without --seeds).
std::vector<SweepRun> planComparisonRuns(const Sweep& sweep, const std::string& dir);

// Takes `dir` for `sweep`: made if missing; refused (std::invalid_argument naming what differs)
// when its sweep.json describes another sweep, so that a folder never mixes runs of two; then
// sweep.json is written (with `extra`'s keys: the backend and its options).
void claimSweepFolder(const std::string& dir, const Sweep& sweep,
                      const nlohmann::json& extra = nlohmann::json::object());

} // namespace plab
