// LiveRunSource: the app's own session as a RunSource. Its changes reach the window as the
// TrainingController's signals, emitted when the window's timer polls it (and when a run
// starts); each view reads them from here.
#pragma once

#include "run_source.h"

namespace plab {

class TrainingController;

class LiveRunSource final : public RunSource {
public:
    explicit LiveRunSource(TrainingController& controller) : m_controller(controller) {}

    int pollIntervalMs() const override { return 33; } // ~30 Hz: the views never need more
    bool poll() override;
    QString folder() const override;
    std::vector<std::string> stageNames() const override;
    const std::vector<StepScalars>& history() const override;
    const std::vector<FlushColumn>& flushColumns() const override;
    const TrainingSnapshot* snapshot() const override;
    ShownPrecision precision() const override;
    const FormatComparison& compareFormats(int stage, TensorRole role) override;

    // Every command to the app's own session (through the controller): always taken.
    std::string whyNot() const override { return {}; }
    std::string setLossScale(double scale) override;
    std::string setScalingPolicy(ScalingPolicy policy, double scale) override;
    std::string setRecipe(const PrecisionRecipe& recipe) override;
    std::string toggleRunning() override;
    std::string stepOnce() override;
    bool remote() const override { return false; }

private:
    TrainingController& m_controller;
    SampledFormatComparer m_comparer;
};

} // namespace plab
