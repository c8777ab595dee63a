// LiveRunSource: the TrainingController's session, read through the RunSource interface.
#include "live_run_source.h"

#include "training_controller.h"

namespace plab {

bool LiveRunSource::poll() {
    m_controller.poll(); // its signals say what changed
    return false;
}

QString LiveRunSource::folder() const {
    return m_controller.runDir();
}

std::vector<std::string> LiveRunSource::stageNames() const {
    return m_controller.stageNames();
}

const std::vector<StepScalars>& LiveRunSource::history() const {
    return m_controller.history(); // bounded and decimated as it grows
}

const std::vector<FlushColumn>& LiveRunSource::flushColumns() const {
    return m_controller.flushHistory();
}

const TrainingSnapshot* LiveRunSource::snapshot() const {
    return m_controller.latest();
}

ShownPrecision LiveRunSource::precision() const {
    return ShownPrecision::of(m_controller.config());
}

const FormatComparison& LiveRunSource::compareFormats(int stage, TensorRole role) {
    static const TrainingSnapshot none;
    const TrainingSnapshot* latest = m_controller.latest();
    return m_comparer.compare(latest ? *latest : none, precision(), stage, role);
}

std::string LiveRunSource::setLossScale(double scale) {
    // Policy `none` means a loss scale of 1: a scale chosen on the slider makes the run static
    // (recorded as a policy change), so the policy shown stays the one training uses.
    if (m_controller.config().scalingPolicy == ScalingPolicy::None)
        m_controller.setScalingPolicy(ScalingPolicy::Static, scale);
    else
        m_controller.setLossScale(scale);
    return {};
}

std::string LiveRunSource::setScalingPolicy(ScalingPolicy policy, double scale) {
    m_controller.setScalingPolicy(policy, scale);
    return {};
}

std::string LiveRunSource::setRecipe(const PrecisionRecipe& recipe) {
    return m_controller.setRecipe(recipe).toStdString();
}

std::string LiveRunSource::toggleRunning() {
    m_controller.toggleTraining();
    return {};
}

std::string LiveRunSource::stepOnce() {
    m_controller.step();
    return {};
}

} // namespace plab
