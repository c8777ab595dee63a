// LossScaler: the interface every scaling policy implements (static here; dynamic, enhanced,
// per-layer and amax policies plug in later). The trainer multiplies the loss gradient by
// scale(), and after each step tells the policy whether a gradient overflowed.
#pragma once

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
};

// One fixed scale. An overflow skips the step (the update would be garbage); the trainer's
// divergence rule decides whether the run goes on.
class StaticScaler final : public LossScaler {
public:
    explicit StaticScaler(double scale, std::string name = "static")
        : m_scale(scale), m_name(std::move(name)) {}
    std::string name() const override { return m_name; }
    double scale() const override { return m_scale; }
    void setScale(double scale) override { m_scale = scale; }
    ScaleDecision update(bool overflow) override {
        if (!overflow)
            return {};
        return {true, "Inf/NaN in gradients at " + m_name + " scale"};
    }

private:
    double m_scale;
    std::string m_name;
};

} // namespace plab
