// Files a run must never touch (issue 65 items 1-8), end to end through precision-lab-cli: a
// link, FIFO or folder where an export, a log or a checkpoint goes is refused and left as it was;
// exports go only into their own run's folder or one holding no record; a new run goes only into
// a new, empty or run folder, and reports its own record's size; a full disk keeps the last
// checkpoint to resume from; a checkpoint that is a FIFO does not hang a resume; a control byte
// in a value is shown escaped, never sent to the terminal.
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include "cli_test_support.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

using namespace plab::cli_test;

class TestCliFiles : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void exportsReplaceOnlyRegularFiles();
    void exportsGoIntoTheirRunOrAFolderOfNoRecord();
    void aNewRunGoesOnlyIntoAnEmptyOrRunFolder();
    void compareLogsAreNotWrittenThroughLinks();
    void aFullDiskKeepsTheLastCheckpoint();
    void aCheckpointThatIsAFifoDoesNotHangResume();
    void controlBytesInValuesAreShownEscaped();

private:
    QTemporaryDir m_dir;
    QString m_run; // a finished three-step run the tests read
};

namespace {

QByteArray contents(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("(unreadable)");
}

bool writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

bool makeLink(const QString& target, const QString& link) {
    return ::symlink(QFile::encodeName(target).constData(), QFile::encodeName(link).constData()) ==
           0;
}

bool makeFifo(const QString& path) {
    return ::mkfifo(QFile::encodeName(path).constData(), 0644) == 0;
}

bool isLink(const QString& path) {
    struct stat st {};
    return ::lstat(QFile::encodeName(path).constData(), &st) == 0 && S_ISLNK(st.st_mode);
}

} // namespace

void TestCliFiles::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_run = m_dir.filePath(QStringLiteral("run"));
    const Result trained = runCli(trainArgs(m_run, "3"));
    QVERIFY2(trained.exitCode == 0, trained.err.constData());
}

// Item 1: an export's rename never replaces a link, FIFO or folder at the target (`advise --out
// /dev/full` replaced the system's /dev/full); the victim behind a link is untouched.
void TestCliFiles::exportsReplaceOnlyRegularFiles() {
    const QString out = m_dir.filePath(QStringLiteral("exports"));
    QVERIFY(QDir().mkpath(out));
    const QString victim = m_dir.filePath(QStringLiteral("victim.txt"));
    QVERIFY(writeFile(victim, "keep"));
    QVERIFY(makeLink(victim, out + QStringLiteral("/metrics.csv")));
    const Result linked = runCli({QStringLiteral("export"), m_run, QStringLiteral("--out"), out});
    QVERIFY(linked.exitCode != 0);
    QVERIFY2(linked.err.contains("metrics.csv: is a symbolic link, not a regular file"),
             linked.err.constData());
    QVERIFY(isLink(out + QStringLiteral("/metrics.csv")));
    QCOMPARE(contents(victim), QByteArray("keep"));

    QVERIFY(QFile::remove(out + QStringLiteral("/metrics.csv")));
    QVERIFY(makeFifo(out + QStringLiteral("/layers.csv")));
    const Result fifo = runCli({QStringLiteral("export"), m_run, QStringLiteral("--out"), out});
    QVERIFY(fifo.exitCode != 0);
    QVERIFY2(fifo.err.contains("layers.csv: is a FIFO"), fifo.err.constData());

    // advise's --out: the same rule through writeFileAtomically.
    const QString adviceLink = m_dir.filePath(QStringLiteral("advice.json"));
    QVERIFY(makeLink(victim, adviceLink));
    const Result advised = runCli({QStringLiteral("advise"), m_run, QStringLiteral("--ladder"),
                                   QStringLiteral("fp32"), QStringLiteral("--export"),
                                   QStringLiteral("te-yaml"), QStringLiteral("--out"), adviceLink});
    QVERIFY(advised.exitCode != 0);
    QVERIFY(isLink(adviceLink));
    QCOMPARE(contents(victim), QByteArray("keep"));
}

