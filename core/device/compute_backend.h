// Where work runs: the device a user asks for ("auto", "cpu", "cuda", "cuda:N"), the optional
// accelerator backends (core/cuda registers one when the build has nvcc), and what they report
// about the machine. The core never depends on CUDA: a backend is an object behind this
// interface, registered by the executable's main().
#pragma once

#include "numerics/quant_stats.h"
#include "numerics/quantizer.h"
#include "numerics/rounding.h"

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace plab {

class DeviceError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

enum class DeviceKind { Auto, Cpu, Cuda };

struct DeviceSpec {
    DeviceKind kind = DeviceKind::Auto;
    int index = 0; // cuda:N
};

// "auto", "cpu", "cuda" (= cuda:0) or "cuda:N"; throws DeviceError naming the text.
DeviceSpec parseDeviceSpec(std::string_view text);
std::string toString(const DeviceSpec& spec);

struct DeviceInfo {
    int index = 0;
    std::string name;
    int computeMajor = 0, computeMinor = 0;
    std::uint64_t memoryBytes = 0;
    bool usable = false;
    std::string reason; // why not usable; empty when usable
};

struct DeviceReport {
    std::string backend; // "cpu", "cuda"
    bool available = false;
    std::string summary; // one line: what is there, or why nothing is usable
    std::vector<DeviceInfo> devices;
};

// Seconds for `repeat` passes over a device-resident array, and for as many device-to-device
// copies of the same bytes in the same run (the bandwidth baseline).
struct DeviceTiming {
    double quantizeSeconds = 0.0;
    double copySeconds = 0.0;
    std::size_t elements = 0;
    int repeat = 0;
};

class TensorOps;

class ComputeBackend {
public:
    virtual ~ComputeBackend() = default;
    virtual std::string name() const = 0;
    virtual DeviceReport probe() const = 0;
    // Host arrays in and out (transfers included): bit-identical to Quantizer::quantize, with the
    // same statistics. Throws std::runtime_error naming the device on a device failure.
    virtual void quantize(int device, const QuantConfig& config, std::span<const float> in,
                          std::span<float> out, QuantStats* stats,
                          const QuantizeOptions& options) const = 0;
    // Times quantise (with or without statistics) on a device-resident copy of `sample`.
    virtual DeviceTiming timeQuantize(int device, const QuantConfig& config,
                                      std::span<const float> sample, int repeat,
                                      bool stats) const = 0;
    // The training engine's operations on that device; null when this backend has none or the
    // device cannot be used (the caller then trains on the CPU).
    virtual std::unique_ptr<TensorOps> makeTensorOps(int device) const;
};

// Called once by an executable's main() for each backend it was built with.
void registerBackend(std::unique_ptr<ComputeBackend> backend);
// Null when no backend of that name was registered (e.g. a build without nvcc).
const ComputeBackend* findBackend(std::string_view name);

// The CPU, then every known accelerator backend (registered or not: an unregistered "cuda" says
// the build has no CUDA backend).
std::vector<DeviceReport> deviceReports();

struct DeviceChoice {
    bool cuda = false;
    int index = 0;
    std::string label;  // "cpu" or "cuda:0 (NVIDIA H200)"
    std::string notice; // one line for the user: what auto chose, or why the CPU is used
};
// Resolves a request against the machine: auto takes the first usable GPU; an explicit cuda:N
// that is not usable falls back to the CPU with a notice saying why.
DeviceChoice resolveDevice(const DeviceSpec& spec);

// The engine a device choice ("auto", "cpu", "cuda:N") trains on: a GPU's TensorOps, or the
// CPU's, and a one-line notice when it is not the one asked for (an explicit GPU request that
// fell back to the CPU, and why; auto without a GPU says nothing). For the trainers and the
// engine-choosing tools alike.
std::pair<std::unique_ptr<TensorOps>, std::string> tensorOpsFor(std::string_view device);

} // namespace plab
