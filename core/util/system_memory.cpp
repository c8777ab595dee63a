// availableMemoryBytes: /proc/meminfo, then cgroup v2's memory.max - memory.current.
#include "util/system_memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace plab {
namespace {

std::optional<std::uint64_t> meminfoAvailable() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:")
            return kib * 1024;
    return std::nullopt;
}

std::optional<std::uint64_t> readNumber(const char* path) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text) || text == "max")
        return std::nullopt;
    try {
        return std::stoull(text);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

} // namespace

std::optional<std::uint64_t> availableMemoryBytes() {
    std::optional<std::uint64_t> available = meminfoAvailable();
    const auto limit = readNumber("/sys/fs/cgroup/memory.max");
    const auto used = readNumber("/sys/fs/cgroup/memory.current");
    if (limit && used) {
        const std::uint64_t left = *limit > *used ? *limit - *used : 0;
        available = available ? std::min(*available, left) : left;
    }
    return available;
}

std::optional<MemoryShortfall> memoryShortfall(double bytes) {
    const std::optional<std::uint64_t> available = availableMemoryBytes();
    if (!available || bytes <= static_cast<double>(*available))
        return std::nullopt;
    const auto gb = [](double b) {
        char text[32];
        std::snprintf(text, sizeof text, "%.1f GB", b / 1e9);
        return std::string(text);
    };
    return MemoryShortfall{gb(bytes), gb(static_cast<double>(*available))};
}

} // namespace plab
