// FlushHeatmapView: one QCPColorMap cell per (statistics step, layer).
#include "flush_heatmap_view.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace plab {

FlushHeatmapView::FlushHeatmapView(QWidget* parent) : QWidget(parent) {
    m_plot = new QCustomPlot(this);
    m_plot->setMinimumHeight(100);
    m_plot->xAxis->setLabel(tr("step"));
    m_plot->yAxis->setLabel(tr("layer"));
    m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    auto* scale = new QCPColorScale(m_plot);
    scale->setLabel(tr("flushed share of activation gradients"));
    m_plot->plotLayout()->addElement(0, 1, scale);
    m_map->setColorScale(scale);
    QCPColorGradient gradient(QCPColorGradient::gpThermal);
    m_map->setGradient(gradient);
    m_map->setDataRange(QCPRange(0.0, 1.0));
    m_map->setInterpolate(false);
    m_plot->setToolTip(tr("Each cell: of the nonzero activation gradients arriving at that layer "
                          "on that step, the share the cast flushed to zero"));
    m_logScale = new QCheckBox(tr("log colour scale"), this);
    m_logScale->setToolTip(tr("Colour by the share's order of magnitude (0.01% to 100%): small "
                              "shares such as 1.8% stand out from 0"));
    connect(m_logScale, &QCheckBox::toggled, this, &FlushHeatmapView::setLogScale);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_logScale);
    layout->addWidget(m_plot, 1);
}

void FlushHeatmapView::setLogScale(bool on) {
    if (m_logScale->isChecked() != on)
        m_logScale->setChecked(on); // comes back here through toggled
    QCPColorGradient gradient = m_map->gradient();
    gradient.setNanHandling(QCPColorGradient::nhLowestColor); // log10(0): the lowest colour
    m_map->setGradient(gradient);
    m_map->setDataScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_map->setDataRange(on ? QCPRange(1e-4, 1.0) : QCPRange(0.0, 1.0));
    setColumns(m_columns, m_stageNames); // zeros become NaN on the log scale, and back
    if (QCPColorScale* scale = m_map->colorScale())
        scale->axis()->setTicker(on ? QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog)
                                    : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void FlushHeatmapView::setQuantity(const QString& label, const QString& tooltip) {
    m_quantity = label;
    const bool share = label.isEmpty();
    if (!share && logScale())
        setLogScale(false);
    m_logScale->setVisible(share);
    m_map->colorScale()->setLabel(share ? tr("flushed share of activation gradients") : label);
    QCPColorGradient gradient = m_map->gradient();
    gradient.setNanHandling(share ? QCPColorGradient::nhLowestColor
                                  : QCPColorGradient::nhTransparent);
    m_map->setGradient(gradient);
    if (share)
        m_map->setDataRange(QCPRange(0.0, 1.0));
    m_plot->setToolTip(share ? tr("Each cell: of the nonzero activation gradients arriving at "
                                  "that layer on that step, the share the cast flushed to zero")
                             : tooltip);
}

bool FlushHeatmapView::logScale() const {
    return m_map->dataScaleType() == QCPAxis::stLogarithmic;
}

// The x axis is the step: cells sit on an even grid of steps from the first column's to the
// last's, each showing the newest column at or before its step. Columns need not be evenly
// spaced (statistics every k steps, the history thinned as the run grows, a pause's extra
// statistics), and spreading them evenly instead would put step 4,000 where step 2,000 is.
void FlushHeatmapView::setColumns(const std::vector<TrainingController::FlushColumn>& columns,
                                  const std::vector<std::string>& stageNames) {
    if (&columns != &m_columns)
        m_columns = columns;
    if (&stageNames != &m_stageNames)
        m_stageNames = stageNames;
    const int rows = columns.empty() ? 1 : static_cast<int>(columns.front().flushed.size());
    const double first = columns.empty() ? 0.0 : static_cast<double>(columns.front().step);
    const double last = columns.empty() ? 1.0 : static_cast<double>(columns.back().step);
    const auto span = static_cast<std::int64_t>(last - first);
    const int cells = static_cast<int>(std::clamp<std::int64_t>(span + 1, 1, kMaxCells));
    m_map->data()->setSize(cells, rows);
    m_map->data()->setRange(QCPRange(first, std::max(last, first + 1)),
                            QCPRange(0, std::max(rows - 1, 1)));
    std::size_t column = 0;
    for (int c = 0; c < cells && !columns.empty(); ++c) {
        const double step = cells == 1 ? first : first + (last - first) * c / (cells - 1);
        while (column + 1 < columns.size() &&
               static_cast<double>(columns[column + 1].step) <= step + 1e-9)
            ++column;
        const std::vector<double>& flushed = columns[column].flushed;
        for (int r = 0; r < rows && r < static_cast<int>(flushed.size()); ++r) {
            const double v = flushed[static_cast<std::size_t>(r)];
            // On the log scale a zero is NaN, drawn in the lowest colour (its log is -Inf).
            m_map->data()->setCell(c, r, logScale() && !(v > 0.0) ? qQNaN() : v);
        }
    }
    if (!m_quantity.isEmpty()) { // the colours span the values drawn
        double lo = qInf(), hi = -qInf();
        for (const auto& drawn : columns)
            for (double v : drawn.flushed)
                if (std::isfinite(v)) {
                    lo = std::min(lo, v);
                    hi = std::max(hi, v);
                }
        if (lo <= hi)
            m_map->setDataRange(QCPRange(lo, hi > lo ? hi : lo + 1.0));
    }
    // Each row by its layer's name (a module's, for a PyTorch run), its tail where it is long
    // ("…h.11.mlp.c_proj"): the end tells the layers of one model apart.
    QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
    for (int r = 0; r < static_cast<int>(stageNames.size()); ++r) {
        const QString name = QString::fromStdString(stageNames[static_cast<std::size_t>(r)]);
        ticker->addTick(r, name.size() > kMaxLabelLength
                               ? QStringLiteral("…") + name.right(kMaxLabelLength - 1)
                               : name);
    }
    m_plot->yAxis->setTicker(ticker);
    m_plot->rescaleAxes();
    // Whole rows: each layer's row from half a row below its tick to half above (the first and
    // last rows were drawn half height when the axis ended at their centres).
    if (rows > 1)
        m_plot->yAxis->setRange(-0.5, rows - 0.5);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QStringList FlushHeatmapView::rowLabels() const {
    const auto ticker = m_plot->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    return ticker ? QStringList(ticker->ticks().values()) : QStringList();
}

double FlushHeatmapView::valueAt(double step, int layer) const {
    int key = 0, value = 0;
    m_map->data()->coordToCell(step, layer, &key, &value);
    const double v = m_map->data()->cell(key, value);
    return std::isnan(v) && logScale() ? 0.0 : v;
}

} // namespace plab
