// The built-in precision presets, as data: core/train/presets.json (compiled in) holds each
// preset's name, the paper it follows, a one-line description and the config it puts on top of
// the defaults. `precision-lab-cli presets`, `--preset`, the app's preset boxes, sweeps and the
// Python module all read this one table. A new preset is an entry in that file (docs/config.md).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace plab {

struct Preset {
    std::string name;
    std::string description; // one line: what the recipe is
    std::string paper;       // the paper (or spec) it follows, with its arXiv number
    nlohmann::json json;     // the config it adds to the defaults (recipe, scaling)
};

// In the file's order. The table is checked when first read: every preset names a paper and a
// description, names are unique, and each config is one configFromJson takes (a std::logic_error
// otherwise: a build with a broken table fails its first test, not a user's run).
const std::vector<Preset>& presets();
const Preset& findPreset(const std::string& name); // throws ConfigError listing the names

// The table parsed and checked from JSON text (presets() reads the compiled-in file with it);
// throws std::logic_error naming the preset and what is missing.
std::vector<Preset> readPresetTable(const std::string& text);

} // namespace plab
