// CompareDialog: Trainers run one after another on a jthread (stoppable); the GUI thread copies
// the curves under a mutex on a timer and replots.
#include "compare_dialog.h"

#include "train/trainer.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

namespace plab {

CompareDialog::CompareDialog(const TrainConfig& base, QWidget* parent)
    : QDialog(parent), m_base(base) {
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
    QStringList names = requested;
    if (names.isEmpty())
        for (int i = 0; i < m_list->count(); ++i)
            if (m_list->item(i)->checkState() == Qt::Checked)
                names << m_list->item(i)->text();
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
    {
        std::lock_guard lock(m_mutex);
        m_curves.clear();
        for (const QString& name : names)
            m_curves.push_back({name, {}, {}, {}});
    }
    if (m_worker.joinable())
        m_worker.join();
    m_running = true;
    m_runButton->setEnabled(false);
    m_timer->start();
    m_worker = std::jthread([this, configs, n](std::stop_token stop) {
        try {
            const TrainConfig& first = configs.front();
            const auto split = std::make_shared<const DataSplit>(
                first.dataSource == "synthetic"
                    ? makeSyntheticData(first.seed, first.syntheticTrain, first.syntheticTest)
                    : loadIdxDirectory(first.dataSource == "fashion-mnist" ? kFashionMnistDir
                                                                           : first.dataSource));
            for (std::size_t c = 0; c < configs.size() && !stop.stop_requested(); ++c) {
                Trainer trainer(configs[c], split);
                for (int s = 0; s < n && !stop.stop_requested(); ++s) {
                    const StepResult r = trainer.step();
                    double flushed = 0.0;
                    for (const StageStats& st : trainer.stageStats()) {
                        const QuantStats& g = st.role(TensorRole::ActivationGradients);
                        flushed += g.flushedShare();
                    }
                    flushed /=
                        static_cast<double>(std::max<std::size_t>(1, trainer.stageStats().size()));
                    std::lock_guard lock(m_mutex);
                    m_curves[c].steps.push_back(static_cast<double>(r.scalars.step));
                    m_curves[c].loss.push_back(r.scalars.loss);
                    m_curves[c].flushed.push_back(flushed);
                }
            }
        } catch (const std::exception& e) { // shown by refresh(): the dialog must not die
            std::lock_guard lock(m_mutex);
            m_error = QString::fromUtf8(e.what());
        }
        m_running = false;
    });
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
            const QVector<double> x(c.steps.begin(), c.steps.end());
            QCPGraph* g = m_loss->addGraph();
            g->setName(c.name);
            g->setPen(QPen(colors[i % 8], 1.5));
            g->setData(x, QVector<double>(c.loss.begin(), c.loss.end()), true);
            QCPGraph* f = m_flushed->addGraph();
            f->setPen(QPen(colors[i % 8], 1.5));
            f->setData(x, QVector<double>(c.flushed.begin(), c.flushed.end()), true);
        }
    }
    m_loss->rescaleAxes();
    m_flushed->rescaleAxes();
    m_flushed->yAxis->setRangeLower(0.0);
    m_loss->replot(QCustomPlot::rpQueuedReplot);
    m_flushed->replot(QCustomPlot::rpQueuedReplot);
    if (!m_running.load()) {
        m_timer->stop();
        m_runButton->setEnabled(true);
        std::lock_guard lock(m_mutex);
        if (!m_error.isEmpty()) {
            QMessageBox::warning(this, tr("Comparison stopped"), m_error);
            m_error.clear();
        }
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
