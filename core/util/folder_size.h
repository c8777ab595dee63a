// What a folder takes on disk, and that size as people read it: the one helper the CLI's run
// summary and the app's status bar and runs-folder notice use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace plab {

// The bytes of the regular files under `dir`, subfolders included; what cannot be read counts 0.
std::uint64_t bytesUnder(const std::filesystem::path& dir);

// "12.3 MB" (decimal megabytes, as disks and `du --si` count them).
std::string megabytesText(std::uint64_t bytes);

} // namespace plab
