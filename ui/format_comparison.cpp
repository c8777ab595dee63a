// FormatComparison's two makers: a trained run's sample, a watched run's recorded counts.
#include "format_comparison.h"

#include "stats/tensor_sample.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace plab {
namespace {

// The table's words, in its translation context (this file is no QObject).
QString tableText(const char* text) {
    return QCoreApplication::translate("FormatWhatIfTable", text);
}

// "Activation gradients" for TensorRole::ActivationGradients.
QString roleText(TensorRole role) {
    const std::string_view name = toString(role);
    QString text = QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()))
                       .replace(QLatin1Char('_'), QLatin1Char(' '));
    text[0] = text[0].toUpper();
    return text;
}

// The name of the row the step's cast is: an amax policy's tensor-scaled row, the block format
// the recipe amounts to, or the element format itself.
std::string formatInUse(const ShownPrecision& precision, const FormatSpec& inUse, TensorRole role) {
    std::string current = inUse.name;
    // The amax policies scale the three inputs of the products (as the trainer does); a delayed
    // scale comes from past amaxes, so its row here is the current-scaling estimate.
    if (isAmaxScaling(precision.scalingPolicy) && isProductInput(role) && hasTensorScaledRow(inUse))
        current = tensorScaledName(inUse.name);
    if (const std::optional<BlockScheme>& scheme = precision.blockScheme)
        for (const BlockFormat& f : blockFormats())
            if (f.element.sameParameters(inUse) && f.scheme.kind == scheme->kind &&
                f.scheme.blockSize == scheme->blockSize && inUse.hasNarrowRange())
                current = f.name;
    return current;
}

} // namespace

const FormatComparison& SampledFormatComparer::compare(const TrainingSnapshot& snapshot,
                                                       const ShownPrecision& runPrecision,
                                                       int stage, TensorRole role) {
    const ShownPrecision precision = runPrecision.forStage(stage, snapshot.stageNames);
    if (stage < 0 || stage >= static_cast<int>(snapshot.stages.size()))
        return m_last;
    const auto& sample =
        snapshot.stages[static_cast<std::size_t>(stage)].samples[static_cast<std::size_t>(role)];
    const std::string current =
        formatInUse(precision, precision.format(stage, snapshot.stageNames, role), role);
    std::string key = "sampled " + std::to_string(snapshot.statsStep) + ' ' +
                      std::to_string(stage) + ' ' + std::to_string(static_cast<int>(role)) + ' ' +
                      current + ' ' + std::to_string(precision.amaxMargin);
    if (key == m_last.key)
        return m_last; // the same sample: nothing to recompute
    FormatComparison made;
    made.key = std::move(key);
    made.current = current;
    if (sample.values.empty()) {
        made.caption =
            tableText("No sample of this tensor: samples are kept by live runs (not in the "
                      "run record), for the cast tensors (not master weights or optimiser "
                      "state).");
        m_last = std::move(made);
        return m_last;
    }
    made.rows =
        compareFormats(sample.values, sample.runLength, precision.amaxMargin, sample.tensorAmax);
    // The row in use is the step's own cast: its exact counts and error over every value it
    // cast, the numbers of the shares line above (a sample's estimate contradicted them).
    const QuantStats& cast = snapshot.stages[static_cast<std::size_t>(stage)].role(role);
    if (cast.total() > 0) {
        FormatOutcome exact = recordedOutcome(current, false, cast.counts, cast.error);
        const auto same = std::find_if(made.rows.begin(), made.rows.end(),
                                       [&](const FormatOutcome& o) { return o.name == current; });
        if (same != made.rows.end()) {
            exact.blockFormat = same->blockFormat;
            exact.tensorScaled = same->tensorScaled;
            *same = exact;
        } else { // a custom format: its row first
            made.rows.insert(made.rows.begin(), exact);
        }
    }
    const bool wholeTensor = sample.values.size() < kSampleRuns * kSampleRunLength;
    // A sample's share p of n values is within 1.96 sqrt(p (1 - p) / n) of the tensor's in 95%
    // of samples (independent values); p = 1/2 bounds it.
    const double halfWidth = 1.96 * std::sqrt(0.25 / static_cast<double>(sample.values.size()));
    made.caption =
        tableText(
            "%1 at step %2. <b>In use: %3</b>, its exact counts over every value the step cast "
            "(as the shares line). The other rows: %4, blocks along rows of %5.")
            .arg(QString::fromStdString(snapshot.stageNames[static_cast<std::size_t>(stage)]))
            .arg(snapshot.statsStep)
            .arg(QString::fromStdString(current))
            .arg(wholeTensor
                     ? tableText("the whole tensor (%1 values), exact").arg(sample.values.size())
                     : tableText("a sample of %1 values (%2 evenly spaced runs of %3), each "
                                 "share within about ±%4 points of the whole tensor's (95%)")
                           .arg(sample.values.size())
                           .arg(kSampleRuns)
                           .arg(kSampleRunLength)
                           .arg(100.0 * halfWidth, 0, 'f', 1))
            .arg(sample.runLength);
    m_last = std::move(made);
    return m_last;
}

std::string judgedComparisonKey(std::int64_t step, const std::string& stageName, TensorRole role,
                                const std::string& current) {
    return "judged " + std::to_string(step) + ' ' + stageName + ' ' +
           std::to_string(static_cast<int>(role)) + ' ' + current;
}

FormatComparison judgedFormatComparison(std::vector<FormatOutcome> judged,
                                        const std::string& stageName, TensorRole role,
                                        std::int64_t step, const std::string& current) {
    FormatComparison made;
    made.key = judgedComparisonKey(step, stageName, role, current);
    made.current = current;
    if (judged.empty()) {
        made.caption = tableText("The watcher recorded no %1 of %2 at step %3.")
                           .arg(roleText(role).toLower())
                           .arg(QString::fromStdString(stageName))
                           .arg(step);
        return made;
    }
    made.caption =
        tableText(
            "%1 of %2 at step %3, as the watcher judged it: every value of the tensor, in the "
            "formats the run was watched in (other formats need a live run's sample). On show: %4.")
            .arg(roleText(role))
            .arg(QString::fromStdString(stageName))
            .arg(step)
            .arg(QString::fromStdString(current));
    made.rows = std::move(judged);
    return made;
}

} // namespace plab
