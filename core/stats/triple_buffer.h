// TripleBuffer: one writer publishes whole values, one reader takes the newest, and neither
// ever waits for the other. The writer fills its back buffer and swaps it with the middle one in
// a single atomic exchange; the reader swaps the middle one with its front buffer when it is new.
#pragma once

#include <atomic>

namespace plab {

template <typename T>
class TripleBuffer {
public:
    // The writer's buffer to fill before publish().
    T& back() { return m_buffers[m_back]; }
    void publish() {
        const int previous = m_middle.exchange(m_back | kFresh, std::memory_order_acq_rel);
        m_back = previous & kIndex;
    }
    // Reader: true and the newest value in front() if something was published since last time.
    bool take() {
        if ((m_middle.load(std::memory_order_relaxed) & kFresh) == 0)
            return false;
        const int previous = m_middle.exchange(m_front, std::memory_order_acq_rel);
        m_front = previous & kIndex;
        return true;
    }
    const T& front() const { return m_buffers[m_front]; }

private:
    static constexpr int kIndex = 3, kFresh = 4;
    T m_buffers[3];
    int m_back = 0;
    std::atomic<int> m_middle{1};
    int m_front = 2;
};

} // namespace plab
