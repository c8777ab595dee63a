// A hint for large buffers filled once and read for the rest of the run (a dataset's pixels
// and features).
#pragma once

#include <cstddef>

namespace plab {

// Asks the kernel to back [data, data + bytes) with huge pages where its pages are not yet
// touched (Linux, where transparent huge pages are on "madvise", Debian's default): call it
// between a vector's reserve() and the resize() that first writes it. Fashion-MNIST's 235 MB
// otherwise take 64,000 of a one-step run's 70,000 page faults, about half its time on a VM.
// Only the whole 2 MiB pages inside the range; a no-op elsewhere or where the kernel declines.
void adviseHugePages(void* data, std::size_t bytes);

} // namespace plab
