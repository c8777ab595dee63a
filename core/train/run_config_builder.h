// One run config from its parts, always in one order: a preset; over it a whole config (a config
// file, an opened session); then key.path=value settings (--set, a sweep's grid point, the app's
// toolbar); then the seed, the length (steps, or epochs), threads, data and device. The one
// builder behind `train`, `bench train`, `sweep`, `compare`, the Slurm tasks and the app's Apply,
// so that the same parts make the same run wherever they are given.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace plab {

struct RunConfigParts {
    std::string preset;                             // empty: none
    nlohmann::json base = nlohmann::json::object(); // merged over the preset
    std::vector<std::string> settings;              // "key.path=value", in order
    std::optional<int> seed;
    std::optional<std::int64_t> steps;
    std::optional<int> epochs; // instead of steps (train.steps becomes 0)
    std::optional<int> threads;
    std::string data;   // data.source; empty: as set above
    std::string device; // empty: as set above
};

// The config's JSON (configFromJson() makes the TrainConfig); a data folder or text file named
// by a relative path is made absolute, so that the run's config.json replays from anywhere.
// Throws ConfigError naming the preset or the setting that is wrong.
nlohmann::json buildRunConfigJson(const RunConfigParts& parts);

} // namespace plab
