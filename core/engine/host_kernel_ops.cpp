// HostPolicy: KernelOps' execution policy as plain loops over host memory.
#include "engine/host_kernel_ops.h"

#include "engine/kernel_ops.h"

#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <vector>

namespace plab {
namespace {

class HostPolicy {
public:
    HostPolicy(HostStatistics statistics, std::size_t memoryBytes)
        : m_late(statistics == HostStatistics::Late), m_memoryLeft(memoryBytes) {}

    std::string name() const { return "host emulation of the GPU kernels"; }

    void* allocate(std::size_t bytes) {
        // 8-byte aligned (enough for every tensor type here) and zeroed, like cudaMalloc +
        // cudaMemset. Words, not max_align_t: value-initialising that leaves its long double's
        // padding bytes undefined.
        if (bytes > m_memoryLeft)
            throw std::runtime_error("host emulation of the GPU kernels: cudaMalloc failed "
                                     "(cudaErrorMemoryAllocation: out of memory)");
        m_memoryLeft -= bytes;
        m_blocks.emplace_back(bytes / sizeof(std::uint64_t) + 1, 0);
        return m_blocks.back().data();
    }
    void toDevice(void* dst, const void* host, std::size_t bytes) { std::memcpy(dst, host, bytes); }
    void toHost(void* host, const void* src, std::size_t bytes) { std::memcpy(host, src, bytes); }
    void copyOnDevice(void* dst, const void* src, std::size_t bytes) {
        std::memmove(dst, src, bytes);
    }

    template <class Body>
    void forEach(std::size_t n, const Body& body) {
        for (std::size_t i = 0; i < n; ++i)
            body(i);
    }
    template <class Body>
    kernels::Reduction reduce(std::size_t n, const Body& body) {
        kernels::Reduction total;
        for (std::size_t i = 0; i < n; ++i)
            kernels::combine(total, body(i));
        return total;
    }

    void gemm(const GemmCall& g) {
        using Strided = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
        using ConstStridedMap = Eigen::Map<const RowMatrix, 0, Strided>;
        const ConstStridedMap a(
            g.a, g.m, g.k,
            Strided(static_cast<Eigen::Index>(g.am), static_cast<Eigen::Index>(g.ak)));
        const ConstStridedMap b(
            g.b, g.k, g.n,
            Strided(static_cast<Eigen::Index>(g.bk), static_cast<Eigen::Index>(g.bn)));
        MatrixMap c(g.c, g.m, g.n);
        if (g.accumulate)
            c.noalias() += a * b;
        else
            c.noalias() = a * b;
    }

    void quantize(const Quantizer& q, const float* in, float* out, std::size_t n, QuantStats* stats,
                  const QuantizeOptions& options) {
        // The CPU quantiser is bit-identical to the CUDA kernel (both run quantizeElement with
        // the same Philox words; tests/gpu holds them together on a device).
        if (!m_late || stats == nullptr) {
            q.quantize({in, n}, {out, n}, stats, options);
            return;
        }
        Late& counted = m_banks[m_filling].emplace_back();
        counted.target = stats;
        q.quantize({in, n}, {out, n}, &counted.counts, options);
    }
    // As the CUDA policy: two banks, one batch in flight, not there at the first poll.
    void sendStatistics() {
        if (!m_late || m_banks[m_filling].empty())
            return;
        receiveStatistics(true);
        m_inFlight = m_filling;
        m_filling = 1 - m_filling;
        m_polled = false;
    }
    bool receiveStatistics(bool wait) {
        if (m_inFlight < 0)
            return true;
        if (!wait && !m_polled) {
            m_polled = true;
            return false;
        }
        for (Late& l : m_banks[m_inFlight])
            l.target->merge(l.counts);
        m_banks[m_inFlight].clear();
        m_inFlight = -1;
        return true;
    }

private:
    struct Late {
        QuantStats counts;
        QuantStats* target = nullptr;
    };
    bool m_late;
    std::deque<Late> m_banks[2]; // deque: a reference to the newest stays valid
    int m_filling = 0, m_inFlight = -1;
    bool m_polled = false;
    std::size_t m_memoryLeft;
    std::vector<std::vector<std::uint64_t>> m_blocks;
};

} // namespace

std::unique_ptr<TensorOps> makeHostKernelOps(HostStatistics statistics, std::size_t memoryBytes) {
    return std::make_unique<KernelOps<HostPolicy>>(statistics, memoryBytes);
}

} // namespace plab
