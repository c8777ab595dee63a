// bytesUnder() walks the tree once; an unreadable entry stops nothing (a run may be writing it).
#include "util/folder_size.h"

#include <cstdio>

namespace plab {

std::uint64_t bytesUnder(const std::filesystem::path& dir) {
    std::uint64_t total = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        if (std::error_code fileError; it->is_regular_file(fileError)) {
            const std::uintmax_t size = it->file_size(fileError);
            if (!fileError)
                total += size;
        }
    return total;
}

std::string megabytesText(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
    return text;
}

} // namespace plab
