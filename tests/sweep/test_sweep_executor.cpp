// SweepExecutor's bookkeeping with a scripted launcher: a run refused because another process
// took its folder is that process's (never marked failed); a run that failed is.
#include <QTemporaryDir>
#include <QTest>

#include "record/record_file.h"
#include "sweep/sweep_executor.h"

#include <filesystem>
#include <string>
#include <vector>

using namespace plab;

class TestSweepExecutor : public QObject {
    Q_OBJECT
private slots:
    void aFolderTakenByAnotherSweepIsNotMarkedFailed();
};

namespace {

// Ends every run at once with the outcome and reason given for it.
class ScriptedLauncher : public RunLauncher {
public:
    explicit ScriptedLauncher(std::vector<RunEnd> ends) : m_ends(std::move(ends)) {}
    void start(std::size_t index, const SweepRun&) override { m_started.push_back(index); }
    std::vector<RunEnd> collectEnded(std::chrono::milliseconds) override {
        std::vector<RunEnd> out;
        for (std::size_t i : m_started) {
            RunEnd end = m_ends.at(i);
            end.run = i;
            out.push_back(end);
        }
        m_started.clear();
        return out;
    }
    void stopAll(const StopRequest&) override {}
    std::size_t going() const override { return m_started.size(); }

private:
    std::vector<RunEnd> m_ends;
    std::vector<std::size_t> m_started;
};

} // namespace

// Two sweeps into one folder: the second's child found seed-1's folder locked by the first
// (issue 65 item 12: it wrote seed-1.failed beside the first's finished summary, and the table
// dropped the run). A failure of its own (seed-2) is marked.
void TestSweepExecutor::aFolderTakenByAnotherSweepIsNotMarkedFailed() {
    QTemporaryDir dir;
    std::vector<SweepRun> runs(2);
    for (int i = 0; i < 2; ++i) {
        runs[i].seed = i + 1;
        runs[i].dir = dir.path().toStdString() + "/fp32/seed-" + std::to_string(i + 1);
    }
    const std::string locked = runs[0].dir + ": " + kRunDirectoryLockedMessage + " (process 42)";
    ScriptedLauncher launcher({{0, RunEnd::Outcome::Failed, "exit 2: precision-lab-cli: " + locked},
                               {1, RunEnd::Outcome::Failed, "exit 1: out of memory"}});
    SweepExecutor executor(runs, {1, true, false});
    const SweepTally tally = executor.execute(launcher);
    QCOMPARE(tally.started, 2);
    QCOMPARE(tally.runningElsewhere, 1);
    QCOMPARE(tally.failed, 1);
    QVERIFY(!std::filesystem::exists(failedMarker(runs[0].dir)));
    QVERIFY(std::filesystem::exists(failedMarker(runs[1].dir)));
}

QTEST_MAIN(TestSweepExecutor)
#include "test_sweep_executor.moc"
