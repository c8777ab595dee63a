// CompareDialog: a jthread runs the sweep's runs through the one executor (core/sweep) as
// in-process sessions (or reads an opened sweep's records); the GUI thread copies the per-run
// curves, the progress and fresh results under a mutex on a timer, and draws means, bands,
// error bars and the table.
#include "compare_dialog.h"
#include "plot_export.h"

#include "record/record_file.h"
#include "record/run_folder.h"
#include "stats/seed_statistics.h"
#include "sweep/sweep_run.h"
#include "train/presets.h"

#include <qcustomplot.h>

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>

namespace plab {
namespace {

const QColor kColors[] = {QColor(31, 119, 180),  QColor(214, 39, 40),   QColor(44, 160, 44),
                          QColor(255, 127, 14),  QColor(148, 103, 189), QColor(140, 86, 75),
                          QColor(227, 119, 194), QColor(23, 190, 207)};

QColor colorOf(std::size_t i) {
    return kColors[i % std::size(kColors)];
}

QString meanText(const SeedSummary& s, const SweepMetric& metric) {
    return QString::fromStdString(meanWithInterval(s, metric.scale, metric.decimals()));
}

// A band's edges, filled between and left out of the legend; nothing where every step has one
// run (no interval to draw).
void addBandEdges(QCustomPlot* plot, const QColor& color, const SeedBand& interval) {
    const SeedBand band = interval.drawn(); // within what the runs reached
    bool spread = false;
    for (std::size_t i = 0; i < band.runs.size() && !spread; ++i)
        spread = band.runs[i] > 1;
    if (!spread)
        return;
    const QVector<double> steps(band.steps.begin(), band.steps.end());
    QCPGraph* high = plot->addGraph();
    QCPGraph* low = plot->addGraph();
    high->setData(steps, QVector<double>(band.high.begin(), band.high.end()), true);
    low->setData(steps, QVector<double>(band.low.begin(), band.low.end()), true);
    QColor fill = color;
    fill.setAlpha(50);
    for (QCPGraph* edge : {high, low}) {
        edge->setPen(Qt::NoPen);
        edge->removeFromLegend();
        edge->setLayer(QStringLiteral("background"));
    }
    high->setBrush(fill);
    high->setChannelFillGraph(low);
}

} // namespace

CompareDialog::CompareDialog(const TrainConfig& base, QWidget* parent, const QString& runsRoot)
    : QDialog(parent), m_base(base),
      m_runsRoot(runsRoot.isEmpty()
                     ? QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                           QStringLiteral("/runs")
                     : runsRoot) {
    setWindowTitle(tr("Compare presets"));
    resize(1200, 820);
    m_list = new QListWidget(this);
    for (const Preset& p : presets()) {
        auto* item = new QListWidgetItem(QString::fromStdString(p.name), m_list);
        item->setToolTip(QString::fromStdString(p.description + "\n" + p.paper));
        item->setCheckState(p.name == "fp32" || p.name == "fp16-noscale" || p.name == "fp16-amp"
                                ? Qt::Checked
                                : Qt::Unchecked);
    }
    m_list->setMaximumWidth(220);
    m_steps = new QSpinBox(this);
    m_steps->setRange(10, 1000000);
    m_steps->setValue(300);
    m_seeds = new QSpinBox(this);
    m_seeds->setRange(1, 50);
    m_seeds->setValue(1);
    m_seeds->setToolTip(tr("Seeds 1..N per preset: curves show the mean with its 95% interval, "
                           "the table the interval and the verdict against fp32"));
    m_runButton = new QPushButton(tr("Run"), this);
    connect(m_runButton, &QPushButton::clicked, this, [this] { run(); });
    m_stopButton = new QPushButton(tr("Stop"), this);
    m_stopButton->setEnabled(false);
    connect(m_stopButton, &QPushButton::clicked, this, &CompareDialog::stop);
    m_openButton = new QPushButton(tr("Open sweep folder…"), this);
    m_openButton->setToolTip(tr("A folder written by `precision-lab-cli sweep` (here or on a "
                                "cluster) or by this dialog"));
    connect(m_openButton, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a sweep folder"));
        if (dir.isEmpty())
            return;
        if (const QString err = openSweep(dir); !err.isEmpty())
            QMessageBox::warning(this, tr("Cannot open the sweep"), err);
    });
    auto* exportButton = new QPushButton(tr("Export…"), this);
    connect(exportButton, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export plots to"));
        if (!dir.isEmpty())
            if (const QString err = exportPlots(dir); !err.isEmpty())
                QMessageBox::warning(this, tr("Export failed"), err);
    });
    m_loss = new QCustomPlot(this);
    m_loss->xAxis->setLabel(tr("step"));
    m_loss->yAxis->setLabel(tr("train loss (seed mean)")); // short: a low plot cuts a title
    m_loss->legend->setVisible(false); // shown once a comparison has curves (not empty before)
    m_flushed = new QCustomPlot(this);
    m_flushed->xAxis->setLabel(tr("step"));
    // In percent, as the table (issue 65 item 32: a fraction here, % there; the longer label was
    // cut off); what it averages is in the tooltip.
    m_flushed->yAxis->setLabel(tr("flushed act. grads (%)"));
    m_flushed->setToolTip(tr("Share of the nonzero activation gradients flushed to zero, mean "
                             "over the layers, each preset's mean over seeds with its band"));
    m_flushed->legend->setVisible(false); // shown once a comparison has curves
    m_metrics = new QCustomPlot(this);
    // Short enough to fit the plot's height in a small dialog (the long one was cut to
    // "est accuracy (%"); the error bars' meaning is in the dialog's table and tooltip.
    m_metrics->yAxis->setLabel(tr("test accuracy (%)"));
    m_metrics->setToolTip(tr("Each preset's mean test accuracy over seeds, with the 95% interval "
                             "of the mean as error bars"));
    m_table = new QTableWidget(this);
    QStringList headers{tr("point"), tr("runs")};
    for (const SweepMetric& m : sweepMetrics())
        headers << QString::fromStdString(m.title);
    headers << tr("vs baseline: test accuracy");
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    // Headers whole ("test accuracy (%)", "vs baseline: ..."): columns as wide as their text.
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setToolTip(tr("Double-click a point: its first seed's run in the main window"));
    connect(m_table, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        if (const QTableWidgetItem* point = m_table->item(row, 0))
            chooseRun(point->text());
    });
    connect(m_list, &QListWidget::itemDoubleClicked, this,
            [this](const QListWidgetItem* item) { chooseRun(item->text()); });

    auto* left = new QVBoxLayout;
    left->addWidget(m_list, 1);
    for (const auto& [label, box] : {std::pair{tr("Steps"), m_steps}, {tr("Seeds"), m_seeds}}) {
        auto* row = new QHBoxLayout;
        row->addWidget(new QLabel(label, this));
        row->addWidget(box);
        left->addLayout(row);
    }
    left->addWidget(m_runButton);
    left->addWidget(m_stopButton);
    m_progress = new QLabel(tr("Tick presets and press Run."), this);
    m_progress->setWordWrap(true);
    m_progress->setMaximumWidth(220);
    // A fixed height (eight lines, top-aligned): as the text reflows the buttons stay put (they
    // jumped ~28 px with each new line).
    m_progress->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_progress->setFixedHeight(8 * m_progress->fontMetrics().lineSpacing());
    left->addWidget(m_progress);
    left->addWidget(m_openButton);
    left->addWidget(exportButton);
    auto* curves = new QSplitter(Qt::Horizontal, this);
    curves->addWidget(m_loss);
    curves->addWidget(m_flushed);
    auto* finals = new QSplitter(Qt::Horizontal, this);
    finals->addWidget(m_metrics);
    finals->addWidget(m_table);
    finals->setSizes({420, 540});
    auto* right = new QSplitter(Qt::Vertical, this);
    right->addWidget(curves);
    right->addWidget(finals);
    auto* layout = new QHBoxLayout(this);
    layout->addLayout(left);
    layout->addWidget(right, 1);

    m_timer = new QTimer(this);
    m_timer->setInterval(100);
    connect(m_timer, &QTimer::timeout, this, &CompareDialog::refresh);
}

