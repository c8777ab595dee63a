// Reader for the IDX format of the MNIST family (plain or gzip), with the checks that keep a
// truncated or corrupt file from becoming a crash or an absurd allocation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plab {

struct IdxArray {
    std::vector<std::uint32_t> dims;
    std::vector<std::uint8_t> data; // unsigned bytes only (type code 0x08), as MNIST uses
};

// Throws DataError naming the file for: missing file, bad magic, unsupported type, more than 4
// dimensions, a size above maxBytes, or a payload shorter or longer than the header says.
IdxArray readIdx(const std::string& path, std::uint64_t maxBytes = std::uint64_t{1} << 30);

} // namespace plab
