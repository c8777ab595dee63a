// FormatWhatIfTable: compareFormats() into a QTableWidget.
#include "format_what_if_table.h"
#include "percent_text.h"

#include "stats/tensor_sample.h"
#include "stats/what_if_formats.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace plab {
namespace {

QTableWidgetItem* cell(const QString& text, bool bold, bool number) {
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    if (number)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (bold) {
        QFont f = item->font();
        f.setBold(true);
        item->setFont(f);
    }
    return item;
}

// "Activation gradients" for TensorRole::ActivationGradients.
QString roleText(TensorRole role) {
    const std::string_view name = toString(role);
    QString text = QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()))
                       .replace(QLatin1Char('_'), QLatin1Char(' '));
    text[0] = text[0].toUpper();
    return text;
}

} // namespace

FormatWhatIfTable::FormatWhatIfTable(QWidget* parent) : QWidget(parent) {
    m_caption = new QLabel(this);
    m_caption->setWordWrap(true);
    m_table = new QTableWidget(0, 5, this);
    m_table->setHorizontalHeaderLabels(
        {tr("format"), tr("flushed"), tr("subnormal"), tr("overflow"), tr("SQNR (dB)")});
    m_table->verticalHeader()->hide();
    // Compact rows: a row per format and scaling (twenty), little scrolling.
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setToolTip(tr("Shares of the nonzero values (as the shares line): flushed, nonzero "
                           "values that would become zero; subnormal; overflow. SQNR: signal over "
                           "quantisation noise, 10 log10(sum x^2 / "
                           "sum (q - x)^2). \"tensor amax\": the values first scaled by "
                           "(format max / amax) / 2^margin with the whole tensor's amax and the "
                           "run's margin (Transformer Engine's current scaling). Scaled and block "
                           "formats saturate; element formats keep their default overflow (Inf "
                           "where they have it)."));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_caption);
    layout->addWidget(m_table, 1);
    m_caption->setText(tr("Press Train or Step: each statistics step keeps a sample of every "
                          "tensor to compare the formats on."));
}

QString FormatWhatIfTable::caption() const {
    return m_caption->text();
}

