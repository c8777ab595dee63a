// FormatInspector: the reference quantiser and the codec, one row per named format.
#include "format_inspector.h"

#include "numerics/codec.h"
#include "numerics/reference_quantize.h"
#include "recipe_editor.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

namespace plab {

namespace {

// The next value from q (a value the format holds) in a format too wide for a table of its values
// (FP32, TF32, wide custom formats): one unit in the last place of q's binade, or of the binade
// below when stepping down from a power of two; nullopt past the largest finite value, or below
// zero in an unsigned format.
std::optional<double> wideNeighbour(const FormatSpec& f, double q, int direction) {
    if (q < 0.0 || (q == 0.0 && direction < 0)) {
        if (!f.isSigned)
            return std::nullopt;
        const std::optional<double> mirrored = wideNeighbour(f, -q, -direction);
        return mirrored ? std::optional<double>(-*mirrored) : std::nullopt;
    }
    if (q == 0.0)
        return f.minPositive();
    int e = 0;
    const double m = std::frexp(q, &e); // q = m 2^e, m in [0.5, 1)
    const int binade = e - 1;
    int ulp = std::max(binade, f.minNormalExponent()) - f.mantissaBits;
    if (direction < 0 && m == 0.5 && binade > f.minNormalExponent())
        --ulp; // below a power of two: the finer binade
    if (direction < 0 && !f.subnormals && q == f.minNormal())
        return f.hasZero ? std::optional<double>(0.0) : std::nullopt;
    const double next = q + direction * std::ldexp(1.0, ulp);
    if (next > f.maxFinite())
        return std::nullopt;
    return next;
}

// Every finite value of a format of at most 16 bits, ascending, with one zero; cached per name.
const std::vector<float>& sortedFiniteValues(const FormatSpec& f) {
    static std::map<std::string, std::vector<float>> cache;
    auto [it, inserted] = cache.try_emplace(f.name);
    if (inserted) {
        for (std::uint32_t code = 0; code < (1u << f.totalBits()); ++code) {
            const float v = decode(f, code);
            if (std::isfinite(v))
                it->second.push_back(v == 0.0f ? 0.0f : v);
        }
        std::sort(it->second.begin(), it->second.end());
        it->second.erase(std::unique(it->second.begin(), it->second.end()), it->second.end());
    }
    return it->second;
}

// A value as the table shows it: -0 keeps its sign (formats with a negative zero keep it).
QString valueText(float v, int digits) {
    if (v == 0.0f)
        return std::signbit(v) ? QStringLiteral("-0") : QStringLiteral("0");
    return QString::number(static_cast<double>(v), 'g', digits);
}

} // namespace

FormatInspector::FormatInspector(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Format inspector"));
    resize(980, 640);
    m_value = new QLineEdit(QStringLiteral("0.1"), this);
    m_value->setToolTip(tr("Any float32 value: 0.1, -3e-5, 65519, inf, nan"));
    m_rounding = new QComboBox(this);
    for (Rounding r : {Rounding::NearestEven, Rounding::NearestAway, Rounding::TowardZero})
        m_rounding->addItem(QString::fromLatin1(toString(r).data()));
    m_custom = new QLineEdit(this);
    m_custom->setPlaceholderText(tr("e.g. e5m2:bias=16:nosub, e3m4"));
    m_custom->setToolTip(
        tr("Custom formats to add below the named ones: eXmY[:bias=B][:sub|:nosub]"
           "[:ieee|:fn|:fnuz|:finite][:signed|:unsigned][:nozero], comma separated"));
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Value"), this));
    top->addWidget(m_value, 1);
    top->addWidget(new QLabel(tr("Rounding"), this));
    top->addWidget(m_rounding);
    top->addWidget(new QLabel(tr("Custom formats"), this));
    top->addWidget(m_custom, 1);
    // Why an input was refused, in words where it is seen (a red border alone says nothing).
    m_message = new QLabel(this);
    m_message->setStyleSheet(QStringLiteral("QLabel { color: #c03030; }"));
    m_message->setWordWrap(true);
    m_message->hide();

    m_table = new QTableWidget(this);
    m_table->setColumnCount(7);
    m_table->setHorizontalHeaderLabels({tr("Format"), tr("Value"), tr("Bits"), tr("Class"),
                                        tr("Relative error"), tr("Next below"), tr("Next above")});
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);

