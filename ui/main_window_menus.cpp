// MainWindow's menus and toolbar actions: what each does when triggered, recent files, the
// format inspector.
#include "main_window.h"

#include "run_steering.h"

#include "compare_dialog.h"
#include "format_inspector.h"
#include "plot_export.h"
#include "training_controller.h"
#include <QAction>
#include <QComboBox>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QSpinBox>
#include <QStandardPaths>
#include <QStatusBar>
#include <QToolBar>
#include <QUrl>

namespace plab {

void MainWindow::buildActions() {
    auto* toolbar = addToolBar(tr("Run"));
    toolbar->setObjectName(QStringLiteral("runToolbar"));
    m_trainAction = toolbar->addAction(tr("Train"));
    m_trainAction->setShortcut(Qt::Key_Space);
    m_trainAction->setToolTip(tr("Train / pause (Space)"));
    connect(m_trainAction, &QAction::triggered, this, [this] {
        const bool resuming = m_source->remote() && m_viewed->steering().paused();
        if (sentToRun(m_source->toggleRunning(), resuming ? tr("resume") : tr("pause")))
            updateStatus();
    });
    m_stepAction = toolbar->addAction(tr("Step"));
    m_stepAction->setShortcut(Qt::Key_S);
    m_stepAction->setToolTip(tr("One training step, then pause (S)"));
    connect(m_stepAction, &QAction::triggered, this,
            [this] { sentToRun(m_source->stepOnce(), tr("step")); });
    m_resetAction = toolbar->addAction(tr("Reset"));
    m_resetAction->setToolTip(
        tr("Fresh weights from the seed, step 0: a new run, with the edits made so far"));
    connect(m_resetAction, &QAction::triggered, this, &MainWindow::resetRun);
    toolbar->addSeparator();
    toolbar->addWidget(m_preset);
    m_modelAction = toolbar->addWidget(m_model);
    m_dataAction = toolbar->addWidget(m_data);
    // The settings a new run takes, in a toolbar of their own: beside the run's in a wide
    // window, on a row of their own in a narrow one (at 800 px they hid behind "»").
    m_settingsToolbar = addToolBar(tr("Settings"));
    m_settingsToolbar->setObjectName(QStringLiteral("settingsToolbar"));
    m_settingsToolbar->addWidget(new QLabel(tr(" seed "), this));
    m_settingsToolbar->addWidget(m_seed);
    m_settingsToolbar->addWidget(new QLabel(tr(" lr "), this));
    m_settingsToolbar->addWidget(m_lr);
    m_settingsToolbar->addWidget(new QLabel(tr(" steps "), this));
    m_settingsToolbar->addWidget(m_steps);
    m_settingsToolbar->addWidget(m_device);
    m_settingsToolbar->addWidget(m_pace);
    m_runToolbar = toolbar;
    m_applyAction = m_settingsToolbar->addAction(tr("Apply"));
    m_applyAction->setToolTip(tr("Start a new run with these settings (Ctrl+Return)"));
    m_applyAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    connect(m_applyAction, &QAction::triggered, this, [this] { applySettings(); });
    connect(m_preset, &QComboBox::currentIndexChanged, this, &MainWindow::updateTrainingFields);

    auto* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open session…"), QKeySequence::Open, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Open session"), {}, tr("Session (*.json)"));
        if (path.isEmpty())
            return;
        if (const QString err = loadSession(path); !err.isEmpty())
            showError(tr("Cannot open the session"), err);
    });
    file->addAction(tr("Open r&un…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(
            this, tr("Open a run folder (holds run.sqlite)"),
            QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                QStringLiteral("/runs"));
        if (dir.isEmpty())
            return;
        if (const QString err = openRun(dir); !err.isEmpty())
            showError(tr("Cannot open the run"), err);
    });
    m_recentMenu = file->addMenu(tr("Open &recent"));
    rebuildRecentMenu();
    file->addAction(tr("&Save session…"), QKeySequence::Save, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Save session"), QStringLiteral("session.json"), tr("Session (*.json)"));
        if (path.isEmpty())
            return;
        if (const QString err = saveSession(path); !err.isEmpty())
            showError(tr("Cannot save the session"), err);
    });
    file->addSeparator();
    m_exportAction = file->addAction(tr("&Export plots…"));
    m_exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    connect(m_exportAction, &QAction::triggered, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export plots to"));
        if (dir.isEmpty())
            return;
        if (const QString err = exportPlots(dir); !err.isEmpty())
            showError(tr("Export failed"), err);
        else
            statusBar()->showMessage(tr("Plots written to %1").arg(dir), 5000);
    });
    file->addAction(tr("Export &report…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Write the report into"));
        if (dir.isEmpty())
            return;
        if (const QString err = exportReport(dir); !err.isEmpty())
            showError(tr("Export failed"), err);
        else
            statusBar()->showMessage(tr("Report written to %1").arg(dir), 5000);
    });
    file->addAction(tr("Open run &folder"), this, [this] {
        QDesktopServices::openUrl(QUrl::fromLocalFile(m_controller->runDir()));
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    auto* tools = menuBar()->addMenu(tr("&Tools"));
    tools->addAction(tr("&Format inspector…"), QKeySequence(Qt::CTRL | Qt::Key_I), this,
                     [this] { formatInspector()->show(); });
    tools->addAction(tr("&Advise…"), this, [this] {
        if (const QString err = openAdvise(); !err.isEmpty())
            showError(tr("Cannot advise on this run"), err);
    });
    tools->addAction(tr("&Compare presets…"), this, [this] { openCompare()->show(); });
    auto* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Precision Lab"), this,
                    [this] { QMessageBox::about(this, tr("About Precision Lab"), aboutText()); });
}

QString MainWindow::aboutText() const {
    return tr("<b>Precision Lab</b> %1<br>Watch what low-precision number formats do to "
              "training, live.<br><br>Implements mixed precision training (Micikevicius et al., "
              "ICLR 2018), 8-bit floating-point training (Mellempudi et al., 2019) and per-layer "
              "gradient scaling (Zhao et al., IJCAI 2020).")
        .arg(QCoreApplication::applicationVersion());
}

CompareDialog* MainWindow::openCompare(const QString& runsRoot) {
    auto* dialog = new CompareDialog(m_controller->config(), this, runsRoot);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    // A point's run in this window: the views follow it while the sweep trains it.
    connect(dialog, &CompareDialog::runChosen, this, [this](const QString& dir) {
        if (const QString err = openRun(dir); !err.isEmpty()) {
            showError(tr("Cannot show the run"), err);
            return;
        }
        raise();
        activateWindow();
    });
    return dialog;
}

void MainWindow::rememberRecentFile(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recentSessions")).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > 8)
        recent.removeLast();
    settings.setValue(QStringLiteral("recentSessions"), recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    if (!m_recentMenu)
        return;
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recentSessions")).toStringList();
    for (const QString& path : recent)
        m_recentMenu->addAction(path, this, [this, path] {
            if (const QString err = loadSession(path); !err.isEmpty())
                showError(tr("Cannot open the session"), err);
        });
    m_recentMenu->setEnabled(!recent.isEmpty());
}

FormatInspector* MainWindow::formatInspector() {
    if (!m_inspector)
        m_inspector = new FormatInspector(this);
    return m_inspector;
}

} // namespace plab