void FormatWhatIfTable::show(const TrainingSnapshot& snapshot, const TrainConfig& config, int stage,
                             TensorRole role) {
    if (stage < 0 || stage >= static_cast<int>(snapshot.stages.size()))
        return;
    const auto& sample =
        snapshot.stages[static_cast<std::size_t>(stage)].samples[static_cast<std::size_t>(role)];
    const FormatSpec& inUse = config.recipe.stageConfig(stage, snapshot.stageNames, role).format;
    std::string current = inUse.name;
    // The amax policies scale the three inputs of the products (as the trainer does); a delayed
    // scale comes from past amaxes, so its row here is the current-scaling estimate.
    if (isAmaxScaling(config.scalingPolicy) && isProductInput(role) && hasTensorScaledRow(inUse))
        current = tensorScaledName(inUse.name);
    if (const std::optional<BlockScheme> scheme = config.blockScheme())
        for (const BlockFormat& f : blockFormats()) // the block format the recipe amounts to
            if (f.element.sameParameters(inUse) && f.scheme.kind == scheme->kind &&
                f.scheme.blockSize == scheme->blockSize && inUse.hasNarrowRange())
                current = f.name;
    if (snapshot.statsStep == m_step && stage == m_stage && static_cast<int>(role) == m_role &&
        current == m_current && config.amaxMargin == m_margin)
        return; // the same sample: nothing to recompute
    m_margin = config.amaxMargin;
    m_step = snapshot.statsStep;
    m_stage = stage;
    m_role = static_cast<int>(role);
    m_current = current;
    if (sample.values.empty()) {
        m_table->setRowCount(0);
        m_caption->setText(tr("No sample of this tensor: samples are kept by live runs (not in "
                              "the run record), for the cast tensors (not master weights or "
                              "optimiser state)."));
        return;
    }
    std::vector<FormatOutcome> outcomes =
        compareFormats(sample.values, sample.runLength, config.amaxMargin, sample.tensorAmax);
    // The row in use is the step's own cast: its exact counts and error over every value it
    // cast, the numbers of the shares line above (a sample's estimate contradicted them).
    const QuantStats& cast = snapshot.stages[static_cast<std::size_t>(stage)].role(role);
    if (cast.total() > 0) {
        FormatOutcome exact = recordedOutcome(current, false, cast.counts, cast.error);
        const auto same = std::find_if(outcomes.begin(), outcomes.end(),
                                       [&](const FormatOutcome& o) { return o.name == current; });
        if (same != outcomes.end()) {
            exact.blockFormat = same->blockFormat;
            exact.tensorScaled = same->tensorScaled;
            *same = exact;
        } else { // a custom format: its row first
            outcomes.insert(outcomes.begin(), exact);
        }
    }
    const bool wholeTensor = sample.values.size() < kSampleRuns * kSampleRunLength;
    // A sample's share p of n values is within 1.96 sqrt(p (1 - p) / n) of the tensor's in 95%
    // of samples (independent values); p = 1/2 bounds it.
    const double halfWidth = 1.96 * std::sqrt(0.25 / static_cast<double>(sample.values.size()));
    m_caption->setText(
        tr("%1 at step %2. <b>In use: %3</b>, its exact counts over every value the step cast "
           "(as the shares line). The other rows: %4, blocks along rows of %5.")
            .arg(QString::fromStdString(snapshot.stageNames[static_cast<std::size_t>(stage)]))
            .arg(snapshot.statsStep)
            .arg(QString::fromStdString(current))
            .arg(wholeTensor ? tr("the whole tensor (%1 values), exact").arg(sample.values.size())
                             : tr("a sample of %1 values (%2 evenly spaced runs of %3), each "
                                  "share within about ±%4 points of the whole tensor's (95%)")
                                   .arg(sample.values.size())
                                   .arg(kSampleRuns)
                                   .arg(kSampleRunLength)
                                   .arg(100.0 * halfWidth, 0, 'f', 1))
            .arg(sample.runLength));
    fillRows(outcomes, current);
}

void FormatWhatIfTable::showRecorded(const std::vector<FormatOutcome>& judged,
                                     const std::string& stageName, TensorRole role,
                                     std::int64_t step, const std::string& current) {
    m_step = -1; // a live snapshot afterwards is computed afresh
    if (judged.empty()) {
        m_table->setRowCount(0);
        m_caption->setText(tr("The watcher recorded no %1 of %2 at step %3.")
                               .arg(roleText(role).toLower())
                               .arg(QString::fromStdString(stageName))
                               .arg(step));
        return;
    }
    m_caption->setText(
        tr("%1 of %2 at step %3, as the watcher judged it: every value of the tensor, in the "
           "formats the run was watched in (other formats need a live run's sample). On show: %4.")
            .arg(roleText(role))
            .arg(QString::fromStdString(stageName))
            .arg(step)
            .arg(QString::fromStdString(current)));
    fillRows(judged, current);
}

void FormatWhatIfTable::fillRows(const std::vector<FormatOutcome>& outcomes,
                                 const std::string& current) {
    m_table->setRowCount(static_cast<int>(outcomes.size()));
    for (int row = 0; row < static_cast<int>(outcomes.size()); ++row) {
        const FormatOutcome& o = outcomes[static_cast<std::size_t>(row)];
        const bool bold = o.name == current;
        m_table->setItem(row, 0, cell(QString::fromStdString(o.name), bold, false));
        m_table->setItem(row, 1, cell(percentText(o.flushed), bold, true));
        m_table->setItem(row, 2, cell(percentText(o.subnormal), bold, true));
        m_table->setItem(row, 3, cell(percentText(o.overflow), bold, true));
        const QString sqnr = std::isnan(o.sqnrDb)   ? tr("not measured")
                             : std::isinf(o.sqnrDb) ? tr("exact")
                                                    : QString::number(o.sqnrDb, 'f', 1);
        m_table->setItem(row, 4, cell(sqnr, bold, true));
    }
}

} // namespace plab