CompareDialog::~CompareDialog() = default; // LiveSweep stops its runs and waits for them

bool CompareDialog::followsFolder() {
    // Another process writes its runs while a run folder of it is locked (a sweep's child, a
    // Slurm task); followed until none has been for 10 s (the gap between two runs is shorter).
    if (m_compareDir.isEmpty())
        return false;
    for (const SweepRun& run : planSweepRuns(m_sweepOnShow, m_compareDir.toStdString()))
        if (runDirectoryLocked(run.dir)) {
            m_lastWriterSeen = std::chrono::steady_clock::now();
            return true;
        }
    return std::chrono::steady_clock::now() - m_lastWriterSeen < std::chrono::seconds(10);
}

void CompareDialog::run(const QStringList& requested, int steps, int seeds) {
    if (m_sweep.running())
        return;
    const QStringList names = requested.isEmpty() ? checkedPresets() : requested;
    if (names.isEmpty())
        return;
    // The sweep the CLI would run: the presets' recipes on this model and data.
    Sweep sweep;
    sweep.presets.clear();
    for (const QString& name : names)
        sweep.presets.push_back(name.toStdString());
    sweep.seeds = seeds > 0 ? seeds : m_seeds->value();
    sweep.steps = steps > 0 ? steps : m_steps->value();
    sweep.baseline = names.contains(QStringLiteral("fp32")) ? "fp32" : sweep.presets.front();
    nlohmann::json base = m_base.toJson();
    base["train"].erase("steps");
    base["train"].erase("epochs");
    for (const char* key : {"model", "data", "train"})
        sweep.sets.push_back(std::string(key) + "=" + base[key].dump());
    // The sweep of the folder opened last: resumed there (its done runs kept, the stopped ones
    // run again), as `sweep --file` does; another sweep gets a folder of its own.
    nlohmann::json asked = sweep.toJson();
    asked.erase("baseline");
    const QString folder =
        !m_openedFolder.isEmpty() && asked == m_openedSweep
            ? m_openedFolder
            : QString::fromStdString(newTimestampedFolder(m_runsRoot.toStdString(), "compare-"));
    startWorker(sweep, folder, true);
}

