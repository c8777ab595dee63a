// The steering channel of an emulated run (record/run_commands.h, EmulatedRun::steer): commands
// appended by two senders at once come out whole and numbered once each; the reader takes whole
// lines only; a run that takes no commands is refused with its reason; a pause holds until a step
// or a resume.
#include <QTemporaryDir>
#include <QTest>

#include "record/record_error.h"
#include "train/run_config_builder.h"
#include "torch_runs/emulated_run.h"
#include "record/run_commands.h"
#include "torch_runs/watch_recorder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

using namespace plab;

class TestRunCommands : public QObject {
    Q_OBJECT
private slots:
    void twoSendersAreSerialised();
    void theReaderTakesWholeLinesOnly();
    void runsThatTakeNoCommandsAreRefused();
    void pauseHoldsUntilAStepOrResume();
    void aPlantedLinkOrFifoIsNotTheInbox();
};

namespace {

EmulationSettings settings() {
    EmulationSettings s;
    RunConfigParts parts;
    parts.preset = "fp16-amp";
    s.config = configFromJson(buildRunConfigJson(parts));
    s.stageNames = {"fc1", "head"};
    s.description = {{"train_config", s.config.toJson()}};
    return s;
}

} // namespace

void TestRunCommands::twoSendersAreSerialised() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    EmulatedRun run(dir, settings()); // live: takes commands
    constexpr int kEach = 200;
    std::vector<std::int64_t> numbers[2];
    std::thread senders[2];
    for (int t = 0; t < 2; ++t)
        senders[t] = std::thread([&, t] {
            for (int i = 0; i < kEach; ++i)
                numbers[t].push_back(
                    sendRunCommand(dir, {{"set", {{"scaling", {{"scale", 1.0 + t * 1000 + i}}}}},
                                         {"from", "sender " + std::to_string(t)}}));
        });
    for (std::thread& s : senders)
        s.join();
    std::set<std::int64_t> all(numbers[0].begin(), numbers[0].end());
    all.insert(numbers[1].begin(), numbers[1].end());
    QCOMPARE(all.size(), std::size_t{2 * kEach}); // each number given once
    QCOMPARE(*all.begin(), std::int64_t{1});
    QCOMPARE(*all.rbegin(), std::int64_t{2 * kEach});
    CommandInbox inbox(dir);
    const std::vector<RunCommand> read = inbox.poll();
    QCOMPARE(read.size(), std::size_t{2 * kEach});
    for (const RunCommand& c : read) { // whole lines, each a sender's own, in the file's order
        QVERIFY2(c.error.empty(), c.error.c_str());
        const double scale = c.body["set"]["scaling"]["scale"].get<double>();
        const int t = scale >= 1000.0 ? 1 : 0;
        QCOMPARE(c.body["from"].get<std::string>(), "sender " + std::to_string(t));
        const auto at = static_cast<std::size_t>(scale - 1.0 - t * 1000);
        QCOMPARE(numbers[t][at], c.number);
    }
    QVERIFY(inbox.poll().empty()); // nothing new
    run.close("completed", true);
}

void TestRunCommands::theReaderTakesWholeLinesOnly() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString();
    CommandInbox inbox(dir);
    QVERIFY(inbox.poll().empty()); // no file yet
    std::ofstream file(dir + "/" + kCommandsFile, std::ios::binary);
    file << "{\"action\": \"pause\"}\n{\"action\": \"re" << std::flush;
    std::vector<RunCommand> read = inbox.poll();
    QCOMPARE(read.size(), std::size_t{1});
    QCOMPARE(read[0].number, std::int64_t{1});
    QCOMPARE(read[0].body["action"].get<std::string>(), std::string("pause"));
    QVERIFY(inbox.poll().empty()); // the half line waits
    file << "sume\"}\n[1, 2]\nnot json\n" << std::flush;
    read = inbox.poll();
    QCOMPARE(read.size(), std::size_t{3});
    QCOMPARE(read[0].body["action"].get<std::string>(), std::string("resume"));
    QCOMPARE(read[0].number, std::int64_t{2});
    QCOMPARE(read[1].error, std::string("not a JSON object"));
    QCOMPARE(read[2].error, std::string("not JSON"));
    QCOMPARE(read[2].number, std::int64_t{4});
}

