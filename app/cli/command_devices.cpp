// `devices`: what this machine offers to Precision Lab, and why a GPU is not usable when it is
// not (no driver, no device, too old, or a build without CUDA).
#include "cli_commands.h"

#include "device/compute_backend.h"

#include <cstdio>

namespace plab::cli {

Command addDevicesCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("devices", "List the CPU and GPUs this build can use");
    return {cmd, [] {
                for (const DeviceReport& r : deviceReports()) {
                    std::printf("%-5s %s: %s\n", r.backend.c_str(),
                                r.available ? "usable" : "not usable", r.summary.c_str());
                    for (const DeviceInfo& d : r.devices)
                        std::printf("  %s:%d  %s  compute %d.%d  %.1f GiB  %s\n", r.backend.c_str(),
                                    d.index, d.name.c_str(), d.computeMajor, d.computeMinor,
                                    static_cast<double>(d.memoryBytes) / (1024.0 * 1024 * 1024),
                                    d.usable ? "usable" : ("not usable: " + d.reason).c_str());
                }
                const DeviceChoice choice = resolveDevice(DeviceSpec{});
                std::printf("--device auto would use: %s\n", choice.label.c_str());
                if (!choice.notice.empty())
                    std::printf("  %s\n", choice.notice.c_str());
                return 0;
            }};
}

} // namespace plab::cli
