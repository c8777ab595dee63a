// Dynamic loss scaling: PyTorch GradScaler's rule (back off and skip on Inf/NaN, grow after a run
// of clean steps), Megatron's additions (a minimum scale, and hysteresis: back off only after k
// overflows), and Mellempudi et al.'s enhanced loss scaling (a floor under the scale that rises
// on a schedule, so spurious overflows cannot drive gradients into underflow).
#pragma once

#include "recipe/loss_scaler.h"

#include <cstdint>

namespace plab {

struct DynamicScalerSettings {
    double initialScale = 65536.0; // 2^16, GradScaler's default
    double growthFactor = 2.0;
    double backoffFactor = 0.5;
    std::int64_t growthInterval = 2000; // clean steps before growing
    double minScale = 0.0;              // Megatron's min_loss_scale; 0: none (GradScaler)
    double maxScale = 0.0;              // 0: none
    int hysteresis = 1;                 // overflows tolerated before backing off (GradScaler: 1)
    // Enhanced scaling: floor = min(floorMax, floorInitial * floorGrowth^(step / floorInterval)).
    bool enhanced = false;
    double floorInitial = 1.0, floorGrowth = 2.0, floorMax = 65536.0;
    std::int64_t floorInterval = 1000;
    bool operator==(const DynamicScalerSettings&) const = default;
};

// Whatever the settings, a loss scale stays a normal float (it multiplies float tensors):
// never 0 after backing off without a minimum, never Inf after growing without a maximum.
inline constexpr double kLowestLossScale = 0x1p-126, kHighestLossScale = 0x1p127;

class DynamicScaler final : public LossScaler {
public:
    explicit DynamicScaler(const DynamicScalerSettings& settings);
    std::string name() const override { return m_settings.enhanced ? "enhanced" : "dynamic"; }
    double scale() const override { return m_scale; }
    void setScale(double scale) override;
    ScaleDecision update(bool overflow) override;
    // It backs off and skips, until the scale is the lowest a float holds: an overflow there
    // cannot be backed off from (the loss itself is Inf or NaN), and every later step would be
    // skipped: the run has diverged.
    bool overflowIsDivergence() const override { return m_overflowAtLowest; }
    double floor() const; // the enhanced floor at the current step (0 when not enhanced)
    // Everything that decides the next steps' scales: what a checkpoint keeps (the PyTorch
    // LossScaler's state_dict) and a restart restores.
    struct State {
        double scale = 1.0;
        std::int64_t steps = 0, cleanSteps = 0;
        int hysteresisLeft = 1;
    };
    State state() const { return {m_scale, m_steps, m_cleanSteps, m_hysteresisLeft}; }
    void setState(const State& s);
    nlohmann::json checkpointState() const override {
        return {{"scale", m_scale},
                {"steps", m_steps},
                {"clean_steps", m_cleanSteps},
                {"hysteresis_left", m_hysteresisLeft}};
    }
    void restoreCheckpointState(const nlohmann::json& s) override {
        setState({s.at("scale").get<double>(), s.at("steps").get<std::int64_t>(),
                  s.at("clean_steps").get<std::int64_t>(), s.at("hysteresis_left").get<int>()});
    }

private:
    double clamp(double scale) const;

    DynamicScalerSettings m_settings;
    double m_scale;
    std::int64_t m_steps = 0;      // updates seen
    std::int64_t m_cleanSteps = 0; // since the last overflow or growth
    int m_hysteresisLeft;
    bool m_overflowAtLowest = false; // the last update's overflow came at kLowestLossScale
};

} // namespace plab
