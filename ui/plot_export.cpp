// exportPlot: QCustomPlot drawn into buffers (PNG via a pixmap, PDF via QPdfWriter, SVG via
// QSvgGenerator), then each buffer written as a whole by the record's own writer.
#include "plot_export.h"

#include "record/record_file.h"

#include <qcustomplot.h>

#include <QBuffer>
#include <QFontMetrics>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QSvgGenerator>

namespace plab {
namespace {

QByteArray png(QCustomPlot* plot, int w, int h) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    plot->toPixmap(w, h, 2.0).save(&buffer, "PNG");
    return bytes;
}

// As QCustomPlot::savePdf: one page of exactly w x h points, no margins, vector painting.
QByteArray pdf(QCustomPlot* plot, int w, int h, const QString& title) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    {
        QPdfWriter writer(&buffer);
        writer.setCreator(QStringLiteral("Precision Lab"));
        writer.setTitle(title);   // the document's Title, as on the page
        writer.setResolution(72); // a device pixel per point: the plot fills the page
        QPageLayout layout;
        layout.setMode(QPageLayout::FullPageMode);
        layout.setOrientation(QPageLayout::Portrait);
        layout.setMargins(QMarginsF(0, 0, 0, 0));
        layout.setPageSize(
            QPageSize(QSize(w, h), QPageSize::Point, QString(), QPageSize::ExactMatch));
        writer.setPageLayout(layout);
        QCPPainter painter;
        if (!painter.begin(&writer))
            return {};
        plot->toPainter(&painter, w, h);
        painter.end();
    }
    return bytes;
}

QByteArray svg(QCustomPlot* plot, int w, int h, const QString& title) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator generator;
    generator.setTitle(title.toHtmlEscaped()); // written as it is given: "->" in a layer name
                                               // would make an SVG no XML reader takes
    generator.setOutputDevice(&buffer);
    generator.setSize(QSize(w, h));
    generator.setViewBox(QRect(0, 0, w, h));
    QCPPainter painter;
    if (!painter.begin(&generator))
        return {};
    plot->toPainter(&painter, w, h);
    painter.end();
    return bytes;
}

} // namespace

QString writeWholeFile(const QString& path, const QByteArray& bytes) {
    try {
        writeFileAtomically(path.toStdString(), bytes.toStdString());
    } catch (const RecordError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString wrappedTitle(const QString& title, const QFont& font, int width) {
    const QFontMetrics metrics(font);
    QString text, line;
    for (const QString& word : title.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
        if (!line.isEmpty() && metrics.horizontalAdvance(longer) > width) {
            text += line + QLatin1Char('\n');
            line = word;
        } else {
            line = longer;
        }
    }
    return text + line;
}

QString exportPlot(QCustomPlot* plot, const QString& base, int w, int h, const QString& title) {
    // The title on the files only: a row above the plot while it is drawn into them, in lines
    // that fit the figure (issue 65 item 32: one centred line was cut at both ends).
    QCPTextElement* heading = nullptr;
    if (!title.isEmpty()) {
        plot->plotLayout()->insertRow(0);
        QFont font = plot->font();
        font.setPointSizeF(font.pointSizeF() * 0.9);
        heading = new QCPTextElement(plot, wrappedTitle(title, font, w - 24), font);
        plot->plotLayout()->addElement(0, 0, heading);
        plot->plotLayout()->setRowStretchFactor(0, 0.001); // as tall as its text
    }
    const std::pair<QString, QByteArray> files[] = {
        {base + QStringLiteral(".png"), png(plot, w, h)},
        {base + QStringLiteral(".pdf"), pdf(plot, w, h, title)},
        {base + QStringLiteral(".svg"), svg(plot, w, h, title)}};
    if (heading) {
        plot->plotLayout()->remove(heading);
        plot->plotLayout()->simplify();
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
    for (const auto& [path, bytes] : files) {
        if (bytes.isEmpty())
            return QObject::tr("%1: cannot draw the plot").arg(path);
        if (const QString error = writeWholeFile(path, bytes); !error.isEmpty())
            return error;
    }
    return {};
}

} // namespace plab
