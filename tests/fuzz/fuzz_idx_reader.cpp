// Fuzz target: the IDX reader (plain and gzip) on arbitrary file contents. Every input must give
// an IdxArray whose data matches its dimensions, or a DataError; never a crash or a huge
// allocation (the limit passed here is 1 MiB, so a lying header must be refused, not obeyed).
#include "data/dataset.h"
#include "data/idx_reader.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // readIdx takes a path (zlib opens it); an in-memory file keeps the fuzzer off the disk.
    static const int fd = memfd_create("idx", 0);
    if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
        std::abort();
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    try {
        const plab::IdxArray a = plab::readIdx(path, std::uint64_t{1} << 20);
        std::uint64_t total = 1;
        for (const std::uint32_t d : a.dims)
            total *= d;
        if (a.dims.empty() || a.dims.size() > 4 || total != a.data.size()) {
            std::fputs("IdxArray does not match its dimensions\n", stderr);
            std::abort();
        }
    } catch (const plab::DataError&) {
    }
    return 0;
}
