// GradientView drawing: QCustomPlot bars on a log2 axis, item rectangles for the format bands.
#include "gradient_view.h"

#include "format_bands.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

#include <cmath>

namespace plab {
namespace {

const char* roleTitle(TensorRole r) {
    switch (r) {
    case TensorRole::Weights:
        return "weights";
    case TensorRole::Activations:
        return "activations";
    case TensorRole::ActivationGradients:
        return "activation gradients";
    case TensorRole::WeightGradients:
        return "weight gradients";
    case TensorRole::MasterWeights:
        return "master weights (updated)";
    case TensorRole::OptimizerState:
        return "optimiser state";
    }
    return "?";
}

bool isGradient(TensorRole r) {
    return r == TensorRole::ActivationGradients || r == TensorRole::WeightGradients;
}

// Light fills: the data (bars) stays the strongest colour on the plot, in light and dark themes.
const QColor kFlush(220, 60, 60, 70), kSub(240, 170, 40, 70), kNormal(60, 170, 90, 45),
    kOverflow(150, 60, 200, 70);

} // namespace

GradientView::GradientView(QWidget* parent) : QWidget(parent) {
    m_stage = new QComboBox(this);
    m_stage->setToolTip(tr("Layer (a weight layer with the activation after it)"));
    m_role = new QComboBox(this);
    for (TensorRole r : kAllRoles)
        m_role->addItem(tr(roleTitle(r)), static_cast<int>(r));
    m_role->setCurrentIndex(static_cast<int>(TensorRole::ActivationGradients));
    m_role->setToolTip(tr("Which tensor's values to show"));
    // The boxes as wide as their longest entry, on a row of their own with the overlays: at
    // 800 px one row squeezed them to a letter ("L", "a").
    m_stage->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_role->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    auto* choices = new QHBoxLayout;
    choices->addWidget(new QLabel(tr("Layer"), this));
    choices->addWidget(m_stage);
    choices->addWidget(new QLabel(tr("Tensor"), this));
    choices->addWidget(m_role);
    choices->addStretch(1);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Also show ranges of"), this));
    for (const char* name : {"fp16", "bf16", "fp8-e4m3", "fp8-e5m2"}) {
        auto* box = new QCheckBox(QString::fromLatin1(name), this);
        const FormatSpec f = parseFormat(name);
        box->setToolTip(tr("%1: smallest subnormal 2^%2, min normal 2^%3, max %4")
                            .arg(QString::fromLatin1(name))
                            .arg(std::log2(f.minPositive()))
                            .arg(std::log2(f.minNormal()))
                            .arg(f.maxFinite()));
        connect(box, &QCheckBox::toggled, this, &GradientView::refresh);
        top->addWidget(box);
        m_overlayBoxes[name] = box;
    }
    top->addStretch(1);

    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(120); // room for the shares line below it in an 800x600 window
    m_plot->xAxis->setLabel(tr("log2 |x|"));
    m_plot->yAxis->setLabel(tr("share of values"));
    m_plot->setNotAntialiasedElements(QCP::aeAll); // fast repaints while dragging
    m_bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_bars->setWidth(0.25);
    m_bars->setPen(Qt::NoPen);
    m_bars->setBrush(palette().color(QPalette::Highlight));

    m_counters = new QLabel(this);
    m_counters->setObjectName(QStringLiteral("sharesLine"));
    m_counters->setTextFormat(Qt::RichText);
    m_counters->setWordWrap(true);
    m_counters->setToolTip(tr("Shares of all values of this tensor. True zeros were zero before "
                              "the cast (e.g. after ReLU); flushed values were nonzero and became "
                              "zero. While the slider moves these are previews from the last "
                              "step's histogram; the next step counts them exactly."));

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(choices);
    layout->addLayout(top);
    layout->addWidget(m_plot, 1);
    layout->addWidget(m_counters);

    connect(m_stage, &QComboBox::currentIndexChanged, this, &GradientView::refresh);
    connect(m_role, &QComboBox::currentIndexChanged, this, &GradientView::refresh);
}

int GradientView::stage() const {
    return m_stage->currentIndex();
}

void GradientView::setRoles(const std::vector<TensorRole>& roles) {
    const TensorRole before = role();
    bool same = m_role->count() == static_cast<int>(roles.size());
    for (int i = 0; same && i < m_role->count(); ++i)
        same = m_role->itemData(i).toInt() == static_cast<int>(roles[static_cast<std::size_t>(i)]);
    if (same || roles.empty())
        return;
    {
        const QSignalBlocker block(m_role);
        m_role->clear();
        for (TensorRole r : roles)
            m_role->addItem(tr(roleTitle(r)), static_cast<int>(r));
        const int kept = m_role->findData(static_cast<int>(before));
        const int gradients = m_role->findData(static_cast<int>(TensorRole::ActivationGradients));
        m_role->setCurrentIndex(kept >= 0 ? kept : gradients >= 0 ? gradients : 0);
    }
    refresh();
}

TensorRole GradientView::role() const {
    return static_cast<TensorRole>(m_role->currentData().toInt());
}

void GradientView::setSnapshot(const TrainingSnapshot& snapshot, const ShownPrecision& precision) {
    m_snapshot = snapshot;
    m_precision = precision;
    m_hasSnapshot = !snapshot.stages.empty();
    // Names, not only their count: a CNN after an MLP of as many stages must show its own.
    bool sameNames = m_stage->count() == static_cast<int>(snapshot.stageNames.size());
    for (int i = 0; sameNames && i < m_stage->count(); ++i)
        sameNames =
            m_stage->itemText(i).toStdString() == snapshot.stageNames[static_cast<std::size_t>(i)];
    if (!sameNames) {
        const QSignalBlocker block(m_stage);
        const int keep = m_stage->currentIndex();
        m_stage->clear();
        for (const std::string& name : snapshot.stageNames)
            m_stage->addItem(QString::fromStdString(name));
        m_stage->setCurrentIndex(keep >= 0 && keep < m_stage->count() ? keep : 0);
    }
    refresh();
}

void GradientView::setWhatIfScale(double scale) {
    m_whatIfScale = scale;
    refresh();
}

void GradientView::drawBands(const FormatSpec& f) {
    const double lo = -200.0, hi = 200.0;
    const FormatBands bands = formatBands(f);
    const double flushBelow = bands.flushBelow, normalFrom = bands.normalFrom,
                 overflowAbove = bands.overflowFrom;
    auto band = [&](double x0, double x1, const QColor& color, const QString& tip) {
        auto* rect = new QCPItemRect(m_plot);
        rect->topLeft->setTypeX(QCPItemPosition::ptPlotCoords);
        rect->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
        rect->bottomRight->setTypeX(QCPItemPosition::ptPlotCoords);
        rect->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
        rect->topLeft->setCoords(x0, 0.0);
        rect->bottomRight->setCoords(x1, 1.0);
        rect->setPen(Qt::NoPen);
        rect->setBrush(color);
        rect->setClipToAxisRect(true);
        rect->setLayer(QStringLiteral("background"));
        Q_UNUSED(tip);
    };
    band(lo, flushBelow, kFlush, tr("flushed to zero"));
    if (normalFrom > flushBelow)
        band(flushBelow, normalFrom, kSub, tr("subnormal"));
    band(normalFrom, overflowAbove, kNormal, tr("normal"));
    band(overflowAbove, hi, kOverflow, tr("overflow"));
}

void GradientView::drawOverlays() {
    const QColor colors[] = {QColor(30, 100, 220), QColor(200, 80, 20), QColor(20, 150, 150),
                             QColor(150, 40, 150)};
    int i = 0;
    for (const auto& [name, box] : m_overlayBoxes) {
        const QColor color = colors[i++ % 4];
        if (!box->isChecked())
            continue;
        const FormatSpec f = parseFormat(name);
        for (double x : {std::log2(f.minPositive()) - 1.0, std::log2(f.minNormal()),
                         std::log2(f.maxFinite())}) {
            auto* line = new QCPItemStraightLine(m_plot);
            line->point1->setCoords(x, 0);
            line->point2->setCoords(x, 1);
            line->setPen(QPen(color, 1, Qt::DashLine));
        }
        auto* label = new QCPItemText(m_plot);
        label->position->setTypeX(QCPItemPosition::ptPlotCoords);
        label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        label->position->setCoords(std::log2(f.minNormal()), 0.05 + 0.06 * (i - 1));
        label->setText(QString::fromStdString(name));
        label->setColor(color);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    }
}

GradientView::ScaleNote GradientView::scaleNote(int stage, TensorRole r,
                                                const FormatSpec& format) const {
    const ShownPrecision stagePrecision = m_precision.forStage(stage, m_snapshot.stageNames);
    const QString policy = QString::fromLatin1(toString(stagePrecision.scalingPolicy));
    const double stepScale = m_snapshot.scalars.scale;
    if (!lossScaleMovesCast(stagePrecision.scalingPolicy, r, format.exponentBits)) {
        if (!isGradient(r)) // weights, activations, the update's tensors: no loss scale
            return {1.0, tr("log2 |x|"), QString()};
        return {1.0,
                tr("log2 |x|  (as scaled by the %1 policy: the loss scale does not move it)")
                    .arg(policy),
                tr(" scaled by the %1 policy").arg(policy)};
    }
    if (m_precision.scalingPolicy == ScalingPolicy::PerLayer) {
        // Each step picks the layers' factors from its own gradients (at least 1, capped), so
        // at another loss scale they would differ: no preview, the next step shows it.
        const double carried = m_snapshot.stages[static_cast<std::size_t>(stage)].gradientScale;
        QString line = tr(" at scale 2^%1 (loss scale 2^%2, per-layer factors 2^%3)")
                           .arg(std::log2(carried))
                           .arg(std::log2(stepScale))
                           .arg(std::log2(carried / stepScale));
        if (m_whatIfScale != stepScale)
            line += tr(", the slider's 2^%1 from the next step").arg(std::log2(m_whatIfScale));
        return {1.0, tr("log2 |x|  (after the loss scale and the per-layer factors)"), line};
    }
    return {m_whatIfScale / stepScale, tr("log2 |x|  (after the loss scale)"),
            tr(" at loss scale 2^%1").arg(std::log2(m_whatIfScale))};
}

void GradientView::refresh() {
    m_plot->clearItems();
    const int stage = m_stage->currentIndex();
    if (!m_hasSnapshot || stage < 0 || stage >= static_cast<int>(m_snapshot.stages.size())) {
        m_bars->data()->clear();
        m_fractions = {};
        m_counters->setText(tr("Press Train or Step to see the values of each layer."));
        m_caption.clear();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        emit shown();
        return;
    }
    const TensorRole r = role();
    const QuantStats& stats = m_snapshot.stages[static_cast<std::size_t>(stage)].role(r);
    const FormatSpec& format = m_precision.format(stage, m_snapshot.stageNames, r);
    const ScaleNote note = scaleNote(stage, r, format);
    const double factor = note.previewShift;
    m_plot->xAxis->setLabel(note.axisLabel);

    drawBands(format);
    drawOverlays();
    QVector<double> keys, values;
    const double total = std::max<double>(1.0, static_cast<double>(stats.total()));
    double xmin = std::log2(format.minPositive()) - 6, xmax = std::log2(format.maxFinite()) + 4;
    for (int b = 1; b <= kHistLogBins; ++b) {
        const auto n = stats.histogram[static_cast<std::size_t>(b)];
        if (n == 0)
            continue;
        const double x = shiftedBinCentreLog2(b, factor);
        keys.push_back(x);
        values.push_back(static_cast<double>(n) / total);
        xmin = std::min(xmin, x - 2);
        xmax = std::max(xmax, x + 2);
    }
    m_bars->setData(keys, values, true);
    m_plot->xAxis->setRange(std::max(xmin, -160.0), std::min(xmax, 140.0));
    double ymax = 0.0;
    for (double v : values)
        ymax = std::max(ymax, v);
    m_plot->yAxis->setRange(0.0, std::max(ymax * 1.15, 1e-3));
    m_plot->replot(QCustomPlot::rpQueuedReplot);

    // At the scale the step ran with, the exact counts; at another, the histogram's estimate.
    m_fractions = factor == 1.0 ? measuredFractions(stats) : whatIf(stats, format, factor);
    const auto pct = [](double v) { return QString::number(100.0 * v, 'f', 2) + QLatin1Char('%'); };
    // The cast's error, measured at the step: shown at the step's own scale only, since the
    // slider's what-if re-estimates the classes from the histogram but not the error.
    QString error;
    if (stats.error.measured() && factor != 1.0)
        error = tr(" &nbsp;·&nbsp; SQNR: measured at the step's scale only &nbsp;");
    else if (stats.error.measured())
        error = tr(" &nbsp;·&nbsp; SQNR %1 dB, norm %2%3% &nbsp;")
                    .arg(std::isinf(stats.error.sqnrDb())
                             ? tr("exact (inf)")
                             : QString::number(stats.error.sqnrDb(), 'f', 1))
                    .arg(stats.error.normRelativeError() >= 0 ? QStringLiteral("+") : QString())
                    .arg(100.0 * stats.error.normRelativeError(), 0, 'f', 2);
    // Flushed and the other classes as shares of the nonzero values, the one definition of
    // "flushed" (QuantStats::flushedShare; README): a ReLU's true zeros do not dilute them.
    const WhatIfFractions::OfNonzero& nz = m_fractions.ofNonzero;
    m_counters->setText(
        tr("<b>%1</b> in <b>%2</b>%3: &nbsp; true zeros %4 of all; of the nonzero: &nbsp; "
           "<span style='color:#c03030'>flushed %5</span> &nbsp;·&nbsp; subnormal %6 &nbsp;·&nbsp; "
           "normal %7 &nbsp;·&nbsp; overflow %8 &nbsp;·&nbsp; NaN %9%10 &nbsp; (step %11)")
            .arg(tr(roleTitle(r)), QString::fromStdString(format.name), note.sharesLine)
            .arg(pct(m_fractions.zero), pct(nz.flushed), pct(nz.subnormal), pct(nz.normal),
                 pct(nz.overflow), pct(nz.nan), error)
            .arg(m_snapshot.statsStep));
    // What an exported figure says it shows, in plain text ("layer fc1: activation gradients
    // in fp16 at loss scale 2^10, step 16; flushed 1.17%").
    // The shares line's plain text loses its leading space ("in fp16at loss scale": issue 65
    // item 32), so the space is put back here.
    const QString scale = QTextDocumentFragment::fromHtml(note.sharesLine).toPlainText().trimmed();
    m_caption =
        tr("layer %1: %2 in %3%4, step %5; flushed %6 of the nonzero")
            .arg(QString::fromStdString(m_snapshot.stageNames[static_cast<std::size_t>(stage)]),
                 tr(roleTitle(r)), QString::fromStdString(format.name),
                 scale.isEmpty() ? QString() : QLatin1Char(' ') + scale)
            .arg(m_snapshot.statsStep)
            .arg(pct(nz.flushed));
    emit shown();
}

} // namespace plab
