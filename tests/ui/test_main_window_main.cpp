// The desktop app offscreen: its set-up and main, run as two halves (tests/ui/CMakeLists.txt).
#include "test_main_window.h"

void TestMainWindow::initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("PrecisionLabTests"));
    QVERIFY(m_dataHome.isValid());
    qputenv("XDG_DATA_HOME", m_dataHome.path().toLocal8Bit());
    QVERIFY(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation)
                .startsWith(m_dataHome.path()));
    m_window = std::make_unique<MainWindow>();
    m_window->setErrorSink(&m_error);
    m_window->resize(1280, 820);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QVERIFY(m_window->controller()->hasSession());
}

// QTEST_MAIN's set-up, with the functions a shard selects (tests/ui/CMakeLists.txt runs this
// test as two halves in parallel: under ThreadSanitizer it took 80 s alone).
int main(int argc, char** argv) {
    QApplication app(argc, argv);
    app.setAttribute(Qt::AA_Use96Dpi, true);
    QTEST_DISABLE_KEYPAD_NAVIGATION
    TestMainWindow test;
    QTEST_SET_MAIN_SOURCE_PATH
    const std::optional<QStringList> args = plab::test::shardArguments(test, argc, argv);
    return args ? QTest::qExec(&test, *args) : 2;
}