void CompareDialog::stop() {
    m_sweep.stop();
}

QString CompareDialog::memberRun(const QString& point) const {
    if (m_compareDir.isEmpty())
        return {};
    const Sweep& sweep = m_sweepOnShow;
    for (const SweepRun& run : planSweepRuns(sweep, m_compareDir.toStdString()))
        if (QString::fromStdString(sweep.points()[run.point].name(sweep)) == point &&
            QFileInfo::exists(QString::fromStdString(run.dir) + QStringLiteral("/run.sqlite")))
            return QString::fromStdString(run.dir);
    return {};
}

void CompareDialog::chooseRun(const QString& point) {
    const QString dir = memberRun(point);
    if (dir.isEmpty()) {
        m_progress->setText(tr("No run of %1 in this comparison yet: run it, or open a sweep "
                               "folder that has one.")
                                .arg(point));
        return;
    }
    emit runChosen(dir);
}

QString CompareDialog::openSweep(const QString& dir) {
    if (m_sweep.running())
        return tr("%1: a comparison is still going; stop it first").arg(dir);
    try {
        const Sweep sweep = readSweepFile((dir + QStringLiteral("/sweep.json")).toStdString());
        m_openedFolder = dir;
        m_openedSweep = sweep.toJson();
        m_openedSweep.erase("baseline");
        for (int i = 0; i < m_list->count(); ++i) // its presets ticked, for Run to resume it
            m_list->item(i)->setCheckState(std::find(sweep.presets.begin(), sweep.presets.end(),
                                                     m_list->item(i)->text().toStdString()) !=
                                                   sweep.presets.end()
                                               ? Qt::Checked
                                               : Qt::Unchecked);
        // The controls show the sweep on show (Seeds said 1 after opening a 3-seed sweep).
        m_seeds->setValue(sweep.seeds);
        if (sweep.steps > 0)
            m_steps->setValue(
                static_cast<int>(std::min<std::int64_t>(sweep.steps, m_steps->maximum())));
        startWorker(sweep, dir, false);
        return {};
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
}

void CompareDialog::startWorker(const Sweep& sweep, const QString& folder, bool train) {
    m_pointNames.clear();
    for (const SweepPoint& p : sweep.points())
        m_pointNames.push_back(QString::fromStdString(p.name(sweep)));
    m_sweepOnShow = sweep;
    m_compareDir = folder;
    m_shown.reset();
    m_endShown = false;
    m_stillWritten = false;
    m_rereadTicks = 0;
    m_runButton->setEnabled(false);
    m_openButton->setEnabled(false);
    m_stopButton->setEnabled(train);
    const std::string dir = folder.toStdString();
    if (train)
        m_sweep.train(sweep, dir, std::thread::hardware_concurrency(),
                      "stopped: the comparison was stopped in the app");
    else
        m_sweep.read(sweep, dir);
    m_progressText = train ? tr("Starting %1 runs of %2 steps…")
                                 .arg(static_cast<qsizetype>(m_pointNames.size()) * sweep.seeds)
                                 .arg(sweep.steps)
                           : tr("Reading %1…").arg(folder);
    m_timer->start();
}

QString CompareDialog::describe(const LiveSweep::Status& status) const {
    const Sweep& sweep = m_sweepOnShow;
    if (!status.error.empty())
        return tr("Stopped: %1").arg(QString::fromStdString(status.error));
    if (!status.training) {
        QString text = tr("%1: %2 of %3 runs done (%4 points x %5 seeds)")
                           .arg(m_compareDir)
                           .arg(status.done)
                           .arg(status.planned)
                           .arg(m_pointNames.size())
                           .arg(sweep.seeds);
        if (!status.stoppedEarly.empty()) {
            QStringList stopped;
            for (const std::string& run : status.stoppedEarly)
                stopped << QString::fromStdString(run);
            text += tr("; stopped before their end: %1. Run resumes the sweep here: the done "
                       "runs are kept, these go on from the step they stopped at (a killed "
                       "one, without a checkpoint, from the start)")
                        .arg(stopped.join(QStringLiteral(", ")));
        }
        return text;
    }
    if (status.tally)
        return status.tally->stopRequested
                   ? tr("Stopped after %1 of %2 runs. `precision-lab-cli sweep --file "
                        "%3/sweep.json --out %3` finishes them.")
                         .arg(status.done)
                         .arg(status.planned)
                         .arg(m_compareDir)
                   : tr("Done: %1 runs of %2 steps (%3 presets x %4 seeds). Records in %5")
                         .arg(status.done)
                         .arg(sweep.steps)
                         .arg(sweep.presets.size())
                         .arg(sweep.seeds)
                         .arg(m_compareDir);
    QString going;
    for (const LiveSweep::GoingRun& run : status.going)
        going += tr("%1%2 seed %3 (step %4)")
                     .arg(going.isEmpty() ? QString() : QStringLiteral("; "))
                     .arg(m_pointNames[run.point])
                     .arg(run.seed)
                     .arg(run.step);
    return tr("%1 of %2 runs done, %3 steps each; going: %4")
        .arg(status.done)
        .arg(status.planned)
        .arg(sweep.steps)
        .arg(going);
}

QStringList CompareDialog::checkedPresets() const {
    QStringList names;
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->checkState() == Qt::Checked)
            names << m_list->item(i)->text();
    return names;
}

