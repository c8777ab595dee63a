// ThreadPool: every task index runs once per parallelFor, all threads take part whether the
// workers are still spinning for work or asleep, and a pool is destroyed cleanly in both states.
#include <QTest>

#include "util/thread_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace plab;

class TestThreadPool : public QObject {
    Q_OBJECT
private slots:
    void everyTaskRunsOnce();
    void allThreadsTakePart_data();
    void allThreadsTakePart();
    void destroysWhileSpinningOrAsleep();
};

namespace {

// A meeting point for `parties` threads that gives up after a while (a missed wake-up would
// otherwise hang the test instead of failing it).
class Meeting {
public:
    explicit Meeting(unsigned parties) : m_parties(parties) {}
    bool arriveAndWait() {
        std::unique_lock lock(m_mutex);
        if (++m_arrived == m_parties)
            m_all.notify_all();
        return m_all.wait_for(lock, std::chrono::seconds(10),
                              [this] { return m_arrived >= m_parties; });
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_all;
    unsigned m_parties, m_arrived = 0;
};

} // namespace

void TestThreadPool::everyTaskRunsOnce() {
    // Many calls in quick succession (the workers never sleep in between) with task counts below,
    // at and above the thread count.
    for (unsigned threads : {1u, 2u, 4u}) {
        ThreadPool pool(threads);
        QCOMPARE(pool.threadCount(), threads);
        for (std::size_t round = 0; round < 2000; ++round) {
            const std::size_t tasks = 1 + round % 9;
            std::vector<std::atomic<int>> runs(tasks);
            pool.parallelFor(tasks, [&](std::size_t i) { runs[i].fetch_add(1); });
            for (std::size_t i = 0; i < tasks; ++i)
                QCOMPARE(runs[i].load(), 1);
        }
    }
}

void TestThreadPool::allThreadsTakePart_data() {
    QTest::addColumn<bool>("asleep");
    QTest::newRow("back to back (workers spinning)") << false;
    QTest::newRow("workers asleep") << true;
}

namespace {

// Until every worker has stopped spinning and sleeps (the state itself, not a pause that a
// loaded machine may not honour); false after 30 s.
bool waitUntilAsleep(ThreadPool& pool) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pool.sleepingWorkers() != pool.threadCount() - 1) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::yield();
    }
    return true;
}

} // namespace

void TestThreadPool::allThreadsTakePart() {
    // Each of 4 tasks waits until all 4 run at once: only possible if every worker took one.
    QFETCH(bool, asleep);
    constexpr unsigned kThreads = 4;
    ThreadPool pool(kThreads);
    for (int round = 0; round < 20; ++round) {
        if (asleep)
            QVERIFY(waitUntilAsleep(pool));
        Meeting meeting(kThreads);
        std::atomic<unsigned> met{0};
        pool.parallelFor(kThreads, [&](std::size_t) {
            if (meeting.arriveAndWait())
                met.fetch_add(1);
        });
        QCOMPARE(met.load(), kThreads);
    }
}

void TestThreadPool::destroysWhileSpinningOrAsleep() {
    for (bool asleep : {false, true}) {
        const auto start = std::chrono::steady_clock::now();
        {
            ThreadPool pool(3);
            std::atomic<int> runs{0};
            pool.parallelFor(3, [&](std::size_t) { runs.fetch_add(1); });
            QCOMPARE(runs.load(), 3);
            if (asleep)
                QVERIFY(waitUntilAsleep(pool));
        } // joins the workers
        QVERIFY(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    }
}

QTEST_APPLESS_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
