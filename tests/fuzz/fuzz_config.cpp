// Fuzz target: the run configuration parser (JSON text -> TrainConfig), as used for config.json,
// --config files and saved GUI sessions. Any input must end in a TrainConfig or a ConfigError
// with a message; any other exception escaping is a bug (it would be a crash in the CLI).
#include "train/train_config.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
        return 0; // not JSON: the loaders report nlohmann's parse error themselves
    try {
        const plab::TrainConfig config = plab::configFromJson(j);
        // A config that was accepted must survive its own round trip (config.json replays a run).
        const plab::TrainConfig again = plab::configFromJson(config.toJson());
        if (again.toJson() != config.toJson()) {
            std::fputs("config does not round-trip through toJson()\n", stderr);
            std::abort();
        }
    } catch (const plab::ConfigError& e) {
        if (std::strlen(e.what()) == 0)
            std::abort();
    }
    return 0;
}
