// Run folders of any kind grouped by the recipe they ran, for `compare --runs DIR...`: a group's
// runs are its seeds, and sweep_results.h's collectRunGroups tabulates the groups with verdicts.
#pragma once

#include <string>
#include <vector>

namespace plab {

struct RunGroup {
    std::string name;
    std::vector<std::string> runs;
};

// The group of a run folder: "watched" for a watched run (FP32, judged); a sweep member's point
// (DIR/<point>/seed-k, beside DIR/sweep.json), as its sweep's table names it; the preset whose
// recipe and scaling it ran (a trained or emulated run); else the recipe its script named (a
// preset name, or a recipe file's stem). Throws
// std::runtime_error naming the folder when it holds no run's config.json.
std::string runGroupName(const std::string& runDir);
// The folders grouped, in the order each group first appears.
std::vector<RunGroup> groupRuns(const std::vector<std::string>& runDirs);

} // namespace plab