    m_lineFormat = new QComboBox(this);
    for (const FormatSpec& f : namedFormats())
        if (f.totalBits() <= 8)
            m_lineFormat->addItem(QString::fromStdString(f.name));
    m_line = new QCustomPlot(this);
    m_line->setMinimumHeight(150);
    m_line->xAxis->setLabel(tr("log2 of the representable positive values"));
    m_line->yAxis->setVisible(false);
    auto* lineRow = new QHBoxLayout;
    lineRow->addWidget(new QLabel(tr("Number line of"), this));
    lineRow->addWidget(m_lineFormat);
    lineRow->addStretch(1);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_message);
    layout->addWidget(m_table, 2);
    layout->addLayout(lineRow);
    layout->addWidget(m_line, 1);

    connect(m_value, &QLineEdit::textChanged, this, &FormatInspector::refresh);
    connect(m_custom, &QLineEdit::textChanged, this, &FormatInspector::refresh);
    connect(m_rounding, &QComboBox::currentIndexChanged, this, &FormatInspector::refresh);
    connect(m_lineFormat, &QComboBox::currentIndexChanged, this, &FormatInspector::drawNumberLine);
    refresh();
    drawNumberLine();
}

void FormatInspector::setValueText(const QString& text) {
    m_value->setText(text);
}

void FormatInspector::setCustomFormatsText(const QString& text) {
    m_custom->setText(text);
}

QString parseInspectorValue(const QString& input, float* value) {
    const QString text = input.trimmed();
    const QString word = text.toLower();
    const bool negative = word.startsWith(QLatin1Char('-'));
    const QString magnitude = (negative || word.startsWith(QLatin1Char('+'))) ? word.mid(1) : word;
    if (magnitude == QLatin1String("inf") || magnitude == QLatin1String("infinity")) {
        *value = negative ? -INFINITY : INFINITY;
        return {};
    }
    if (magnitude == QLatin1String("nan")) {
        *value = std::nanf("");
        return {};
    }
    const QString shown = text.size() > 40 ? text.left(40) + QStringLiteral("...") : text;
    bool ok = false;
    const double d = text.toDouble(&ok); // false for words, and for numbers past double's range
    // A decimal number too large for a double (500 digits) is a number all the same.
    static const QRegularExpression decimal(
        QStringLiteral("^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"));
    if ((!ok || !std::isfinite(d)) && decimal.match(text).hasMatch())
        return QObject::tr("\"%1\" (%2 characters) is beyond float32's range (largest "
                           "3.4028235e38); type inf for infinity")
            .arg(shown)
            .arg(text.size());
    if (!ok || !std::isfinite(d))
        return QObject::tr("\"%1\" is not a number (expected e.g. 0.1, -3e-5, 65519, inf, nan)")
            .arg(shown);
    const float f = static_cast<float>(d);
    if (std::isinf(f))
        return QObject::tr("\"%1\" is beyond float32's range (largest 3.4028235e38); type inf "
                           "for infinity")
            .arg(shown);
    if (f == 0.0f && d != 0.0)
        return QObject::tr("\"%1\" rounds to 0 in float32 (smallest 1.4e-45)").arg(shown);
    *value = f;
    return {};
}

double inspectorRelativeError(float x, float q) {
    if (std::isnan(x))
        return std::nan("");
    if (std::isinf(x))
        return q == x ? 0.0 : INFINITY;
    if (!std::isfinite(q))
        return INFINITY; // a finite value became Inf or NaN
    if (x == 0.0f)
        return q == 0.0f ? 0.0 : INFINITY;
    return std::fabs((static_cast<double>(q) - x) / x);
}