QString CompareDialog::progressText() const {
    return m_progressText;
}

QString CompareDialog::compareDir() const {
    return m_compareDir;
}

void CompareDialog::drawCurves() {
    m_loss->clearGraphs();
    m_flushed->clearGraphs();
    std::vector<SeedBand> loss, flushed;
    const std::vector<LiveSweep::RunCurves> runs = m_sweep.curves();
    for (std::size_t p = 0; p < m_pointNames.size(); ++p) {
        std::vector<std::vector<std::pair<double, double>>> l, f;
        for (const LiveSweep::RunCurves& r : runs)
            if (r.point == p) {
                l.push_back(r.loss);
                f.push_back(r.flushed);
            }
        loss.push_back(bandOverSeeds(l));
        SeedBand percent = bandOverSeeds(f);
        for (std::vector<double>* v :
             {&percent.mean, &percent.low, &percent.high, &percent.lowest, &percent.highest})
            for (double& x : *v)
                x *= 100.0;
        flushed.push_back(std::move(percent));
    }
    m_loss->legend->setVisible(!loss.empty());
    m_flushed->legend->setVisible(!loss.empty()); // an exported flushed.png names its lines
    // Means first (graph(i) is point i's mean), then the bands, drawn behind them.
    for (std::size_t p = 0; p < loss.size(); ++p) {
        QCPGraph* mean = m_loss->addGraph();
        mean->setName(m_pointNames[p]);
        mean->setPen(QPen(colorOf(p), 1.5));
        mean->setData(QVector<double>(loss[p].steps.begin(), loss[p].steps.end()),
                      QVector<double>(loss[p].mean.begin(), loss[p].mean.end()), true);
        QCPGraph* f = m_flushed->addGraph();
        f->setName(m_pointNames[p]);
        f->setPen(QPen(colorOf(p), 1.5));
        f->setData(QVector<double>(flushed[p].steps.begin(), flushed[p].steps.end()),
                   QVector<double>(flushed[p].mean.begin(), flushed[p].mean.end()), true);
    }
    for (std::size_t p = 0; p < loss.size(); ++p) {
        addBandEdges(m_loss, colorOf(p), loss[p]);
        addBandEdges(m_flushed, colorOf(p), flushed[p]);
    }
    m_loss->rescaleAxes();
    m_flushed->rescaleAxes();
    // A little below 0, so that a preset that flushes nothing (fp32) is a line above the axis,
    // not hidden in it.
    const double top = std::max(m_flushed->yAxis->range().upper, 1e-3);
    m_flushed->yAxis->setRange(-0.03 * top, top * 1.05);
    // One x axis for both plots: the steps of this comparison (with no flushed point yet the
    // flushed plot kept the previous comparison's range).
    m_flushed->xAxis->setRange(m_loss->xAxis->range());
    m_loss->replot(QCustomPlot::rpQueuedReplot);
    m_flushed->replot(QCustomPlot::rpQueuedReplot);
}

