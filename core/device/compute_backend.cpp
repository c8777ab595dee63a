// The backend registry, device-string parsing and the auto/fallback rules.
#include "device/compute_backend.h"

#include "engine/cpu_ops.h"
#include "engine/tensor_ops.h"

#include <charconv>
#include <mutex>
#include <thread>

namespace plab {

std::unique_ptr<TensorOps> ComputeBackend::makeTensorOps(int /*device*/) const {
    return nullptr;
}

namespace {

struct Registry {
    std::mutex mutex;
    std::vector<std::unique_ptr<ComputeBackend>> backends;
};

Registry& registry() {
    static Registry r;
    return r;
}

std::string describe(const DeviceInfo& d) {
    return "cuda:" + std::to_string(d.index) + " (" + d.name + ")";
}

} // namespace

DeviceSpec parseDeviceSpec(std::string_view text) {
    if (text == "auto")
        return {DeviceKind::Auto, 0};
    if (text == "cpu")
        return {DeviceKind::Cpu, 0};
    if (text == "cuda")
        return {DeviceKind::Cuda, 0};
    if (text.starts_with("cuda:")) {
        const std::string_view digits = text.substr(5);
        int index = -1;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
        if (ec == std::errc{} && end == digits.data() + digits.size() && !digits.empty() &&
            index >= 0 && index < 64)
            return {DeviceKind::Cuda, index};
    }
    throw DeviceError("device \"" + std::string(text) +
                      "\": expected auto, cpu, cuda or cuda:N (N = 0..63)");
}

std::string toString(const DeviceSpec& spec) {
    switch (spec.kind) {
    case DeviceKind::Auto:
        return "auto";
    case DeviceKind::Cpu:
        return "cpu";
    case DeviceKind::Cuda:
        return "cuda:" + std::to_string(spec.index);
    }
    return "?";
}

void registerBackend(std::unique_ptr<ComputeBackend> backend) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.backends.push_back(std::move(backend));
}

const ComputeBackend* findBackend(std::string_view name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const auto& b : r.backends)
        if (b->name() == name)
            return b.get();
    return nullptr;
}

std::vector<DeviceReport> deviceReports() {
    std::vector<DeviceReport> reports;
    DeviceReport cpu;
    cpu.backend = "cpu";
    cpu.available = true;
    std::string kernels;
    for (const CpuKernel k : supportedCpuKernels())
        kernels += std::string(kernels.empty() ? "" : ", ") + toString(k);
    cpu.summary = std::to_string(std::thread::hardware_concurrency()) +
                  " hardware threads; quantise kernels: " + kernels;
    reports.push_back(cpu);
    if (const ComputeBackend* cuda = findBackend("cuda")) {
        reports.push_back(cuda->probe());
    } else {
        DeviceReport none;
        none.backend = "cuda";
        none.summary = "not in this build (nvcc was not found when it was built)";
        reports.push_back(none);
    }
    return reports;
}

DeviceChoice resolveDevice(const DeviceSpec& spec) {
    DeviceChoice cpu;
    cpu.label = "cpu";
    if (spec.kind == DeviceKind::Cpu)
        return cpu;
    const ComputeBackend* cuda = findBackend("cuda");
    const DeviceReport report = cuda ? cuda->probe() : deviceReports().back();
    const DeviceInfo* chosen = nullptr;
    for (const DeviceInfo& d : report.devices) {
        const bool wanted = spec.kind == DeviceKind::Auto ? d.usable : d.index == spec.index;
        if (wanted) {
            chosen = &d;
            break;
        }
    }
    if (chosen != nullptr && chosen->usable) {
        DeviceChoice c;
        c.cuda = true;
        c.index = chosen->index;
        c.label = describe(*chosen);
        c.notice = (spec.kind == DeviceKind::Auto ? "auto: using " : "using ") + c.label;
        return c;
    }
    const std::string asked = spec.kind == DeviceKind::Auto ? "auto" : toString(spec);
    std::string why;
    if (chosen != nullptr)
        why = describe(*chosen) + " is not usable: " + chosen->reason;
    else if (spec.kind == DeviceKind::Cuda && !report.devices.empty())
        why = "no " + toString(spec) + " (" + std::to_string(report.devices.size()) +
              " device(s) found)";
    else
        why = "no usable GPU (" + report.summary + ")";
    cpu.notice = asked + ": " + why + "; using the CPU";
    return cpu;
}

std::pair<std::unique_ptr<TensorOps>, std::string> tensorOpsFor(std::string_view device) {
    const DeviceSpec spec = parseDeviceSpec(device);
    if (spec.kind == DeviceKind::Cpu)
        return {std::make_unique<CpuOps>(), std::string()};
    const DeviceChoice choice = resolveDevice(spec);
    std::string notice = spec.kind == DeviceKind::Auto ? std::string() : choice.notice;
    if (choice.cuda)
        if (const ComputeBackend* cuda = findBackend("cuda")) {
            try {
                if (std::unique_ptr<TensorOps> ops = cuda->makeTensorOps(choice.index))
                    return {std::move(ops), std::string()};
            } catch (const std::exception& e) { // e.g. out of device memory
                notice = std::string(e.what()) + "; training on the CPU";
            }
        }
    // auto with no GPU is not worth a notice; an explicit request that fell back is.
    return {std::make_unique<CpuOps>(), notice};
}

} // namespace plab
