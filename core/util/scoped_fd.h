// A file descriptor closed on every path out of its scope.
#pragma once

#include <unistd.h>

namespace plab {

struct ScopedFd {
    int fd = -1;
    ScopedFd() = default;
    explicit ScopedFd(int descriptor) : fd(descriptor) {}
    ScopedFd(const ScopedFd&) = delete;
    ScopedFd& operator=(const ScopedFd&) = delete;
    ~ScopedFd() {
        if (fd >= 0)
            ::close(fd);
    }
};

} // namespace plab
