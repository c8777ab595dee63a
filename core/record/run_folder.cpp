// mkdir(2) decides who gets a name; an existing name moves on to the next suffix.
#include "record/run_folder.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>

namespace plab {

std::string newTimestampedFolder(const std::string& parent, const std::string& prefix) {
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() %
        1000;
    std::tm local{};
    localtime_r(&seconds, &local);
    return newTimestampedFolder(parent, prefix, local, static_cast<int>(millis));
}

std::string newTimestampedFolder(const std::string& parent, const std::string& prefix,
                                 const std::tm& localTime, int milliseconds) {
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &localTime);
    char millis[8];
    std::snprintf(millis, sizeof millis, "-%03d", milliseconds);
    const std::string first = parent + "/" + prefix + stamp + millis;
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    for (int n = 1; n <= 1000; ++n) {
        const std::string path = n == 1 ? first : first + "-" + std::to_string(n);
        if (::mkdir(path.c_str(), 0777) == 0)
            return path;
        if (errno != EEXIST) // not taken, yet not made: no suffix will help
            break;
    }
    return first;
}

} // namespace plab
