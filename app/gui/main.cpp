// precision-lab: the desktop app. Only main(); everything lives in ui/ and core/.
#include "main_window.h"

#include <QApplication>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("PrecisionLab"));
    QApplication::setApplicationName(QStringLiteral("Precision Lab"));
    plab::MainWindow window;
    window.resize(1280, 820);
    window.show();
    return QApplication::exec();
}