// Item 4: `export RUN_A --out RUN_B` overwrote another run's exports (then out of step with its
// run.sqlite), and wrote into sweep and compare folders.
void TestCliFiles::exportsGoIntoTheirRunOrAFolderOfNoRecord() {
    const QString other = m_dir.filePath(QStringLiteral("other"));
    const Result trained = runCli(trainArgs(other, "2"));
    QVERIFY2(trained.exitCode == 0, trained.err.constData());
    const QByteArray before = contents(other + QStringLiteral("/metrics.csv"));
    const Result into = runCli({QStringLiteral("export"), m_run, QStringLiteral("--out"), other});
    QCOMPARE(into.exitCode, 2);
    QVERIFY2(into.err.contains("holds a run's record"), into.err.constData());
    QCOMPARE(contents(other + QStringLiteral("/metrics.csv")), before);

    const QString sweep = m_dir.filePath(QStringLiteral("sweepish"));
    QVERIFY(QDir().mkpath(sweep) && writeFile(sweep + QStringLiteral("/sweep.json"), "{}"));
    const Result intoSweep =
        runCli({QStringLiteral("export"), m_run, QStringLiteral("--out"), sweep});
    QCOMPARE(intoSweep.exitCode, 2);
    QVERIFY2(intoSweep.err.contains("holds a sweep's record"), intoSweep.err.constData());
    QVERIFY(!QFile::exists(sweep + QStringLiteral("/metrics.csv")));

    // Its own folder, and a folder of no record, stay open to it.
    QCOMPARE(runCli({QStringLiteral("export"), m_run}).exitCode, 0);
    const QString fresh = m_dir.filePath(QStringLiteral("fresh-exports"));
    QCOMPARE(runCli({QStringLiteral("export"), m_run, QStringLiteral("--out"), fresh}).exitCode, 0);
    QVERIFY(QFile::exists(fresh + QStringLiteral("/metrics.csv")));
}

// Item 5: `train --out /` wrote ten files into / and reported "run record: 440.7 MB in /".
void TestCliFiles::aNewRunGoesOnlyIntoAnEmptyOrRunFolder() {
    const QString busy = m_dir.filePath(QStringLiteral("busy"));
    QVERIFY(QDir().mkpath(busy) && writeFile(busy + QStringLiteral("/notes.txt"), "mine"));
    const Result refused = runCli(trainArgs(busy, "2"));
    QCOMPARE(refused.exitCode, 2);
    QVERIFY2(refused.err.contains("is not empty and holds no run (it holds \"notes.txt\""),
             refused.err.constData());
    QCOMPARE(QDir(busy).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList{QStringLiteral("notes.txt")}); // not even a lock left behind

    // A run's folder with a user's file beside the record: taken with --overwrite, and the size
    // reported is the record's own, not the 3 MB file's.
    const QString run = m_dir.filePath(QStringLiteral("sized"));
    QCOMPARE(runCli(trainArgs(run, "2")).exitCode, 0);
    QVERIFY(writeFile(run + QStringLiteral("/report.png"), QByteArray(3000000, 'x')));
    const Result again = runCli(trainArgs(run, "2", {QStringLiteral("--overwrite")}));
    QVERIFY2(again.exitCode == 0, again.err.constData());
    const qsizetype at = again.err.indexOf("run record: ");
    QVERIFY2(at >= 0, again.err.constData());
    const double megabytes = again.err.mid(at + 12).split(' ').first().toDouble();
    QVERIFY2(megabytes > 0.0 && megabytes < 2.0, again.err.constData());
    QVERIFY(QFile::exists(run + QStringLiteral("/report.png")));
}

