// The CUDA training engine: KernelOps (engine/kernel_ops.h) with a policy that runs each body as
// a grid on one stream. Tensors stay on the device for the whole step; what comes back is the
// scalars a step decides on (loss, finiteness, per-layer moments, amaxes) and, on statistics
// steps, the class counts and histograms, gathered in device slots during the step and copied
// back together on a side stream while the next step runs (sendStatistics).
#include "cuda/cuda_ops.h"

#include "cuda/cublas_library.h"
#include "cuda/quantize_kernel.h"
#include "engine/kernel_ops.h"

#include <cuda_runtime.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace plab {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kFullMask = 0xFFFFFFFFu;

// Throws on an error, clearing it first: a caught failure (say, out of memory while the engine is
// set up, after which the run falls back to the CPU) must not stay the thread's last error and
// be reported again by the next launch check. Sticky errors (a faulted context) stay whatever.
void check(cudaError_t e, int device, const char* what) {
    if (e != cudaSuccess) {
        cudaGetLastError();
        throw std::runtime_error("cuda:" + std::to_string(device) + ": " + what + " failed (" +
                                 cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")");
    }
}

template <class Body>
__global__ void __launch_bounds__(kThreads) eachKernel(std::size_t n, Body body) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        body(i);
}

__device__ void warpCombine(kernels::Reduction& r) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        r.sum += __shfl_down_sync(kFullMask, r.sum, offset);
        r.sumSq += __shfl_down_sync(kFullMask, r.sumSq, offset);
        const unsigned other = __shfl_down_sync(kFullMask, r.maxBits, offset);
        r.maxBits = r.maxBits > other ? r.maxBits : other;
    }
}

// A block's reduction of its threads' values: per warp (shuffles), then across the warps
// (shared memory), always in the same order. The result is valid in thread 0.
__device__ kernels::Reduction blockCombine(kernels::Reduction local) {
    __shared__ double sums[kThreads / 32], squares[kThreads / 32];
    __shared__ unsigned maxima[kThreads / 32];
    warpCombine(local);
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sums[warp] = local.sum;
        squares[warp] = local.sumSq;
        maxima[warp] = local.maxBits;
    }
    __syncthreads();
    kernels::Reduction block;
    if (warp == 0) {
        if (lane < blockDim.x / 32) {
            block.sum = sums[lane];
            block.sumSq = squares[lane];
            block.maxBits = maxima[lane];
        }
        warpCombine(block);
    }
    return block;
}

// Reductions in two fixed-order passes, so that a run replays bit for bit on the same GPU (an
// atomic merge of the blocks' doubles would sum in the order the blocks finish): each block
// writes its partial, then one block combines the partials.
template <class Body>
__global__ void __launch_bounds__(kThreads)
    reduceKernel(std::size_t n, Body body, kernels::Reduction* partials) {
    kernels::Reduction local;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        kernels::combine(local, body(i));
    const kernels::Reduction block = blockCombine(local);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = block;
}

__global__ void __launch_bounds__(kThreads)
    finishReduction(const kernels::Reduction* partials, unsigned count, kernels::Reduction* out) {
    kernels::Reduction local;
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x)
        kernels::combine(local, partials[i]);
    const kernels::Reduction total = blockCombine(local);
    if (threadIdx.x == 0)
        *out = total;
}

// Plain FP32 products with FP32 accumulation where cuBLAS is missing: 16x16 tiles through shared
// memory, any strides (the three products of a linear layer differ only in them). Explicit FMAs:
// the target is built with -fmad=false for the bit-exact element functions, not for this.
constexpr int kTile = 16;
__global__ void gemmKernel(GemmCall g) {
    __shared__ float as[kTile][kTile + 1], bs[kTile][kTile + 1];
    const int row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < g.k; t += kTile) {
        const int ka = t + threadIdx.x, kb = t + threadIdx.y;
        as[threadIdx.y][threadIdx.x] =
            row < g.m && ka < g.k ? g.a[row * g.am + static_cast<std::size_t>(ka) * g.ak] : 0.0f;
        bs[threadIdx.y][threadIdx.x] =
            kb < g.k && col < g.n ? g.b[static_cast<std::size_t>(kb) * g.bk + col * g.bn] : 0.0f;
        __syncthreads();
        for (int k = 0; k < kTile; ++k)
            sum = __fmaf_rn(as[threadIdx.y][k], bs[k][threadIdx.x], sum);
        __syncthreads();
    }
    if (row < g.m && col < g.n) {
        float* c = g.c + static_cast<std::size_t>(row) * g.n + col;
        *c = g.accumulate ? *c + sum : sum;
    }
}

