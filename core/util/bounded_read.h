// A whole file read into memory with a ceiling: a file larger than the ceiling, or one that never
// ends (/dev/zero, a FIFO fed forever), is refused after ceiling + 1 bytes instead of growing
// until the machine runs out of memory.
#pragma once

#include <cstddef>
#include <string>

namespace plab {

enum class BoundedRead { Ok, CannotOpen, IsADirectory, CannotRead, TooLarge };

// Reads `path` into `out`; on anything but Ok, `out` holds what was read so far.
BoundedRead readBounded(const std::string& path, std::size_t maxBytes, std::string& out);

// "16 MiB", "1 GiB": a ceiling as messages name it.
std::string describeBytes(std::size_t bytes);

} // namespace plab
