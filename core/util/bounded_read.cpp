// readBounded: reads in chunks and stops one byte past the ceiling.
#include "util/bounded_read.h"

#include <filesystem>
#include <fstream>

namespace plab {

BoundedRead readBounded(const std::string& path, std::size_t maxBytes, std::string& out) {
    out.clear();
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return BoundedRead::IsADirectory;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return BoundedRead::CannotOpen;
    char chunk[1 << 16];
    while (in) {
        in.read(chunk, sizeof chunk);
        out.append(chunk, static_cast<std::size_t>(in.gcount()));
        if (out.size() > maxBytes)
            return BoundedRead::TooLarge;
    }
    return in.bad() ? BoundedRead::CannotRead : BoundedRead::Ok;
}

std::string describeBytes(std::size_t bytes) {
    if (bytes >= (std::size_t{1} << 30) && bytes % (std::size_t{1} << 30) == 0)
        return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0)
        return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes) + " bytes";
}

} // namespace plab
