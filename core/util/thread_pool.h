// A small persistent pool of worker threads for data-parallel loops. Work is split into a fixed
// number of contiguous chunks decided by the caller, so results never depend on scheduling.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace plab {

// The most threads any command, config or Python call takes (train's `threads`, bench's
// --threads, quantize's threads=).
inline constexpr unsigned kMaxThreads = 256;

class ThreadPool {
public:
    // threads == 0 means std::thread::hardware_concurrency(). The calling thread takes part in
    // every parallelFor, so a pool of T threads starts T - 1 workers.
    explicit ThreadPool(unsigned threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    unsigned threadCount() const { return static_cast<unsigned>(m_workers.size()) + 1; }

    // Calls task(i) for i in [0, tasks), spread over the threads; returns when all are done.
    // Not reentrant: a task must not call parallelFor on the same pool.
    void parallelFor(std::size_t tasks, const std::function<void(std::size_t)>& task);

    // Workers asleep between calls (done spinning): a state tests wait on instead of a sleep.
    unsigned sleepingWorkers();

private:
    void workerLoop();
    void runTasks();

    std::vector<std::jthread> m_workers;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_done;
    const std::function<void(std::size_t)>* m_task = nullptr;
    std::size_t m_taskCount = 0;
    std::size_t m_nextTask = 0;
    // Written under m_mutex; read without it by the threads spinning for a change.
    std::atomic<std::size_t> m_finishedTasks{0};
    std::atomic<std::size_t> m_generation{0};
    unsigned m_sleeping = 0; // workers waiting on m_wake
    bool m_stopping = false;
};

} // namespace plab