void CompareDialog::drawResults(const SweepResults& results) {
    // The first judged metric per point (its curves' colour) with its 95% interval as error
    // bars: test accuracy for the core's runs, a script sweep's final loss.
    const std::string& plotted = results.verdictColumns.front();
    const auto metric = std::find_if(results.metrics.begin(), results.metrics.end(),
                                     [&](const SweepMetric& m) { return m.key == plotted; });
    const double scale = metric->scale;
    m_metrics->yAxis->setLabel(QString::fromStdString(metric->title));
    m_metrics->clearPlottables();
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    double low = std::numeric_limits<double>::infinity(),
           high = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < results.points.size(); ++i) {
        const SeedSummary& s = results.points[i].metrics.at(plotted);
        const double x = static_cast<double>(i);
        ticker->addTick(x, QString::fromStdString(results.points[i].name));
        if (s.n == 0)
            continue;
        const double y = s.mean * scale;
        const double err = std::isfinite(s.ci95) ? s.ci95 * scale : 0.0;
        QCPGraph* point = m_metrics->addGraph();
        point->setLineStyle(QCPGraph::lsNone);
        point->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colorOf(i), 8));
        point->setData({x}, {y});
        auto* bars = new QCPErrorBars(m_metrics->xAxis, m_metrics->yAxis);
        bars->setDataPlottable(point);
        bars->setPen(QPen(colorOf(i), 1.5));
        bars->setData({err});
        low = std::min(low, y - err);
        high = std::max(high, y + err);
    }
    m_metrics->xAxis->setTicker(ticker);
    m_metrics->xAxis->setTickLabelRotation(results.points.size() > 3 ? -35 : 0);
    m_metrics->xAxis->setRange(-0.5, static_cast<double>(results.points.size()) - 0.5);
    if (low <= high) {
        const double pad = std::max(scale == 100.0 ? 0.5 : 1e-3, (high - low) * 0.1);
        m_metrics->yAxis->setRange(scale == 100.0 ? std::max(0.0, low - pad) : low - pad,
                                   scale == 100.0 ? std::min(100.0, high + pad) : high + pad);
    }
    m_metrics->replot(QCustomPlot::rpQueuedReplot);

    // The columns of these results (a script sweep's are its own metrics).
    QStringList headers{tr("point"), tr("runs")};
    for (const SweepMetric& m : results.metrics)
        headers << QString::fromStdString(m.title);
    for (const std::string& key : results.verdictColumns) {
        const auto m = std::find_if(results.metrics.begin(), results.metrics.end(),
                                    [&](const SweepMetric& x) { return x.key == key; });
        headers << tr("vs %1: %2")
                       .arg(QString::fromStdString(results.sweep.baseline),
                            QString::fromStdString(m->title));
    }
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setRowCount(static_cast<int>(results.points.size()));
    for (std::size_t i = 0; i < results.points.size(); ++i) {
        const SweepPointResult& r = results.points[i];
        const int row = static_cast<int>(i);
        int column = 0;
        const auto put = [&](const QString& text, const QString& tip = {}) {
            auto* item = new QTableWidgetItem(text);
            item->setToolTip(tip.isEmpty() ? text : tip);
            m_table->setItem(row, column++, item);
        };
        put(QString::fromStdString(r.name));
        QStringList notes;
        for (const std::string& f : r.failed)
            notes << QString::fromStdString("failed " + f);
        for (const std::string& m : r.missing)
            notes << QString::fromStdString(m); // "seed-2: not run yet", ...
        put(QString::number(r.runs) +
                (r.failed.empty() ? QString() : tr(" (%1 failed)").arg(r.failed.size())),
            notes.isEmpty() ? tr("runs done") : notes.join(QLatin1Char('\n')));
        for (const SweepMetric& m : results.metrics)
            put(meanText(r.metrics.at(m.key), m));
        for (const std::string& key : results.verdictColumns)
            put(QString::fromStdString(r.verdicts.at(key)));
    }
    m_table->resizeColumnsToContents();
}

