// RunSource: the run the main window's views show, wherever it comes from, read by the window's
// one poll timer (MainWindow::pollRunSource):
// - LiveRunSource: the app's own session, through its TrainingController;
// - RecordRunSource: a run record, a past run or one another process still writes (a CLI train,
//   a sweep's member, a watched PyTorch run, an emulated one whose script takes commands).
// The views stay passive: the window hands them the source's snapshot, the precision it was cast
// in (ShownPrecision), its history, its heat-map columns and the what-if comparison. The window's
// controls (the slider, the policy box, the recipe dock, Train and Step) send through the source
// too (its write side): the live one to the controller, a record's to its script (RunSteering).
#pragma once

#include "flush_column.h"
#include "format_comparison.h"
#include "recipe/precision_recipe.h"
#include "recipe/scaling_policy.h"
#include "shown_precision.h"
#include "stats/training_snapshot.h"

#include <QString>

#include <string>
#include <vector>

namespace plab {

class RunSource {
public:
    virtual ~RunSource() = default;

    // How often the window's timer reads it, in milliseconds.
    virtual int pollIntervalMs() const = 0;
    // Reads what is new since the last poll; true when the views should be drawn again. Throws
    // std::exception, its message naming the run, when the run cannot be read.
    virtual bool poll() = 0;
    // The run's record folder (empty: no record yet).
    virtual QString folder() const = 0;
    virtual std::vector<std::string> stageNames() const = 0;
    // The steps as the time view draws them: at most ~4k points, evaluations kept.
    virtual const std::vector<StepScalars>& history() const = 0;
    virtual const std::vector<FlushColumn>& flushColumns() const = 0;
    // The statistics step on show (null before the first), and the precision it was cast in.
    virtual const TrainingSnapshot* snapshot() const = 0;
    virtual ShownPrecision precision() const = 0;
    // The Formats what-if tab's rows for `role` of `stage` at the step on show.
    virtual const FormatComparison& compareFormats(int stage, TensorRole role) = 0;

    // The write side. whyNot(): empty while the run takes commands, else why it does not (its
    // controls are then view-only and say so, the slider previews). Each command is taken from
    // the run's next step and returns the error to show, empty when it was sent.
    virtual std::string whyNot() const = 0;
    virtual std::string setLossScale(double scale) = 0;
    // `scale`: the slider's, for a policy that starts from one.
    virtual std::string setScalingPolicy(ScalingPolicy policy, double scale) = 0;
    virtual std::string setRecipe(const PrecisionRecipe& recipe) = 0;
    virtual std::string toggleRunning() = 0; // train or pause (a paused script: resume)
    virtual std::string stepOnce() = 0;      // one step, then paused
    // Whether the run is another process's (a script steered through its record, which answers
    // with events): a command is then only sent, and the window says so.
    virtual bool remote() const = 0;
};

} // namespace plab
