// CompareDialog: a jthread runs the presets' TrainingSessions one after another (stoppable); the
// GUI thread copies the curves and progress under a mutex on a timer and replots.
#include "compare_dialog.h"

#include "record/run_record.h"
#include "train/run_data.h"
#include "train/training_session.h"

#include <qcustomplot.h>

#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTimer>
#include <QVBoxLayout>

namespace plab {

CompareDialog::CompareDialog(const TrainConfig& base, QWidget* parent, const QString& runsRoot)
    : QDialog(parent), m_base(base),
      m_runsRoot(runsRoot.isEmpty()
                     ? QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                           QStringLiteral("/runs")
                     : runsRoot) {
    setWindowTitle(tr("Compare presets"));
    resize(1000, 700);
    m_list = new QListWidget(this);
    for (const Preset& p : presets()) {
        auto* item = new QListWidgetItem(QString::fromStdString(p.name), m_list);
        item->setToolTip(QString::fromStdString(p.description));
        item->setCheckState(p.name == "fp32" || p.name == "fp16-noscale" || p.name == "fp16-amp"
                                ? Qt::Checked
                                : Qt::Unchecked);
    }
    m_list->setMaximumWidth(220);
    m_steps = new QSpinBox(this);
    m_steps->setRange(10, 1000000);
    m_steps->setValue(300);
    m_runButton = new QPushButton(tr("Run"), this);
    connect(m_runButton, &QPushButton::clicked, this, [this] { run(); });
    auto* exportButton = new QPushButton(tr("Export PNG…"), this);
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export plots to"));
        if (!dir.isEmpty())
            if (const QString err = exportPng(dir); !err.isEmpty())
                QMessageBox::warning(this, tr("Export failed"), err);
    });
    m_loss = new QCustomPlot(this);
    m_loss->xAxis->setLabel(tr("step"));
    m_loss->yAxis->setLabel(tr("training loss"));
    m_loss->legend->setVisible(true);
    m_flushed = new QCustomPlot(this);
    m_flushed->xAxis->setLabel(tr("step"));
    m_flushed->yAxis->setLabel(tr("activation gradients flushed (mean over layers)"));

    auto* left = new QVBoxLayout;
    left->addWidget(m_list, 1);
    auto* stepsRow = new QHBoxLayout;
    stepsRow->addWidget(new QLabel(tr("Steps"), this));
    stepsRow->addWidget(m_steps);
    left->addLayout(stepsRow);
    left->addWidget(m_runButton);
    m_progress = new QLabel(tr("Tick presets and press Run."), this);
    m_progress->setWordWrap(true);
    m_progress->setMaximumWidth(220);
    left->addWidget(m_progress);
    left->addWidget(exportButton);
    auto* plots = new QVBoxLayout;
    plots->addWidget(m_loss, 1);
    plots->addWidget(m_flushed, 1);
    auto* layout = new QHBoxLayout(this);
    layout->addLayout(left);
    layout->addLayout(plots, 1);

    m_timer = new QTimer(this);
    m_timer->setInterval(100);
    connect(m_timer, &QTimer::timeout, this, &CompareDialog::refresh);
}

CompareDialog::~CompareDialog() {
    m_worker.request_stop();
    if (m_worker.joinable())
        m_worker.join();
}

