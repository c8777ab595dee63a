// BlocksView drawing: two QCustomPlot bar charts with the representable range shaded.
#include "blocks_view.h"
#include "percent_text.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include <cmath>

namespace plab {
namespace {

QCustomPlot* makePlot(QWidget* parent, const QString& x, const QString& y) {
    auto* plot = new QCustomPlot(parent);
    plot->setMinimumHeight(100); // an 800x600 window has room for 100 px under the histogram
    plot->xAxis->setLabel(x);
    plot->yAxis->setLabel(y);
    plot->setNotAntialiasedElements(QCP::aeAll);
    return plot;
}

QCPBars* makeBars(QCustomPlot* plot, const QColor& color, double width) {
    auto* bars = new QCPBars(plot->xAxis, plot->yAxis);
    bars->setWidth(width);
    bars->setPen(Qt::NoPen);
    bars->setBrush(color);
    return bars;
}

// A light band [x0, x1] behind the bars.
void shade(QCustomPlot* plot, double x0, double x1, const QColor& color) {
    auto* rect = new QCPItemRect(plot);
    rect->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    rect->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    rect->topLeft->setCoords(x0, 0.0);
    rect->bottomRight->setCoords(x1, 1.0);
    rect->setPen(Qt::NoPen);
    rect->setBrush(color);
    rect->setClipToAxisRect(true);
    rect->setLayer(QStringLiteral("background"));
}

// A dashed line at x, named on a light box in the plot's top right corner, under the label
// `above` if given (labels at their lines, a binade apart, hid each other and sat under bars).
QCPItemText* marker(QCustomPlot* plot, double x, const QColor& color, const QString& text,
                    QCPItemText* above = nullptr) {
    auto* line = new QCPItemStraightLine(plot);
    line->point1->setCoords(x, 0);
    line->point2->setCoords(x, 1);
    line->setPen(QPen(color, 1, Qt::DashLine));
    auto* label = new QCPItemText(plot);
    label->position->setType(QCPItemPosition::ptAxisRectRatio);
    label->position->setCoords(0.98, 0.03);
    if (above != nullptr) {
        label->position->setParentAnchorY(above->bottom);
        label->position->setCoords(0.98, 0.0); // y: pixels below that label
    }
    label->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    label->setText(text);
    label->setColor(color);
    label->setBrush(QColor(255, 255, 255, 210)); // readable over bars and bands
    return label;
}

// log2 of the smallest and largest scale the scheme's scale format stores.
std::pair<double, double> scaleRange(const BlockScheme& scheme) {
    switch (scheme.kind) {
    case BlockScaleKind::Mx:
        return {-127.0, 127.0};
    case BlockScaleKind::Nvfp4:
        return {-9.0, std::log2(448.0)};
    case BlockScaleKind::Fp32:
        break;
    }
    return {-149.0, 128.0};
}

} // namespace

BlocksView::BlocksView(QWidget* parent) : QWidget(parent) {
    m_scalePlot = makePlot(this, tr("log2 block scale"), tr("blocks"));
    m_rangePlot =
        makePlot(this, tr("binades inside a block (log2 amax / smallest nonzero)"), tr("blocks"));
    m_scaleBars = makeBars(m_scalePlot, palette().color(QPalette::Highlight), 0.25);
    m_rangeBars = makeBars(m_rangePlot, palette().color(QPalette::Highlight), 0.25);
    m_scalePlot->setToolTip(tr("The scale each block stored, decoded. Shaded: what the scale "
                               "format can hold (E8M0 for MX, E4M3 for NVFP4, FP32 for blocks "
                               "of 128)."));
    m_rangePlot->setToolTip(tr("How many binades each block's values span. Past the element "
                               "format's span, a block's smallest values flush although the "
                               "block has a scale of its own."));
    m_counts = new QLabel(this);
    m_counts->setWordWrap(true);
    m_counts->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* plots = new QHBoxLayout;
    plots->addWidget(m_scalePlot, 1);
    plots->addWidget(m_rangePlot, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(plots, 1);
    layout->addWidget(m_counts);
    clear(tr("Train with a block-scaled recipe (mxfp8-e4m3, nvfp4, fp8-blockwise, ...) to see "
             "its blocks."));
}

QString BlocksView::countsText() const {
    return m_counts->text();
}

void BlocksView::clear(const QString& why) {
    m_scaleBars->data()->clear();
    m_rangeBars->data()->clear();
    m_scalePlot->clearItems();
    m_rangePlot->clearItems();
    m_counts->setText(why);
    m_scalePlot->replot(QCustomPlot::rpQueuedReplot);
    m_rangePlot->replot(QCustomPlot::rpQueuedReplot);
}

void BlocksView::show(const TrainingSnapshot& snapshot, const ShownPrecision& runPrecision,
                      int stage, TensorRole role) {
    if (stage < 0 || stage >= static_cast<int>(snapshot.stages.size()))
        return clear(tr("Press Train or Step to see the blocks of each layer."));
    const ShownPrecision precision = runPrecision.forStage(stage, snapshot.stageNames);
    const std::optional<BlockScheme>& scheme = precision.blockScheme;
    if (!scheme)
        return clear(tr("Not block-scaled: the scaling policy is %1 (mx, nvfp4 and blockwise "
                        "scale in blocks).")
                         .arg(QString::fromLatin1(toString(precision.scalingPolicy).data())));
    const BlockStats& b =
        snapshot.stages[static_cast<std::size_t>(stage)].blocks[static_cast<std::size_t>(role)];
    const FormatSpec& element = precision.format(stage, snapshot.stageNames, role);
    if (b.empty())
        return clear(!element.hasNarrowRange()
                         ? tr("%1 is cast plainly: a format with FP32's range needs no scale.")
                               .arg(QString::fromStdString(element.name))
                         : tr("This tensor is not cast in blocks (weights, activations and "
                              "activation gradients are)."));

    m_scalePlot->clearItems();
    m_rangePlot->clearItems();
    const auto [scaleLo, scaleHi] = scaleRange(*scheme);
    shade(m_scalePlot, scaleLo, scaleHi, QColor(60, 170, 90, 45));
    QVector<double> keys, values;
    double lo = scaleHi, hi = scaleLo, top = 1.0;
    for (int bin = 1; bin <= kHistLogBins; ++bin)
        if (const auto n = b.scaleHistogram[static_cast<std::size_t>(bin)]) {
            const double x = histogramBinLowerLog2(bin) + 0.125;
            keys.push_back(x);
            values.push_back(static_cast<double>(n));
            lo = std::min(lo, x);
            hi = std::max(hi, x);
            top = std::max(top, static_cast<double>(n));
        }
    m_scaleBars->setData(keys, values, true);
    m_scalePlot->xAxis->setRange(std::min(lo, hi) - 4, std::max(lo, hi) + 4);
    m_scalePlot->yAxis->setRange(0, top * 1.15);

    keys.clear();
    values.clear();
    top = 1.0;
    double right = 8.0;
    for (int bin = 0; bin < kRangeBins; ++bin)
        if (const auto n = b.rangeHistogram[static_cast<std::size_t>(bin)]) {
            const double x = static_cast<double>(bin) / kRangeBinsPerBinade + 0.125;
            keys.push_back(x);
            values.push_back(static_cast<double>(n));
            top = std::max(top, static_cast<double>(n));
            right = std::max(right, x + 1);
        }
    const double span = std::log2(element.maxFinite() / element.minPositive());
    const double normalSpan = std::log2(element.maxFinite() / element.minNormal());
    shade(m_rangePlot, 0, span, QColor(60, 170, 90, 45));
    QCPItemText* normals = marker(m_rangePlot, normalSpan, QColor(200, 120, 20),
                                  tr("- - %1 normals: %2 binades")
                                      .arg(QString::fromStdString(element.name))
                                      .arg(normalSpan, 0, 'f', 1));
    marker(m_rangePlot, span, QColor(200, 40, 40),
           tr("- - values flush past %1 binades").arg(span, 0, 'f', 1), normals);
    m_rangeBars->setData(keys, values, true);
    m_rangePlot->xAxis->setRange(0, std::max(right, span + 2));
    m_rangePlot->yAxis->setRange(0, top * 1.15);
    m_scalePlot->replot(QCustomPlot::rpQueuedReplot);
    m_rangePlot->replot(QCustomPlot::rpQueuedReplot);

    m_counts->setText(
        tr("%1 in blocks of %2 (scale %3), step %4: %5 blocks · all zero %6 · wholly flushed %7 · "
           "with a saturated element %8 · flushed inside live blocks %9 of their values")
            .arg(QString::fromStdString(element.name))
            .arg(scheme->blockSize)
            .arg(QString::fromStdString(scaleFormatName(*scheme)))
            .arg(snapshot.statsStep)
            .arg(b.blocks)
            .arg(b.zeroBlocks)
            .arg(percentText(b.flushedBlockShare()), percentText(b.saturatedBlockShare()),
                 percentText(b.flushedInLiveShare())));
}

} // namespace plab
