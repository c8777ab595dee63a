#include "sweep/sweep_progress.h"

#include <algorithm>
#include <utility>

namespace plab {

SweepProgress::SweepProgress(std::size_t runs) : m_runs(runs) {}

SweepExecutor::Hooks SweepProgress::hooks(std::function<std::optional<StopRequest>()> stop,
                                          Observers observers) {
    SweepExecutor::Hooks hooks;
    hooks.started = [this, seen = std::move(observers.started)](std::size_t run) {
        {
            std::lock_guard lock(m_mutex);
            m_runs.at(run).phase = Run::Phase::Going;
        }
        if (seen)
            seen(run);
    };
    hooks.ended = [this, seen = std::move(observers.ended)](const RunEnd& end) {
        {
            std::lock_guard lock(m_mutex);
            Run& r = m_runs.at(end.run);
            r.phase = Run::Phase::Ended;
            r.end = end;
        }
        if (seen)
            seen(end);
    };
    hooks.tick = std::move(observers.tick);
    hooks.stop = std::move(stop);
    return hooks;
}

void SweepProgress::noteStep(std::size_t run, double step) {
    std::lock_guard lock(m_mutex);
    m_runs.at(run).step = step;
}

std::vector<SweepProgress::Run> SweepProgress::runs() const {
    std::lock_guard lock(m_mutex);
    return m_runs;
}

int SweepProgress::ended(RunEnd::Outcome outcome) const {
    std::lock_guard lock(m_mutex);
    return static_cast<int>(std::count_if(m_runs.begin(), m_runs.end(), [&](const Run& r) {
        return r.end && r.end->outcome == outcome;
    }));
}

} // namespace plab
