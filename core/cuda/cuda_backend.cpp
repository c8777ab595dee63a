// CudaBackend: probes devices through the static CUDA runtime (so a binary starts on machines
// without a driver, where the runtime answers "insufficient driver" or "no device"), and runs the
// quantise kernel with transfers for tools and tests.
#include "cuda/cuda_backend.h"

#include "cuda/cuda_ops.h"
#include "cuda/quantize_kernel.h"
#include "numerics/reference_quantize.h"

#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace plab {
namespace {

constexpr int kMinComputeMajor = 7, kMinComputeMinor = 5; // the oldest architecture built for

std::string errorText(cudaError_t e) {
    return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

void check(cudaError_t e, int device, const char* what) {
    if (e != cudaSuccess)
        throw std::runtime_error("cuda:" + std::to_string(device) + ": " + what + " failed (" +
                                 errorText(e) + ")");
}

// Device memory freed on scope exit, so a throwing check() leaks nothing.
template <typename T>
struct DeviceBuffer {
    T* ptr = nullptr;
    DeviceBuffer(std::size_t count, int device) {
        check(cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(T) + (count == 0)), device,
              "cudaMalloc");
    }
    ~DeviceBuffer() { cudaFree(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// What one quantise call needs on the device: the input uploaded, an output, zeroed counters.
struct DeviceWork {
    DeviceBuffer<float> in, out;
    DeviceBuffer<cuda::DeviceCounters> counters;
    DeviceWork(int device, std::span<const float> host)
        : in(select(device, host.size()), device), out(host.size(), device), counters(1, device) {
        check(cudaMemcpy(in.ptr, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
              device, "copy to the device");
        check(cudaMemset(counters.ptr, 0, sizeof(cuda::DeviceCounters)), device, "cudaMemset");
    }
    // Makes `device` current before the first allocation; passes the count through.
    static std::size_t select(int device, std::size_t count) {
        check(cudaSetDevice(device), device, "cudaSetDevice");
        return count;
    }
};

int multiprocessors(int device) {
    int sms = 1;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return sms;
}

cuda::QuantizeLaunch makeLaunch(const QuantConfig& config, const float* in, float* out,
                                std::size_t n, cuda::DeviceCounters* counters, int device) {
    cuda::QuantizeLaunch l;
    l.rule = makeElementRule(config);
    l.stochastic = config.rounding == Rounding::Stochastic;
    l.in = in;
    l.out = out;
    l.n = n;
    l.counters = counters;
    l.multiprocessors = multiprocessors(device);
    return l;
}

class CudaBackend final : public ComputeBackend {
public:
    std::string name() const override { return "cuda"; }

    DeviceReport probe() const override {
        DeviceReport r;
        r.backend = "cuda";
        int count = 0;
        const cudaError_t e = cudaGetDeviceCount(&count);
        int runtime = 0, driver = 0;
        cudaRuntimeGetVersion(&runtime);
        cudaDriverGetVersion(&driver);
        const std::string versions =
            "runtime " + version(runtime) + (driver > 0 ? ", driver " + version(driver) : "");
        if (e == cudaErrorInsufficientDriver) {
            r.summary = driver == 0
                            ? "no NVIDIA driver found (" + versions + ")"
                            : "the NVIDIA driver is too old for this build (" + versions + ")";
            return r;
        }
        if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
            r.summary = "no CUDA device (" + versions + ")";
            return r;
        }
        if (e != cudaSuccess) {
            r.summary = "CUDA unavailable: " + errorText(e) + " (" + versions + ")";
            return r;
        }
        for (int d = 0; d < count; ++d) {
            cudaDeviceProp p{};
            DeviceInfo info;
            info.index = d;
            if (const cudaError_t pe = cudaGetDeviceProperties(&p, d); pe != cudaSuccess) {
                info.name = "?";
                info.reason = errorText(pe);
                r.devices.push_back(info);
                continue;
            }
            info.name = p.name;
            info.computeMajor = p.major;
            info.computeMinor = p.minor;
            info.memoryBytes = p.totalGlobalMem;
            const bool newEnough = p.major > kMinComputeMajor ||
                                   (p.major == kMinComputeMajor && p.minor >= kMinComputeMinor);
            info.usable = newEnough;
            if (!newEnough)
                info.reason = "compute capability " + std::to_string(p.major) + "." +
                              std::to_string(p.minor) + " is older than 7.5, the oldest this " +
                              "build has code for";
            r.available = r.available || info.usable;
            r.devices.push_back(info);
        }
        r.summary = std::to_string(count) + " device(s), " + versions;
        return r;
    }

    void quantize(int device, const QuantConfig& config, std::span<const float> in,
                  std::span<float> out, QuantStats* stats,
                  const QuantizeOptions& options) const override {
        if (in.size() != out.size())
            throw std::invalid_argument("quantize: input and output sizes differ");
        const std::size_t n = in.size();
        const DeviceWork work(device, in);
        cuda::QuantizeLaunch l = makeLaunch(config, work.in.ptr, work.out.ptr, n,
                                            stats != nullptr ? work.counters.ptr : nullptr, device);
        l.seed = options.seed;
        l.stream = options.stream;
        l.firstIndex = options.firstIndex;
        check(static_cast<cudaError_t>(cuda::launchQuantize(l)), device, "kernel launch");
        check(cudaMemcpy(out.data(), work.out.ptr, n * sizeof(float), cudaMemcpyDeviceToHost),
              device, "copy from the device");
        if (stats != nullptr) {
            cuda::DeviceCounters host{};
            check(cudaMemcpy(&host, work.counters.ptr, sizeof host, cudaMemcpyDeviceToHost), device,
                  "copy of the statistics");
            stats->merge(cuda::toQuantStats(host));
        }
    }

    DeviceTiming timeQuantize(int device, const QuantConfig& config, std::span<const float> sample,
                              int repeat, bool stats) const override {
        const std::size_t n = sample.size();
        const DeviceWork work(device, sample);
        const cuda::QuantizeLaunch l = makeLaunch(config, work.in.ptr, work.out.ptr, n,
                                                  stats ? work.counters.ptr : nullptr, device);
        cudaEvent_t start, mid, end;
        check(cudaEventCreate(&start), device, "cudaEventCreate");
        check(cudaEventCreate(&mid), device, "cudaEventCreate");
        check(cudaEventCreate(&end), device, "cudaEventCreate");
        // Warm-up of both, then the timed passes, in one stream.
        check(static_cast<cudaError_t>(cuda::launchQuantize(l)), device, "kernel launch");
        check(
            cudaMemcpyAsync(work.out.ptr, work.in.ptr, n * sizeof(float), cudaMemcpyDeviceToDevice),
            device, "device copy");
        cudaEventRecord(start);
        for (int r = 0; r < repeat; ++r)
            check(static_cast<cudaError_t>(cuda::launchQuantize(l)), device, "kernel launch");
        cudaEventRecord(mid);
        for (int r = 0; r < repeat; ++r)
            check(cudaMemcpyAsync(work.out.ptr, work.in.ptr, n * sizeof(float),
                                  cudaMemcpyDeviceToDevice),
                  device, "device copy");
        cudaEventRecord(end);
        check(cudaEventSynchronize(end), device, "the timed passes");
        float quantizeMs = 0.0f, copyMs = 0.0f;
        cudaEventElapsedTime(&quantizeMs, start, mid);
        cudaEventElapsedTime(&copyMs, mid, end);
        cudaEventDestroy(start);
        cudaEventDestroy(mid);
        cudaEventDestroy(end);
        DeviceTiming t;
        t.quantizeSeconds = quantizeMs / 1e3;
        t.copySeconds = copyMs / 1e3;
        t.elements = n;
        t.repeat = repeat;
        return t;
    }

    std::unique_ptr<TensorOps> makeTensorOps(int device) const override {
        return makeCudaOps(device);
    }

private:
    static std::string version(int v) {
        return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    }
};

} // namespace

std::unique_ptr<ComputeBackend> makeCudaBackend() {
    return std::make_unique<CudaBackend>();
}

void registerCudaBackend() {
    if (findBackend("cuda") == nullptr)
        registerBackend(makeCudaBackend());
}

} // namespace plab