void CompareDialog::run(const QStringList& requested, int steps) {
    if (m_running.load())
        return;
    const QStringList names = requested.isEmpty() ? checkedPresets() : requested;
    if (names.isEmpty())
        return;
    const int n = steps > 0 ? steps : m_steps->value();
    std::vector<TrainConfig> configs;
    for (const QString& name : names) {
        nlohmann::json j = m_base.toJson();
        j.erase("recipe");
        j.erase("scaling");
        j.merge_patch(findPreset(name.toStdString()).json);
        j["train"]["steps"] = n;
        configs.push_back(configFromJson(j));
    }
    const QString folder =
        m_runsRoot + QStringLiteral("/compare-") +
        QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss-zzz"));
    {
        std::lock_guard lock(m_mutex);
        m_curves.clear();
        for (const QString& name : names)
            m_curves.push_back({name, {}, {}, {}, {}});
        m_compareDir = folder;
        m_progressText = tr("Starting %1 runs of %2 steps…").arg(names.size()).arg(n);
    }
    if (m_worker.joinable())
        m_worker.join();
    m_running = true;
    m_runButton->setEnabled(false);
    m_timer->start();
    m_worker = std::jthread([this, configs, n, names, folder](std::stop_token stop) {
        try {
            const TrainConfig& first = configs.front();
            const auto split = loadRunData(first);
            std::size_t done = 0;
            for (std::size_t c = 0; c < configs.size() && !stop.stop_requested(); ++c) {
                const std::string dir =
                    (folder + QLatin1Char('/') + names[static_cast<int>(c)]).toStdString();
                {
                    TrainingSession session(configs[c], split, dir);
                    session.start();
                    // Live: every step's loss, the flushed share of the steps the snapshots show.
                    while (!hasEnded(session.state()) && !stop.stop_requested()) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(20));
                        std::lock_guard lock(m_mutex);
                        Curve& curve = m_curves[c];
                        while (const auto sc = session.popScalars()) {
                            curve.steps.push_back(static_cast<double>(sc->step));
                            curve.loss.push_back(sc->loss);
                        }
                        m_progressText = tr("%1 (%2 of %3): step %4 of %5")
                                             .arg(names[static_cast<int>(c)])
                                             .arg(c + 1)
                                             .arg(configs.size())
                                             .arg(curve.steps.empty() ? 0 : curve.steps.back())
                                             .arg(n);
                    }
                    if (stop.stop_requested())
                        session.stop(QStringLiteral("comparison closed").toStdString());
                    session.waitUntilDone();
                }
                // The run's record is whole now: its curves, by the one analysis.
                const RunAnalysis a = analyseRun(RunRecord(dir));
                std::lock_guard lock(m_mutex);
                Curve& curve = m_curves[c];
                curve.steps.clear();
                curve.loss.clear();
                for (const auto& [step, loss] : a.loss) {
                    curve.steps.push_back(step);
                    curve.loss.push_back(loss);
                }
                curve.flushedSteps.clear();
                curve.flushed.clear();
                for (const auto& [step, share] : a.flushedActGrads) {
                    curve.flushedSteps.push_back(step);
                    curve.flushed.push_back(share);
                }
                ++done;
            }
            std::lock_guard lock(m_mutex);
            m_progressText =
                stop.stop_requested()
                    ? tr("Stopped after %1 of %2 runs.").arg(done).arg(configs.size())
                    : tr("Done: %1 runs of %2 steps. Records in %3").arg(done).arg(n).arg(folder);
        } catch (const std::exception& e) { // shown by refresh(): the dialog must not die
            std::lock_guard lock(m_mutex);
            m_error = QString::fromUtf8(e.what());
            m_progressText = tr("Stopped: %1").arg(m_error);
        }
        m_running = false;
    });
}

QStringList CompareDialog::checkedPresets() const {
    QStringList names;
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->checkState() == Qt::Checked)
            names << m_list->item(i)->text();
    return names;
}

QString CompareDialog::progressText() const {
    std::lock_guard lock(m_mutex);
    return m_progressText;
}

QString CompareDialog::compareDir() const {
    std::lock_guard lock(m_mutex);
    return m_compareDir;
}

void CompareDialog::refresh() {
    const QColor colors[] = {QColor(31, 119, 180),  QColor(214, 39, 40),   QColor(44, 160, 44),
                             QColor(255, 127, 14),  QColor(148, 103, 189), QColor(140, 86, 75),
                             QColor(227, 119, 194), QColor(23, 190, 207)};
    {
        std::lock_guard lock(m_mutex);
        m_loss->clearGraphs();
        m_flushed->clearGraphs();
        for (std::size_t i = 0; i < m_curves.size(); ++i) {
            const Curve& c = m_curves[i];
            QCPGraph* g = m_loss->addGraph();
            g->setName(c.name);
            g->setPen(QPen(colors[i % 8], 1.5));
            g->setData(QVector<double>(c.steps.begin(), c.steps.end()),
                       QVector<double>(c.loss.begin(), c.loss.end()), true);
            QCPGraph* f = m_flushed->addGraph();
            f->setPen(QPen(colors[i % 8], 1.5));
            f->setData(QVector<double>(c.flushedSteps.begin(), c.flushedSteps.end()),
                       QVector<double>(c.flushed.begin(), c.flushed.end()), true);
        }
    }
    m_loss->rescaleAxes();
    m_flushed->rescaleAxes();
    m_flushed->yAxis->setRangeLower(0.0);
    m_loss->replot(QCustomPlot::rpQueuedReplot);
    m_flushed->replot(QCustomPlot::rpQueuedReplot);
    m_progress->setText(progressText());
    if (!m_running.load()) {
        m_timer->stop();
        m_runButton->setEnabled(true);
        QString error;
        {
            std::lock_guard lock(m_mutex);
            error.swap(m_error);
        }
        if (!error.isEmpty())
            QMessageBox::warning(this, tr("Comparison stopped"), error);
        emit comparisonEnded();
    }
}

QString CompareDialog::exportPng(const QString& dir) {
    refresh();
    for (const auto& [plot, name] : {std::pair{m_loss, QStringLiteral("loss")},
                                     std::pair{m_flushed, QStringLiteral("flushed")}})
        if (!plot->savePng(dir + QLatin1Char('/') + name + QStringLiteral(".png"), 900, 500, 2.0))
            return tr("%1/%2.png: cannot write").arg(dir, name);
    return {};
}

} // namespace plab