// Item 3: compare's `<run>.stderr.log` followed a planted link and overwrote its target.
void TestCliFiles::compareLogsAreNotWrittenThroughLinks() {
    const QString out = m_dir.filePath(QStringLiteral("compare"));
    QVERIFY(QDir().mkpath(out));
    const QString victim = m_dir.filePath(QStringLiteral("compare-victim.txt"));
    QVERIFY(writeFile(victim, "keep"));
    QVERIFY(makeLink(victim, out + QStringLiteral("/fp32.stderr.log")));
    const Result compared = runCli(
        QStringList{QStringLiteral("compare"), QStringLiteral("--presets"), QStringLiteral("fp32"),
                    QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--out"), out} +
        kTinyRun);
    QVERIFY(compared.exitCode != 0);
    QVERIFY2((compared.out + compared.err).contains("fp32.stderr.log: is a symbolic link"),
             (compared.out + compared.err).constData());
    QCOMPARE(contents(victim), QByteArray("keep"));
    QVERIFY(isLink(out + QStringLiteral("/fp32.stderr.log")));
}

// Item 6: a full disk (a file-size limit plays it) ended the run and took its last checkpoint
// with it, so --resume had nothing; the failed run now keeps it and goes on from it.
void TestCliFiles::aFullDiskKeepsTheLastCheckpoint() {
    const QString run = m_dir.filePath(QStringLiteral("full"));
    QProcess p;
    p.setChildProcessModifier([] {
        const rlimit limit{400000, 400000}; // a checkpoint fits; the record outgrows it
        ::setrlimit(RLIMIT_FSIZE, &limit);
        std::signal(SIGXFSZ, SIG_IGN);
    });
    p.start(QStringLiteral(PLAB_CLI_PATH),
            trainArgs(run, "60",
                      {QStringLiteral("--set"), QStringLiteral("train.checkpoint_every=5")}));
    QVERIFY(p.waitForStarted());
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 4);
    const QString reason = readSummary(run).value(QStringLiteral("stop_reason")).toString();
    QVERIFY2(reason.contains(QStringLiteral(") is kept: train --resume goes on from it")),
             qPrintable(reason));
    QVERIFY(QFile::exists(run + QStringLiteral("/checkpoint.bin")));
    const qint64 recorded = recordedSteps(run);
    QVERIFY(recorded >= 5 && recorded < 60);
    const Result resumed =
        runCli({QStringLiteral("train"), QStringLiteral("--resume"), QStringLiteral("--out"), run});
    QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    QVERIFY2(resumed.err.contains("resuming"), resumed.err.constData());
    QCOMPARE(recordedSteps(run), qint64{60}); // each step once
}

// Item 7: a FIFO as checkpoint.bin hung `train --resume`, deaf to SIGINT and SIGTERM.
void TestCliFiles::aCheckpointThatIsAFifoDoesNotHangResume() {
    const QString run = m_dir.filePath(QStringLiteral("fifo-checkpoint"));
    QCOMPARE(runCli(trainArgs(run, "2")).exitCode, 0);
    QVERIFY(makeFifo(run + QStringLiteral("/checkpoint.bin")));
    QElapsedTimer timer;
    timer.start();
    const Result resumed =
        runCli({QStringLiteral("train"), QStringLiteral("--resume"), QStringLiteral("--out"), run});
    QVERIFY2(timer.elapsed() < 30000, "the resume waited on the FIFO");
    QVERIFY(resumed.exitCode != 0);
    QVERIFY2(resumed.err.contains("checkpoint.bin: is a FIFO, not a regular file"),
             resumed.err.constData());
}

// Item 8: `formats --format $'e4m3:\e[31m'` coloured the terminal.
void TestCliFiles::controlBytesInValuesAreShownEscaped() {
    const Result r = runCli(
        {QStringLiteral("formats"), QStringLiteral("--format"), QStringLiteral("e4m3:\x1b[31m")});
    QCOMPARE(r.exitCode, 2);
    QVERIFY2(r.err.contains("\\x1b[31m"), r.err.constData());
    QVERIFY(!r.err.contains('\x1b'));
}

QTEST_GUILESS_MAIN(TestCliFiles)
#include "test_cli_files.moc"