class CudaPolicy {
public:
    explicit CudaPolicy(int device) : m_device(device) {
        check(cudaSetDevice(device), device, "cudaSetDevice");
        cudaDeviceProp p{};
        check(cudaGetDeviceProperties(&p, device), device, "cudaGetDeviceProperties");
        m_name = "cuda:" + std::to_string(device) + " (" + p.name + ")";
        m_multiprocessors = p.multiProcessorCount;
        check(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), device,
              "cudaStreamCreate");
        check(cudaStreamCreateWithFlags(&m_copyStream, cudaStreamNonBlocking), device,
              "cudaStreamCreate");
        check(cudaEventCreateWithFlags(&m_counted, cudaEventDisableTiming), device,
              "cudaEventCreate");
        check(cudaEventCreateWithFlags(&m_copied, cudaEventDisableTiming), device,
              "cudaEventCreate");
        m_reduction = static_cast<kernels::Reduction*>(allocate(sizeof(kernels::Reduction)));
        m_partials = static_cast<kernels::Reduction*>(
            allocate(static_cast<std::size_t>(maxBlocks()) * sizeof(kernels::Reduction)));
        m_cublas = cuda::CublasLibrary::instance();
        std::string noCublas = cuda::CublasLibrary::unavailableReason();
        if (m_cublas != nullptr)
            m_cublasHandle = m_cublas->createHandle(m_stream, &noCublas);
        // The reason stays in the name: a fallback to the own kernel is never silent.
        m_name += m_cublasHandle != nullptr ? ", cuBLAS" : ", own GEMM kernel (" + noCublas + ")";
        check(
            cudaMallocHost(reinterpret_cast<void**>(&m_reductionHost), sizeof(kernels::Reduction)),
            device, "cudaMallocHost");
    }
    ~CudaPolicy() {
        cudaSetDevice(m_device);
        cudaStreamSynchronize(m_stream);
        cudaStreamSynchronize(m_copyStream);
        if (m_cublasHandle != nullptr)
            m_cublas->destroyHandle(m_cublasHandle);
        for (void* p : m_allocations)
            cudaFree(p);
        cudaFreeHost(m_reductionHost);
        cudaFreeHost(m_countersHost);
        cudaEventDestroy(m_counted);
        cudaEventDestroy(m_copied);
        cudaStreamDestroy(m_copyStream);
        cudaStreamDestroy(m_stream);
    }
    CudaPolicy(const CudaPolicy&) = delete;
    CudaPolicy& operator=(const CudaPolicy&) = delete;

    std::string name() const { return m_name; }

    void* allocate(std::size_t bytes) {
        select();
        void* p = nullptr;
        check(cudaMalloc(&p, bytes + (bytes == 0)), m_device, "cudaMalloc");
        m_allocations.push_back(p);
        check(cudaMemsetAsync(p, 0, bytes, m_stream), m_device, "cudaMemset");
        return p;
    }
    void toDevice(void* dst, const void* host, std::size_t bytes) {
        select();
        // Pageable host memory: the call returns once the bytes are staged, so the caller may
        // reuse its buffer straight away.
        check(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, m_stream), m_device,
              "copy to the device");
    }
    void toHost(void* host, const void* src, std::size_t bytes) {
        select();
        check(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, m_stream), m_device,
              "copy from the device");
        check(cudaStreamSynchronize(m_stream), m_device, "the step's kernels");
    }
    void copyOnDevice(void* dst, const void* src, std::size_t bytes) {
        select();
        if (bytes != 0 && dst != src)
            check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, m_stream), m_device,
                  "device copy");
    }

    template <class Body>
    void forEach(std::size_t n, const Body& body) {
        if (n == 0)
            return;
        select();
        eachKernel<<<blocksFor(n), kThreads, 0, m_stream>>>(n, body);
        check(cudaGetLastError(), m_device, "kernel launch");
    }
    template <class Body>
    kernels::Reduction reduce(std::size_t n, const Body& body) {
        if (n == 0)
            return {};
        select();
        const unsigned blocks = blocksFor(n); // at most maxBlocks(): m_partials holds them all
        reduceKernel<<<blocks, kThreads, 0, m_stream>>>(n, body, m_partials);
        check(cudaGetLastError(), m_device, "kernel launch");
        finishReduction<<<1, kThreads, 0, m_stream>>>(m_partials, blocks, m_reduction);
        check(cudaGetLastError(), m_device, "kernel launch");
        check(cudaMemcpyAsync(m_reductionHost, m_reduction, sizeof(kernels::Reduction),
                              cudaMemcpyDeviceToHost, m_stream),
              m_device, "copy of a reduction");
        check(cudaStreamSynchronize(m_stream), m_device, "the step's kernels");
        return *m_reductionHost;
    }

    void gemm(const GemmCall& call) {
        if (call.m == 0 || call.n == 0)
            return;
        select();
        if (m_cublasHandle != nullptr) {
            const int status = m_cublas->sgemm(m_cublasHandle, call);
            if (status != 0)
                throw std::runtime_error("cuda:" + std::to_string(m_device) +
                                         ": cublasSgemm failed (status " + std::to_string(status) +
                                         ")");
            return;
        }
        const dim3 threads(kTile, kTile);
        const dim3 blocks(static_cast<unsigned>((call.n + kTile - 1) / kTile),
                          static_cast<unsigned>((call.m + kTile - 1) / kTile));
        gemmKernel<<<blocks, threads, 0, m_stream>>>(call);
        check(cudaGetLastError(), m_device, "kernel launch");
    }

    void quantize(const Quantizer& q, const float* in, float* out, std::size_t n, QuantStats* stats,
                  const QuantizeOptions& options) {
        if (n == 0)
            return;
        if (stats == nullptr && q.isIdentity()) { // FP32 itself: nothing to round
            copyOnDevice(out, in, n * sizeof(float));
            return;
        }
        select();
        cuda::QuantizeLaunch l;
        l.rule = makeElementRule(q.config());
        l.stochastic = q.config().rounding == Rounding::Stochastic;
        l.seed = options.seed;
        l.stream = options.stream;
        l.firstIndex = options.firstIndex;
        l.in = in;
        l.out = out;
        l.n = n;
        l.counters = stats != nullptr ? counterSlot(stats) : nullptr;
        l.cudaStream = m_stream;
        l.multiprocessors = m_multiprocessors;
        check(static_cast<cudaError_t>(cuda::launchQuantize(l)), m_device, "kernel launch");
    }

    // Ends the step's statistics: after an event marking its kernels, the side stream copies
    // the filled slots to pinned memory while the main stream goes on with the next step, whose
    // quantise calls fill the other bank.
    void sendStatistics() {
        Bank& bank = m_banks[m_filling];
        if (bank.pending.empty())
            return;
        receiveStatistics(true); // one batch in flight at a time
        select();
        check(cudaEventRecord(m_counted, m_stream), m_device, "cudaEventRecord");
        check(cudaStreamWaitEvent(m_copyStream, m_counted, 0), m_device, "cudaStreamWaitEvent");
        check(cudaMemcpyAsync(m_countersHost, bank.device,
                              bank.pending.size() * sizeof(cuda::DeviceCounters),
                              cudaMemcpyDeviceToHost, m_copyStream),
              m_device, "copy of the statistics");
        check(cudaEventRecord(m_copied, m_copyStream), m_device, "cudaEventRecord");
        m_inFlight = m_filling;
        m_filling = 1 - m_filling;
    }
    bool receiveStatistics(bool wait) {
        if (m_inFlight < 0)
            return true;
        select();
        if (wait) {
            check(cudaEventSynchronize(m_copied), m_device, "the statistics copy");
        } else {
            const cudaError_t e = cudaEventQuery(m_copied);
            if (e == cudaErrorNotReady) {
                cudaGetLastError(); // "not ready" is an answer, not an error for the next check
                return false;
            }
            check(e, m_device, "the statistics copy");
        }
        Bank& bank = m_banks[m_inFlight];
        merge(bank.pending);
        m_inFlight = -1;
        return true;
    }

