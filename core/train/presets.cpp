// The preset table: parsed once from the compiled-in presets.json and checked.
#include "train/presets.h"

#include "train/presets_json.h" // generated from presets.json
#include "train/train_config.h"
#include "util/nearest_name.h"

#include <set>
#include <stdexcept>

namespace plab {

std::vector<Preset> readPresetTable(const std::string& text) {
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    if (!doc.is_object() || !doc.contains("presets") || !doc.at("presets").is_array())
        throw std::logic_error("presets.json: expected an object with a \"presets\" array");
    std::vector<Preset> table;
    std::set<std::string> names;
    for (const nlohmann::json& entry : doc.at("presets")) {
        const auto field = [&](const char* key) {
            const std::string where =
                "presets.json: preset " +
                (entry.contains("name") ? entry.at("name").dump() : std::string("without a name"));
            if (!entry.is_object() || !entry.contains(key) || !entry.at(key).is_string() ||
                entry.at(key).get<std::string>().empty())
                throw std::logic_error(where + ": \"" + key + "\" is missing or empty");
            return entry.at(key).get<std::string>();
        };
        Preset p{field("name"), field("description"), field("paper"),
                 entry.value("config", nlohmann::json::object())};
        if (!names.insert(p.name).second)
            throw std::logic_error("presets.json: preset \"" + p.name + "\" is given twice");
        try {
            (void)configFromJson(p.json);
        } catch (const ConfigError& e) {
            throw std::logic_error("presets.json: preset \"" + p.name + "\": " + e.what());
        }
        table.push_back(std::move(p));
    }
    if (table.empty())
        throw std::logic_error("presets.json: no presets");
    return table;
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> table = readPresetTable(kPresetsJson);
    return table;
}

const Preset& findPreset(const std::string& name) {
    std::string names;
    std::vector<std::string> all;
    for (const Preset& p : presets()) {
        if (p.name == name)
            return p;
        names += (names.empty() ? "" : ", ") + p.name;
        all.push_back(p.name);
    }
    const std::string nearest = nearestName(name, all);
    throw ConfigError("preset \"" + name + "\": unknown" +
                      (nearest.empty() ? std::string() : "; did you mean \"" + nearest + "\"?") +
                      " (expected one of: " + names + ")");
}

} // namespace plab