void TestRunCommands::runsThatTakeNoCommandsAreRefused() {
    QTemporaryDir tmp;
    const std::string watched = tmp.path().toStdString() + "/watched";
    {
        WatchSettings w;
        w.formats = {"fp16"};
        w.stageNames = {"fc1"};
        WatchRecorder recorder(watched, w);
        QVERIFY(whyNotSteerable(watched).find("is a watched run") != std::string::npos);
        QVERIFY_THROWS_EXCEPTION(RecordError, sendRunCommand(watched, {{"action", "pause"}}));
        recorder.close();
    }
    const std::string ended = tmp.path().toStdString() + "/ended";
    {
        EmulatedRun run(ended, settings());
        QCOMPARE(whyNotSteerable(ended), std::string());
        run.close("completed", true);
    }
    QVERIFY(whyNotSteerable(ended).find("has ended") != std::string::npos);
    try {
        sendRunCommand(ended, {{"action", "pause"}});
        QFAIL("an ended run took a command");
    } catch (const RecordError& e) {
        QVERIFY(std::string(e.what()).rfind(ended + " has ended", 0) == 0);
    }
    QVERIFY_THROWS_EXCEPTION(RecordError, whyNotSteerable(tmp.path().toStdString() + "/none"));
}

void TestRunCommands::pauseHoldsUntilAStepOrResume() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    EmulatedRun run(dir, settings());
    const auto boundary = [&] {
        run.endStep(1.0, 0.1, 65536.0, false);
        return run.steer();
    };
    boundary();
    QVERIFY(!run.holding());
    sendRunCommand(dir, {{"action", "pause"}});
    QCOMPARE(boundary().size(), std::size_t{1});
    QVERIFY(run.holding() && run.paused());
    QVERIFY(run.steer().empty());
    QVERIFY(run.holding()); // a program that looks again is still held
    sendRunCommand(dir, {{"action", "step"}});
    run.steer();
    QVERIFY(!run.holding() && run.paused()); // one step through
    boundary();
    QVERIFY(run.holding()); // and held again at the next boundary
    sendRunCommand(dir, {{"action", "step"}});
    sendRunCommand(dir, {{"action", "step"}});
    run.steer();
    QVERIFY(!run.holding());
    boundary();
    QVERIFY(!run.holding()); // the second step
    boundary();
    QVERIFY(run.holding());
    sendRunCommand(dir, {{"action", "resume"}});
    run.steer();
    QVERIFY(!run.holding() && !run.paused());
    boundary();
    QVERIFY(!run.holding());
    run.close("completed", true);
}

QTEST_GUILESS_MAIN(TestRunCommands)
// steer follows no link planted at RUN/commands.jsonl and waits on no FIFO there (issue 65 item 2:
// a link to /dev/zero held steer and its lock forever; a link elsewhere was appended to).
void TestRunCommands::aPlantedLinkOrFifoIsNotTheInbox() {
    QTemporaryDir tmp;
    const std::string dir = tmp.path().toStdString() + "/run";
    EmulatedRun run(dir, settings());
    const std::string inbox = dir + "/" + kCommandsFile;
    const std::string victim = tmp.path().toStdString() + "/victim";
    std::ofstream(victim) << "keep\n";
    for (const std::string& target : {std::string("/dev/zero"), victim}) {
        std::filesystem::remove(inbox);
        QVERIFY(::symlink(target.c_str(), inbox.c_str()) == 0);
        try {
            sendRunCommand(dir, {{"action", "pause"}});
            QFAIL("a command was written through a link");
        } catch (const RecordError& e) {
            QVERIFY2(std::string(e.what()).find("is a symbolic link") != std::string::npos,
                     e.what());
        }
        CommandInbox reader(dir);
        const std::vector<RunCommand> read = reader.poll();
        QCOMPARE(read.size(), std::size_t{1}); // the script is told once, and reads nothing
        QVERIFY2(read[0].error.find("not a regular file") != std::string::npos,
                 read[0].error.c_str());
    }
    std::ifstream kept(victim);
    std::string text((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
    QCOMPARE(text, std::string("keep\n"));
    std::filesystem::remove(inbox);
    QVERIFY(::mkfifo(inbox.c_str(), 0644) == 0);
    QVERIFY_THROWS_EXCEPTION(RecordError, sendRunCommand(dir, {{"action", "pause"}}));
    std::filesystem::remove(inbox);
    QCOMPARE(sendRunCommand(dir, {{"action", "pause"}}), std::int64_t{1}); // a file of its own
    run.close("completed", true);
}

#include "test_run_commands.moc"
