// Runs part of a Qt Test object's functions, so that CTest can run one long test executable as
// two processes on two cores (tests/CMakeLists.txt: plab_add_test's SPLIT). `--shard-only a,b`
// runs those test functions alone, `--shard-except a,b` every other one, so that the two parts
// hold every function and a new one lands in the second. A name the object has no test function
// for is an error: a renamed test cannot drop out silently. Without either option every
// function runs, as under QTEST_MAIN.
#pragma once

#include <QMetaMethod>
#include <QMetaObject>
#include <QObject>
#include <QStringList>

#include <algorithm>
#include <cstdio>
#include <optional>

namespace plab::test {

// Test functions as QTest finds them: private slots without arguments, less its fixtures.
inline QStringList testFunctions(const QObject& test) {
    static const QStringList kFixtures = {QStringLiteral("initTestCase"),
                                          QStringLiteral("cleanupTestCase"), QStringLiteral("init"),
                                          QStringLiteral("cleanup")};
    QStringList names;
    const QMetaObject* meta = test.metaObject();
    for (int i = meta->methodOffset(); i < meta->methodCount(); ++i) {
        const QMetaMethod m = meta->method(i);
        const QString name = QString::fromLatin1(m.name());
        if (m.methodType() == QMetaMethod::Slot && m.access() == QMetaMethod::Private &&
            m.parameterCount() == 0 && !kFixtures.contains(name) &&
            !name.endsWith(QStringLiteral("_data")))
            names << name;
    }
    return names;
}

// The arguments for QTest::qExec: argv with a shard option replaced by the functions it selects.
// Prints the error and returns nothing when an option is malformed or names no test function.
inline std::optional<QStringList> shardArguments(const QObject& test, int argc, char** argv) {
    QStringList args;
    for (int i = 0; i < argc; ++i)
        args << QString::fromLocal8Bit(argv[i]);
    const qsizetype at = std::max(args.indexOf(QStringLiteral("--shard-only")),
                                  args.indexOf(QStringLiteral("--shard-except")));
    if (at < 0)
        return args;
    const bool only = args[at] == QStringLiteral("--shard-only");
    if (at + 1 >= args.size()) {
        std::fprintf(stderr, "%s: %s needs a comma-separated list of test functions\n", argv[0],
                     qPrintable(args[at]));
        return std::nullopt;
    }
    const QStringList all = testFunctions(test);
    const QStringList named = args[at + 1].split(QLatin1Char(','), Qt::SkipEmptyParts);
    for (const QString& name : named) {
        if (!all.contains(name)) {
            std::fprintf(stderr, "%s: %s: no test function \"%s\" (it has: %s)\n", argv[0],
                         qPrintable(args[at]), qPrintable(name), qPrintable(all.join(u',')));
            return std::nullopt;
        }
    }
    QStringList selected;
    for (const QString& name : all)
        if (named.contains(name) == only)
            selected << name;
    if (selected.isEmpty()) { // QTest would take an empty list for all of them
        std::fprintf(stderr, "%s: %s %s leaves no test function to run\n", argv[0],
                     qPrintable(args[at]), qPrintable(args[at + 1]));
        return std::nullopt;
    }
    args.remove(at, 2);
    args.append(selected);
    return args;
}

} // namespace plab::test
