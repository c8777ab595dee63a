// How much memory this process may still take: the kernel's MemAvailable, lowered by a cgroup's
// limit (containers, Slurm jobs) where one is set. Read before a large allocation so that a
// config too big for the machine is refused with a message, not killed by the OOM killer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace plab {

// Bytes available, or nothing when the system does not say (then nothing is refused).
std::optional<std::uint64_t> availableMemoryBytes();

// What a config needing `bytes` lacks, as its refusal says it ("22.5 GB" needed, "8.0 GB"
// available), or nothing when the memory is there or the system does not say: the one check
// of the trainers' (the MLP/CNN's and the GPT's), whose messages name their own keys.
struct MemoryShortfall {
    std::string needed, available;
};
std::optional<MemoryShortfall> memoryShortfall(double bytes);

} // namespace plab
