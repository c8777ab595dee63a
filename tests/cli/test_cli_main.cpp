// precision-lab-cli end to end: main, run as two shards (tests/cli/CMakeLists.txt).
#include "test_cli.h"

// Two shards CTest runs in parallel (tests/cli/CMakeLists.txt): under AddressSanitizer the
// whole object took past CTest's 120 s on the 2-core machine once the resume tests joined it.
int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    TestCli test;
    QTEST_SET_MAIN_SOURCE_PATH
    const std::optional<QStringList> args = plab::test::shardArguments(test, argc, argv);
    return args ? QTest::qExec(&test, *args) : 2;
}