void CompareDialog::refresh() {
    // Read first: the sweep's thread clears it after its last writes, so what follows sees all of
    // them.
    const bool ended = !m_sweep.running();
    drawCurves();
    if (std::optional<SweepResults> fresh = m_sweep.takeResults()) {
        drawResults(*fresh);
        m_shown = std::move(fresh);
    }
    const LiveSweep::Status status = m_sweep.status();
    if (!m_compareDir.isEmpty()) // a sweep was started or opened
        m_progressText = describe(status);
    m_progress->setText(m_progressText);
    m_progress->setToolTip(m_progress->text()); // whole, where eight lines cut it
    if (!ended || m_endShown)
        return;
    if (!status.training && static_cast<std::size_t>(status.done) < status.planned) {
        // An opened sweep that another process still runs (the CLI, Slurm): its folder looked
        // at every 2 s (20 of the timer's ticks), and read again while it is written, so that
        // its curves and table follow it.
        if (m_stillWritten && m_rereadTicks > 0) {
            --m_rereadTicks;
            return;
        }
        m_stillWritten = followsFolder();
        if (m_stillWritten) {
            m_rereadTicks = 19;
            m_sweep.read(m_sweepOnShow, m_compareDir.toStdString());
            return;
        }
    }
    m_endShown = true;
    m_timer->stop();
    m_runButton->setEnabled(true);
    m_openButton->setEnabled(true);
    m_stopButton->setEnabled(false);
    if (!status.error.empty())
        QMessageBox::warning(this, tr("Comparison stopped"), QString::fromStdString(status.error));
    emit comparisonEnded();
}

QString CompareDialog::exportPlots(const QString& dir) {
    if (!m_sweep.running())
        refresh();
    // Nothing drawn yet: three empty plots would read as a comparison that showed nothing.
    bool drawn = false;
    for (int g = 0; g < m_loss->graphCount(); ++g)
        drawn = drawn || !m_loss->graph(g)->data()->isEmpty();
    if (!drawn && !m_shown)
        return tr("Nothing to export yet: no run of a comparison has a step (run one, or open a "
                  "sweep folder, first)");
    // Each plot whole or not at all (plot_export.h): a full disk names the file and the reason
    // and leaves no empty file behind.
    for (const auto& [plot, name] : {std::pair{m_loss, QStringLiteral("loss")},
                                     std::pair{m_flushed, QStringLiteral("flushed")},
                                     std::pair{m_metrics, QStringLiteral("test_accuracy")}})
        if (const QString error = exportPlot(plot, dir + QLatin1Char('/') + name, 900, 500);
            !error.isEmpty())
            return error;
    if (m_shown) {
        try {
            writeFileAtomically((dir + QStringLiteral("/results.csv")).toStdString(),
                                m_shown->csv());
        } catch (const std::exception& e) {
            return QString::fromUtf8(e.what());
        }
    }
    return {};
}

} // namespace plab
