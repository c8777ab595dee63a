// ThreadPool: workers claim task indices under one mutex (tasks here are coarse, thousands of
// elements or more, so the lock is never the bottleneck); between calls they spin briefly for the
// next one, then sleep on a condition variable.
#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace plab {
namespace {

// A thread that runs out of work spins this long for more before it sleeps: a training step
// calls parallelFor many times in quick succession, and each sleep costs a system call on both
// sides and a wake-up that can take longer than the task (on a VM, tens of microseconds).
constexpr auto kSpin = std::chrono::microseconds(50);

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
}

// Spins until done() or kSpin has passed; returns done().
template <class Done>
bool spinUntil(const Done& done) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (done())
                return true;
            pause();
        }
        if (std::chrono::steady_clock::now() >= until)
            return done();
    }
}

} // namespace

ThreadPool::ThreadPool(unsigned threads) {
    if (threads == 0)
        threads = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < threads; ++i)
        m_workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    m_workers.clear(); // joins
}

void ThreadPool::parallelFor(std::size_t tasks, const std::function<void(std::size_t)>& task) {
    if (tasks == 0)
        return;
    if (m_workers.empty() || tasks == 1) {
        for (std::size_t i = 0; i < tasks; ++i)
            task(i);
        return;
    }
    bool sleeping;
    {
        std::lock_guard lock(m_mutex);
        m_task = &task;
        m_taskCount = tasks;
        m_nextTask = 0;
        m_finishedTasks.store(0, std::memory_order_relaxed);
        m_generation.fetch_add(1, std::memory_order_release);
        sleeping = m_sleeping != 0;
    }
    if (sleeping) // the spinning ones see the generation change by themselves
        m_wake.notify_all();
    runTasks();
    spinUntil([&] { return m_finishedTasks.load(std::memory_order_acquire) == tasks; });
    std::unique_lock lock(m_mutex);
    m_done.wait(lock, [this] { return m_finishedTasks == m_taskCount; });
    m_task = nullptr;
}

void ThreadPool::runTasks() {
    for (;;) {
        std::size_t index;
        const std::function<void(std::size_t)>* task;
        {
            std::lock_guard lock(m_mutex);
            if (m_task == nullptr || m_nextTask >= m_taskCount)
                return;
            index = m_nextTask++;
            task = m_task;
        }
        (*task)(index);
        bool last;
        {
            std::lock_guard lock(m_mutex);
            last = m_finishedTasks.fetch_add(1, std::memory_order_release) + 1 == m_taskCount;
        }
        if (last)
            m_done.notify_all();
    }
}

unsigned ThreadPool::sleepingWorkers() {
    std::lock_guard lock(m_mutex); // a worker counts itself and waits under it
    return m_sleeping;
}

void ThreadPool::workerLoop() {
    std::size_t seenGeneration = 0;
    for (;;) {
        spinUntil([&] { return m_generation.load(std::memory_order_acquire) != seenGeneration; });
        {
            std::unique_lock lock(m_mutex);
            ++m_sleeping;
            m_wake.wait(lock, [&] {
                return m_stopping || m_generation.load(std::memory_order_relaxed) != seenGeneration;
            });
            --m_sleeping;
            if (m_stopping)
                return;
            seenGeneration = m_generation.load(std::memory_order_relaxed);
        }
        runTasks();
    }
}

} // namespace plab
