// FormatComparison: what the Formats what-if tab shows for one tensor: a row per format
// (flushed, subnormal, overflow, SQNR), the one in use (bold) and a caption saying where the
// numbers come from. Two makers, one per kind of run on show:
// - SampledFormatComparer: a run the app trains keeps a sample of every cast tensor at each
//   statistics step (stats/tensor_sample.h); every element and block format is computed on it at
//   once (stats/what_if_formats.h), the row in use replaced by the step's exact counts;
// - judgedFormatComparison: a watched PyTorch run keeps no values but judged every tensor in each
//   of its formats; the record's counts for the whole tensor (RunRecord::tensorRows).
// The table (FormatWhatIfTable) only draws one.
#pragma once

#include "shown_precision.h"
#include "stats/training_snapshot.h"
#include "stats/what_if_formats.h"

#include <QString>

#include <string>
#include <vector>

namespace plab {

struct FormatComparison {
    // What it was computed from: the table redraws only when it changes (the gradient view says
    // "shown" on every slider move).
    std::string key;
    std::vector<FormatOutcome> rows;
    std::string current; // the row in bold
    QString caption;
};

// Keeps the last comparison: a few thousand values through every format are computed again only
// when the step, the tensor, the format in use or the amax margin changes.
class SampledFormatComparer {
public:
    // The comparison for `role` of `stage` in `snapshot`; the last one when the stage is not in
    // the snapshot (nothing on show yet).
    const FormatComparison& compare(const TrainingSnapshot& snapshot,
                                    const ShownPrecision& precision, int stage, TensorRole role);

private:
    FormatComparison m_last;
};

// A watched run's tensor at `step`: the formats it was judged in, `current` in bold; its key is
// judgedComparisonKey's (a caller can tell it has that one without reading the record again).
std::string judgedComparisonKey(std::int64_t step, const std::string& stageName, TensorRole role,
                                const std::string& current);
FormatComparison judgedFormatComparison(std::vector<FormatOutcome> judged,
                                        const std::string& stageName, TensorRole role,
                                        std::int64_t step, const std::string& current);

} // namespace plab
