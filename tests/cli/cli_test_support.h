// What the CLI's end-to-end tests share: running precision-lab-cli (PLAB_CLI_PATH, defined by
// tests/cli/CMakeLists.txt) and reading what a run recorded, as a reader does while it runs.
#pragma once

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>

#include <csignal>

#include <sqlite3.h>

namespace plab::cli_test {

struct Result {
    int exitCode;
    QByteArray out;
    QByteArray err;
};

inline Result runCli(const QStringList& args, const QByteArray& input = {}) {
    QProcess p;
    p.start(QStringLiteral(PLAB_CLI_PATH), args);
    if (!p.waitForStarted())
        return {-1, {}, "could not start"};
    p.write(input);
    p.closeWriteChannel();
    if (!p.waitForFinished(60000))
        return {-2, {}, "timed out"};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -3, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

// A value from RUN/run.sqlite as a reader sees it while the run writes (whole transactions
// only), or -1 when the record cannot be read.
inline qint64 recordQuery(const QString& run, const char* sql) {
    sqlite3* db = nullptr;
    const QByteArray path = (run + QStringLiteral("/run.sqlite")).toUtf8();
    qint64 value = -1;
    if (sqlite3_open_v2(path.constData(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW)
            value = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return value;
}

// Runs SQL that changes the record (a test planting a state a kill could leave).
inline bool recordExec(const QString& run, const char* sql) {
    sqlite3* db = nullptr;
    const QByteArray path = (run + QStringLiteral("/run.sqlite")).toUtf8();
    const bool ok =
        sqlite3_open_v2(path.constData(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK &&
        sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

inline qint64 recordedSteps(const QString& run) {
    return recordQuery(run, "SELECT count(*) FROM steps");
}

inline const QStringList kTinyRun = {
    QStringLiteral("--set"), QStringLiteral("data.train_size=600"),
    QStringLiteral("--set"), QStringLiteral("data.test_size=100"),
    QStringLiteral("--set"), QStringLiteral("model.hidden=[16]"),
    QStringLiteral("--set"), QStringLiteral("train.batch_size=32")};

inline QJsonObject readSummary(const QString& run) {
    QFile f(run + QStringLiteral("/summary.json"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

inline QList<QByteArray> fileLines(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll().trimmed().split('\n');
}

inline QStringList trainArgs(const QString& out, const char* steps, const QStringList& extra = {}) {
    return QStringList{QStringLiteral("train"), QStringLiteral("--steps"),
                       QString::fromLatin1(steps), QStringLiteral("--out"), out} +
           kTinyRun + extra;
}

// Sends `signal` to a running `train` once its record holds `steps` steps (or after 30 s), and
// waits for it to end.
inline bool signalWhenRecorded(QProcess& p, const QString& run, qint64 steps, int signal) {
    for (int i = 0; i < 1500 && recordedSteps(run) < steps; ++i)
        QTest::qWait(20);
    ::kill(static_cast<pid_t>(p.processId()), signal);
    return p.waitForFinished(20000);
}

// Starts a run too long to end by itself and waits until its record holds `steps` steps.
inline bool startLongRun(QProcess& p, const QString& run, int steps) {
    p.start(QStringLiteral(PLAB_CLI_PATH), trainArgs(run, "1000000"));
    if (!p.waitForStarted())
        return false;
    for (int i = 0; i < 1500; ++i) {
        if (recordedSteps(run) >= steps)
            return true;
        QTest::qWait(20);
    }
    return false;
}

inline bool endsOnWholeRows(const QString& run) {
    for (const char* name : {"/metrics.csv", "/layers.csv", "/histograms.csv", "/events.jsonl"}) {
        QFile f(run + QLatin1String(name));
        if (!f.open(QIODevice::ReadOnly) || !f.readAll().endsWith('\n'))
            return false;
    }
    return true;
}

} // namespace plab::cli_test