private:
    void select() const { check(cudaSetDevice(m_device), m_device, "cudaSetDevice"); }
    // A grid of at most 16 blocks per multiprocessor (grid-stride loops do the rest): fixed for
    // a GPU, so a reduction's order of summation is too.
    unsigned maxBlocks() const { return static_cast<unsigned>(m_multiprocessors) * 16u; }
    unsigned blocksFor(std::size_t n) const {
        const std::size_t needed = (n + kThreads - 1) / kThreads;
        return static_cast<unsigned>(needed < maxBlocks() ? needed : maxBlocks());
    }
    // A zeroed device slot for one quantise call's statistics, merged into *stats later.
    cuda::DeviceCounters* counterSlot(QuantStats* stats) {
        if (m_countersHost == nullptr) {
            for (Bank& bank : m_banks)
                bank.device = static_cast<cuda::DeviceCounters*>(
                    allocate(kSlots * sizeof(cuda::DeviceCounters)));
            check(cudaMallocHost(reinterpret_cast<void**>(&m_countersHost),
                                 kSlots * sizeof(cuda::DeviceCounters)),
                  m_device, "cudaMallocHost");
        }
        Bank& bank = m_banks[m_filling];
        if (bank.pending.size() == kSlots) { // more quantise calls in one step than slots
            receiveStatistics(true);         // the host buffer is free, then land these now
            check(cudaMemcpyAsync(m_countersHost, bank.device,
                                  kSlots * sizeof(cuda::DeviceCounters), cudaMemcpyDeviceToHost,
                                  m_stream),
                  m_device, "copy of the statistics");
            check(cudaStreamSynchronize(m_stream), m_device, "the step's kernels");
            merge(bank.pending);
        }
        cuda::DeviceCounters* slot = bank.device + bank.pending.size();
        check(cudaMemsetAsync(slot, 0, sizeof *slot, m_stream), m_device, "cudaMemset");
        bank.pending.push_back(stats);
        return slot;
    }
    // The host copy of a bank's slots into their QuantStats; the bank is free again.
    void merge(std::vector<QuantStats*>& pending) {
        for (std::size_t i = 0; i < pending.size(); ++i)
            pending[i]->merge(cuda::toQuantStats(m_countersHost[i]));
        pending.clear();
    }

    int m_device;
    std::string m_name;
    int m_multiprocessors = 1;
    cudaStream_t m_stream = nullptr;
    std::vector<void*> m_allocations;
    kernels::Reduction* m_reduction = nullptr;
    kernels::Reduction* m_partials = nullptr; // one per block of a reduction's grid
    kernels::Reduction* m_reductionHost = nullptr;
    // Statistics: two banks of device slots (one filling, one possibly on its way back), one
    // pinned host buffer, a side stream for the copies and the events that order them.
    static constexpr std::size_t kSlots = 128;
    struct Bank {
        cuda::DeviceCounters* device = nullptr;
        std::vector<QuantStats*> pending; // the QuantStats each filled slot merges into
    };
    Bank m_banks[2];
    int m_filling = 0, m_inFlight = -1;
    cuda::DeviceCounters* m_countersHost = nullptr;
    cudaStream_t m_copyStream = nullptr;
    cudaEvent_t m_counted = nullptr, m_copied = nullptr;
    const cuda::CublasLibrary* m_cublas = nullptr;
    void* m_cublasHandle = nullptr; // null: the tiled kernel does the products
};

} // namespace

std::unique_ptr<TensorOps> makeCudaOps(int device) {
    return std::make_unique<KernelOps<CudaPolicy>>(device);
}

} // namespace plab