void FormatInspector::refresh() {
    float x = 0.0f;
    m_valueError = parseInspectorValue(m_value->text(), &x);
    const bool ok = m_valueError.isEmpty();
    m_value->setStyleSheet(ok ? QString()
                              : QStringLiteral("QLineEdit { border: 1px solid #c03030; }"));
    m_value->setToolTip(ok ? tr("Any float32 value") : m_valueError);
    // The named formats, then every custom one that parses; each spec that does not is named
    // (the first bad one used to hide the rest, and the valid ones after it were dropped).
    std::vector<FormatSpec> formats = namedFormats();
    QStringList refused;
    for (const QString& spec : m_custom->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        try {
            formats.push_back(parseFormat(spec.trimmed().toStdString()));
        } catch (const std::exception& e) {
            refused
                << tr("Custom format \"%1\": %2").arg(spec.trimmed(), QString::fromUtf8(e.what()));
        }
    }
    m_customError = refused.join(QLatin1Char('\n'));
    m_custom->setStyleSheet(m_customError.isEmpty()
                                ? QString()
                                : QStringLiteral("QLineEdit { border: 1px solid #c03030; }"));
    const QString message = !ok ? m_valueError : m_customError;
    m_message->setText(message);
    m_message->setVisible(!message.isEmpty());
    if (!ok) {
        m_table->setRowCount(0); // no results of an earlier value under a refused one
        return;
    }
    m_table->setRowCount(static_cast<int>(formats.size()));
    const Rounding rounding = parseRounding(m_rounding->currentText().toStdString());
    for (int row = 0; row < static_cast<int>(formats.size()); ++row) {
        const FormatSpec& f = formats[static_cast<std::size_t>(row)];
        const QuantConfig config = QuantConfig::forFormat(f, rounding);
        QuantClass cls;
        const float q = quantizeReference(config, x, 0, &cls);
        const std::uint32_t code = encode(config, x);
        const double err = inspectorRelativeError(x, q);
        auto neighbour = [&](int direction) -> QString {
            if (std::isnan(q))
                return QStringLiteral("-");
            if (std::isinf(q)) // overflowed: toward zero, the largest finite value is next
                return (q > 0) == (direction < 0)
                           ? valueText(static_cast<float>(q > 0 ? f.maxFinite() : -f.maxFinite()),
                                       8)
                           : QStringLiteral("-");
            if (f.totalBits() > 16) {
                const std::optional<double> next = wideNeighbour(f, q, direction);
                return next ? valueText(static_cast<float>(*next), 9) : QStringLiteral("-");
            }
            const std::vector<float>& values = sortedFiniteValues(f);
            // Value order, not code order: codes wrap around zero and the sign bit.
            if (direction > 0) {
                const auto it = std::upper_bound(values.begin(), values.end(), q);
                return it == values.end() ? QStringLiteral("-") : valueText(*it, 8);
            }
            const auto it = std::lower_bound(values.begin(), values.end(), q);
            return it == values.begin() ? QStringLiteral("-") : valueText(*std::prev(it), 8);
        };
        const QStringList cells = {QString::fromStdString(f.name),
                                   valueText(q, 9),
                                   QString::fromStdString(codeToHex(f, code)),
                                   QString::fromLatin1(toString(cls)),
                                   std::isnan(err)   ? QStringLiteral("-")
                                   : std::isinf(err) ? QStringLiteral("inf")
                                                     : QString::number(err, 'e', 3),
                                   neighbour(-1),
                                   neighbour(+1)};
        for (int c = 0; c < cells.size(); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setToolTip(formatSummary(f));
            m_table->setItem(row, c, item);
        }
    }
}

void FormatInspector::drawNumberLine() {
    m_line->clearGraphs();
    const FormatSpec f = parseFormat(m_lineFormat->currentText().toStdString());
    QVector<double> xs, ys;
    const std::uint32_t positiveCodes = 1u << (f.exponentBits + f.mantissaBits);
    for (std::uint32_t code = 1; code < positiveCodes; ++code) {
        const float v = decode(f, code);
        if (std::isfinite(v) && v > 0.0f) {
            xs.push_back(std::log2(static_cast<double>(v)));
            ys.push_back(0.0);
        }
    }
    QCPGraph* g = m_line->addGraph();
    g->setLineStyle(QCPGraph::lsNone);
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssPlus, 8));
    g->setData(xs, ys);
    m_line->xAxis->setRange(xs.isEmpty() ? -1 : xs.front() - 1, xs.isEmpty() ? 1 : xs.back() + 1);
    m_line->yAxis->setRange(-1, 1);
    m_line->replot();
}

} // namespace plab
