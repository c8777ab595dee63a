// Helpers the session tests share: waiting for a worker, stepping a session to a step, reading a
// run's files and one column of its CSV exports.
#pragma once

#include <QTest>

#include "train/training_session.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace plab::testing {

// Polls pred every 5 ms for up to 20 s.
template <typename Pred>
bool waitFor(Pred pred) {
    for (int i = 0; i < 4000; ++i) {
        if (pred())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

inline std::string readAll(const std::string& path) {
    std::ifstream f(path);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

// One column of a CSV export, row by row (the header skipped).
inline std::vector<std::string> column(const std::string& csv, int index) {
    std::vector<std::string> values;
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line); // header
    while (std::getline(in, line)) {
        std::istringstream row(line);
        std::string cell;
        for (int i = 0; i <= index; ++i)
            std::getline(row, cell, ',');
        values.push_back(cell);
    }
    return values;
}

// Steps the session one step at a time until its snapshot shows `step`.
inline void stepTo(TrainingSession& session, std::int64_t step) {
    while (!session.latestSnapshot() || session.latestSnapshot()->scalars.step < step) {
        const std::int64_t before =
            session.latestSnapshot() ? session.latestSnapshot()->scalars.step : 0;
        session.stepOnce();
        QVERIFY(waitFor([&] {
            return session.latestSnapshot() && session.latestSnapshot()->scalars.step > before;
        }));
    }
}

} // namespace plab::testing
