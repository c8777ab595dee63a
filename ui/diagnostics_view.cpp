// DiagnosticsView: the two choices, the heat map and a line saying what it shows.
#include "diagnostics_view.h"

#include "flush_heatmap_view.h"
#include "record/run_record.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <cmath>

namespace plab {
namespace {

QString explanation(DiagnosticQuantity q) {
    switch (q) {
    case DiagnosticQuantity::Log2Amax:
        return QObject::tr("log2 of each tensor's largest |x|: outliers growing over training "
                           "precede FP8 divergence (Fishman et al. 2024)");
    case DiagnosticQuantity::Kurtosis:
        return QObject::tr("E[(x-mean)^4] / var^2 of each layer's activations (3 for a normal "
                           "distribution): heavy tails, an early warning of instability");
    case DiagnosticQuantity::GradientNoiseRatio:
        return QObject::tr("||x|| / ||cast(x) - x|| in the format (10^(SQNR/20)): on gradients, "
                           "training stops gaining below about 1.7 (sqrt 3)");
    case DiagnosticQuantity::BlockScaleSpread:
        return QObject::tr("standard deviation of log2 of the block scales, in binades");
    case DiagnosticQuantity::ZeroScaleBlocks:
        return QObject::tr("blocks with a nonzero value whose scale underflowed to zero");
    }
    return {};
}

} // namespace

DiagnosticsView::DiagnosticsView(QWidget* parent) : QWidget(parent) {
    m_quantity = new QComboBox(this);
    for (DiagnosticQuantity q : kDiagnosticQuantities)
        m_quantity->addItem(QString::fromUtf8(toString(q).data()), static_cast<int>(q));
    m_role = new QComboBox(this);
    for (TensorRole r : {TensorRole::Weights, TensorRole::Activations,
                         TensorRole::ActivationGradients, TensorRole::WeightGradients})
        m_role->addItem(
            QString::fromUtf8(toString(r).data()).replace(QLatin1Char('_'), QLatin1Char(' ')),
            static_cast<int>(r));
    m_role->setCurrentIndex(2); // activation gradients
    m_map = new FlushHeatmapView(this);
    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    auto* choices = new QHBoxLayout;
    choices->addWidget(m_quantity);
    choices->addWidget(new QLabel(tr("of"), this));
    choices->addWidget(m_role);
    choices->addStretch();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(choices);
    layout->addWidget(m_note);
    layout->addWidget(m_map, 1);
    connect(m_quantity, &QComboBox::currentIndexChanged, this, &DiagnosticsView::choiceChanged);
    connect(m_role, &QComboBox::currentIndexChanged, this, &DiagnosticsView::choiceChanged);
}

DiagnosticQuantity DiagnosticsView::quantity() const {
    return static_cast<DiagnosticQuantity>(m_quantity->currentData().toInt());
}

TensorRole DiagnosticsView::role() const {
    return static_cast<TensorRole>(m_role->currentData().toInt());
}

QString DiagnosticsView::note() const {
    return m_note->text();
}

void DiagnosticsView::show(const RunRecord& record, const std::string& format) {
    const DiagnosticQuantity q = quantity();
    std::vector<DiagnosticColumn> columns = diagnosticColumns(record, q, role(), format);
    std::vector<TrainingController::FlushColumn> cells;
    cells.reserve(columns.size());
    for (DiagnosticColumn& c : columns) {
        for (double& v : c.values)
            if (!std::isfinite(v))
                v = std::nan(""); // no value (a zero amax, an exact cast): a blank cell
        cells.push_back({c.step, std::move(c.values)});
    }
    const QString name = QString::fromUtf8(toString(q).data());
    m_map->setQuantity(name, explanation(q));
    m_map->setColumns(cells, record.stageNames());
    const QString of = format.empty() || !dependsOnFormat(q)
                           ? QString()
                           : tr(" in %1").arg(QString::fromStdString(format));
    const bool gradient =
        role() == TensorRole::ActivationGradients || role() == TensorRole::WeightGradients;
    const QString unscaled = q == DiagnosticQuantity::Log2Amax && gradient
                                 ? tr(" (unscaled: each step's loss scale divided out)")
                                 : QString();
    m_note->setText(
        cells.empty()
            ? tr("No %1 of %2%3: %4.")
                  .arg(name, m_role->currentText(), of,
                       QString::fromStdString(diagnosticAbsence(record, q, role(), format)))
            : tr("%1 of %2%3%4: %5")
                  .arg(name, m_role->currentText(), of, unscaled, explanation(q)));
}

void DiagnosticsView::showNothingYet() {
    m_map->setColumns({}, {});
    m_note->setText(tr("No statistics yet: the run has not recorded its first statistics step."));
}

} // namespace plab
