// How much memory this process may still take: the kernel's MemAvailable, lowered by a cgroup's
// limit (containers, Slurm jobs) where one is set. Read before a large allocation so that a
// config too big for the machine is refused with a message, not killed by the OOM killer.
#pragma once

#include <cstdint>
#include <optional>

namespace plab {

// Bytes available, or nothing when the system does not say (then nothing is refused).
std::optional<std::uint64_t> availableMemoryBytes();

} // namespace plab
