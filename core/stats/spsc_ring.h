// SpscRing: a bounded single-producer single-consumer queue. push() never blocks: when the ring
// is full the value is dropped and counted, so the trainer never waits for a slow reader.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace plab {

template <typename T>
class SpscRing {
public:
    explicit SpscRing(std::size_t capacity) : m_slots(capacity + 1) {}

    bool push(const T& value) {
        const std::size_t head = m_head.load(std::memory_order_relaxed);
        const std::size_t next = (head + 1) % m_slots.size();
        if (next == m_tail.load(std::memory_order_acquire)) {
            m_dropped.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        m_slots[head] = value;
        m_head.store(next, std::memory_order_release);
        return true;
    }

    std::optional<T> pop() {
        const std::size_t tail = m_tail.load(std::memory_order_relaxed);
        if (tail == m_head.load(std::memory_order_acquire))
            return std::nullopt;
        T value = m_slots[tail];
        m_tail.store((tail + 1) % m_slots.size(), std::memory_order_release);
        return value;
    }

    std::uint64_t dropped() const { return m_dropped.load(std::memory_order_relaxed); }

private:
    std::vector<T> m_slots;
    std::atomic<std::size_t> m_head{0}, m_tail{0};
    std::atomic<std::uint64_t> m_dropped{0};
};

} // namespace plab
