// precision-lab: the desktop app. Only main(); everything lives in ui/ and core/.
#include "main_window.h"

#if PLAB_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QMessageBox>

#include <csignal>

int main(int argc, char** argv) {
    // As the CLI: a file-size limit fails the record's write (a dialog), not the whole app.
    std::signal(SIGXFSZ, SIG_IGN);
    QApplication app(argc, argv);
#if PLAB_HAVE_CUDA
    plab::registerCudaBackend();
#endif
    QApplication::setOrganizationName(QStringLiteral("PrecisionLab"));
    QApplication::setApplicationName(QStringLiteral("Precision Lab"));
    QApplication::setApplicationVersion(QStringLiteral(PLAB_VERSION));
    // Matches the installed .desktop file, so Wayland compositors pair the window with its entry.
    QGuiApplication::setDesktopFileName(QStringLiteral("io.github.precisionlab.PrecisionLab"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/precision-lab.svg")));
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Low-precision training, live"));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption open(
        QStringLiteral("open"),
        QStringLiteral("Show the run in DIR (it holds run.sqlite), following it while another "
                       "process writes it (a watched PyTorch run, a CLI train)."),
        QStringLiteral("DIR"));
    parser.addOption(open);
    parser.process(app);
    plab::MainWindow window;
    window.resize(1280, 820);
    window.show();
    if (parser.isSet(open))
        if (const QString error = window.openRun(parser.value(open)); !error.isEmpty())
            QMessageBox::warning(&window, QObject::tr("Cannot open the run"), error);
    return QApplication::exec();
}
