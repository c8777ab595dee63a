// precision-lab: the desktop app. Only main(); everything lives in ui/ and core/.
#include "main_window.h"

#if PLAB_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <QApplication>
#include <QIcon>

int main(int argc, char** argv) {
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
    plab::MainWindow window;
    window.resize(1280, 820);
    window.show();
    return QApplication::exec();
}
