// Fuzz target: the run configuration parser (JSON text -> TrainConfig), as used for config.json,
// --config files and saved GUI sessions: parseConfigText (depth, top-level object, duplicate
// keys) then configFromJson. Any input must end in a TrainConfig or a ConfigError with a
// message; any other exception escaping is a bug (it would be a crash in the CLI).
#include "train/train_config.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const plab::TrainConfig config =
            plab::configFromJson(plab::parseConfigText(text, "fuzz.json"));
        // A config that was accepted must replay: read back from its own JSON, it is the same
        // config field by field (config.json replays a run).
        const plab::TrainConfig again = plab::configFromJson(config.toJson());
        if (!(again == config) || again.toJson() != config.toJson()) {
            std::fputs("config does not replay through toJson()\n", stderr);
            std::abort();
        }
    } catch (const plab::ConfigError& e) {
        if (std::strlen(e.what()) == 0)
            std::abort();
    }
    return 0;
}
