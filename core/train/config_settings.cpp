// --set key.path=value: a setting put into a config document, its value read as JSON (as a
// config file is) or else as text, a section never silently replaced.
#include "train/train_config.h"

#include <algorithm>

namespace plab {

using nlohmann::json;

namespace {

// The setting's value (already parsed) put at its key path: a role's format name shorthand
// merged, a section never silently replaced.
void applyParsedSetting(json& j, const std::string& assignment, const std::string& key,
                        json parsed) {
    json* node = &j;
    std::size_t start = 0;
    for (;;) {
        const std::size_t dot = key.find('.', start);
        const std::string part = key.substr(start, dot - start);
        if (part.empty())
            throw ConfigError("--set \"" + assignment + "\": empty key segment");
        if (node->is_string()) // a role given as a format name: {"format": name} with more
            *node = json{{"format", *node}};
        else if (node->is_null())
            *node = json::object();
        else if (!node->is_object()) // `--set train=1` then `--steps`: say so, do not drop it
            throw ConfigError("--set \"" + assignment + "\": " + key.substr(0, start - 1) + " is " +
                              node->dump().substr(0, 40) + ", not a section of settings");
        node = &(*node)[part];
        if (dot == std::string::npos)
            break;
        start = dot + 1;
    }
    if (node->is_string() && parsed.is_object()) // the same shorthand, merged into
        *node = json{{"format", *node}};
    // A section replaced by a number or a truth value loses every setting in it (`train=1`); a
    // string stays allowed: a role given as a format name ("recipe.weights=fp16").
    // The same for a top-level section not set yet (`--set train=1` then `--steps`, which blamed
    // the --steps).
    const bool section =
        key == "data" || key == "model" || key == "train" || key == "recipe" || key == "scaling";
    if ((section || (node->is_object() && !node->empty())) &&
        (parsed.is_number() || parsed.is_boolean()))
        throw ConfigError("--set \"" + assignment + "\": " + key +
                          " is a section of settings (expected " + key + ".<key>=value)");
    if (node->is_object() && parsed.is_object())
        mergeConfig(*node, parsed);
    else
        *node = parsed;
}

} // namespace

void applySetting(json& j, const std::string& assignment) {
    const std::size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ConfigError("--set \"" + assignment + "\": expected key.path=value");
    const std::string key = assignment.substr(0, eq);
    const std::string value = assignment.substr(eq + 1);
    // The value as JSON when it is JSON (nested no deeper than a config may be), else as text.
    int depth = 0;
    const auto shallow = [&](int d, json::parse_event_t event, json&) {
        if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start)
            depth = std::max(depth, d + 1);
        return depth <= kConfigMaxDepth;
    };
    // An object value is read as a config file is: a key twice in one object, or
    // nesting past the limit, is refused (the plain parser kept the last of two keys).
    const std::size_t first = value.find_first_not_of(" \t\n\r");
    if (first != std::string::npos && value[first] == '{')
        return applyParsedSetting(j, assignment, key,
                                  parseConfigText(value, "--set \"" + key + "\""));
    json parsed = json::parse(value, shallow, false);
    if (depth > kConfigMaxDepth)
        throw ConfigError("--set \"" + key + "\": value nested deeper than " +
                          std::to_string(kConfigMaxDepth) + " levels");
    if (parsed.is_discarded())
        parsed = value;
    // A number too small for a double reads as 0 ("1e-400" was reported as "0.0 is out of
    // range"): named as typed.
    if (parsed.is_number_float() && parsed.get<double>() == 0.0) {
        const std::string mantissa = value.substr(0, value.find_first_of("eE"));
        if (mantissa.find_first_of("123456789") != std::string::npos)
            throw ConfigError("--set \"" + assignment + "\": " + value +
                              " is below the smallest double (about 4.9e-324) and would read as "
                              "0");
    }
    applyParsedSetting(j, assignment, key, std::move(parsed));
}

} // namespace plab
