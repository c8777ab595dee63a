// What a GPU test does when no GPU is usable: CTest's skip (exit 77, with the reason), unless
// PLAB_REQUIRE_GPU is set, as run-device-checks.sh sets it on a machine whose device listing
// shows a usable GPU: there a skip would hide a fault (a driver the test cannot open, a device
// index gone wrong), so it is a failure.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace plab::gpu_test {

inline bool gpuRequired() {
    return std::getenv("PLAB_REQUIRE_GPU") != nullptr;
}

inline int noUsableGpu(const std::string& notice) {
    if (gpuRequired()) {
        std::printf("FAIL: no usable GPU, though PLAB_REQUIRE_GPU says there is one: %s\n",
                    notice.c_str());
        return 1;
    }
    std::printf("SKIP: %s\n", notice.c_str());
    return 77;
}

} // namespace plab::gpu_test
