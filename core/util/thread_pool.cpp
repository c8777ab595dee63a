// ThreadPool: workers sleep on a condition variable and claim task indices under one mutex;
// tasks here are coarse (thousands of elements or more), so the lock is never the bottleneck.
#include "util/thread_pool.h"

#include <algorithm>

namespace plab {

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
    {
        std::lock_guard lock(m_mutex);
        m_task = &task;
        m_taskCount = tasks;
        m_nextTask = 0;
        m_finishedTasks = 0;
        ++m_generation;
    }
    m_wake.notify_all();
    runTasks();
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
            last = ++m_finishedTasks == m_taskCount;
        }
        if (last)
            m_done.notify_all();
    }
}

void ThreadPool::workerLoop() {
    std::size_t seenGeneration = 0;
    for (;;) {
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [&] { return m_stopping || m_generation != seenGeneration; });
            if (m_stopping)
                return;
            seenGeneration = m_generation;
        }
        runTasks();
    }
}

} // namespace plab
