// LossScaler: the interface every scaling policy implements (static here; dynamic, enhanced,
// per-layer and amax policies plug in later). The trainer multiplies the loss gradient by
// scale(), and after each step tells the policy whether a gradient overflowed.
#pragma once

#include "recipe/scaling_policy.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace plab {

struct ScaleDecision {
    bool skipStep = false; // discard this step's update
    std::string reason;    // for the event log; empty when nothing happened
};

class LossScaler {
public:
    virtual ~LossScaler() = default;
    virtual std::string name() const = 0;
    virtual double scale() const = 0;
    // A user (slider, CLI) sets the scale; policies may treat it as their new starting point.
    virtual void setScale(double scale) = 0;
    // Called once per step after backward; `overflow` means an Inf or NaN reached a gradient.
    virtual ScaleDecision update(bool overflow) = 0;
    // The policy's divergence rule: whether an overflow ends the run (a policy that cannot
    // react to it) or is handled by skipping and rescaling.
    virtual bool overflowIsDivergence() const = 0;
    // Everything that decides the next steps' scales, for a checkpoint, and its restore (a
    // policy's own state beyond the scale: DynamicScaler's counters). Doubles in JSON
    // round-trip exactly.
    virtual nlohmann::json checkpointState() const { return {{"scale", scale()}}; }
    virtual void restoreCheckpointState(const nlohmann::json& state) {
        setScale(state.at("scale").get<double>());
    }
};

// One fixed scale. An overflow skips the step (the update would be garbage). Policies "static"
// and "none" (scale 1) cannot react to it, so it is divergence; the tensor-scaling policies
// (per-layer, amax, mx) keep this loss scale and rescale their tensors instead.
class StaticScaler final : public LossScaler {
public:
    explicit StaticScaler(double scale, ScalingPolicy policy = ScalingPolicy::Static)
        : m_scale(scale), m_policy(policy) {}
    std::string name() const override { return std::string(toString(m_policy)); }
    double scale() const override { return m_scale; }
    void setScale(double scale) override { m_scale = scale; }
    ScaleDecision update(bool overflow) override {
        if (!overflow)
            return {};
        if (m_policy == ScalingPolicy::None)
            return {true, "Inf/NaN in gradients without loss scaling (policy none)"};
        return {true, "Inf/NaN in gradients at " + name() + " scale"};
    }
    bool overflowIsDivergence() const override { return info(m_policy).overflowIsDivergence; }

private:
    double m_scale;
    ScalingPolicy m_policy;
};

} // namespace plab
