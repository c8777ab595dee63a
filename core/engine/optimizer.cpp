// SGD (PyTorch's form: v = mu v + g, w -= lr v) and Adam, with weight decay added to the gradient;
// AdamW (Loshchilov & Hutter), Adam whose decay is decoupled: lr * wd * w joins the update.
#include "engine/optimizer.h"

#include "util/vector_clones.h"

#include <cmath>

namespace plab {

// Cloned for AVX2 / AVX-512 (the file is built without fused multiply-adds: the same bits on
// every copy).
PLAB_VECTOR_CLONES
void computeOptimizerUpdate(const OptimizerSettings& settings, std::int64_t step,
                            std::span<const float> grad, std::span<const float> master,
                            std::span<float> update, std::span<float> first,
                            std::span<float> second, double lr, const Quantizer& stateFormat,
                            QuantStats* stateStats, const QuantizeOptions& options) {
    const std::size_t n = grad.size();
    const auto wd = static_cast<float>(settings.weightDecay);
    if (settings.kind == OptimizerKind::Sgd) {
        const auto mu = static_cast<float>(settings.momentum);
        for (std::size_t i = 0; i < n; ++i)
            first[i] = mu * first[i] + (grad[i] + wd * master[i]);
        stateFormat.quantize(first, first, stateStats, options);
        const auto rate = static_cast<float>(lr);
        for (std::size_t i = 0; i < n; ++i)
            update[i] = rate * first[i];
        return;
    }
    const auto b1 = static_cast<float>(settings.beta1);
    const auto b2 = static_cast<float>(settings.beta2);
    const bool decoupled = settings.kind == OptimizerKind::AdamW;
    const float l2 = decoupled ? 0.0f : wd, decay = decoupled ? static_cast<float>(lr) * wd : 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
        const float g = grad[i] + l2 * master[i];
        first[i] = b1 * first[i] + (1.0f - b1) * g;
        second[i] = b2 * second[i] + (1.0f - b2) * g * g;
    }
    stateFormat.quantize(first, first, stateStats, options);
    QuantizeOptions secondOptions = options;
    secondOptions.stream ^= 0x5bd1e995u; // independent random bits for the second moment
    stateFormat.quantize(second, second, stateStats, secondOptions);
    const double c1 = 1.0 - std::pow(settings.beta1, static_cast<double>(step));
    const double c2 = 1.0 - std::pow(settings.beta2, static_cast<double>(step));
    const auto rate = static_cast<float>(lr * std::sqrt(c2) / c1);
    const auto eps = static_cast<float>(settings.epsilon * std::sqrt(c2));
    for (std::size_t i = 0; i < n; ++i)
        update[i] = rate * first[i] / (std::sqrt(second[i]) + eps) + decay * master[i];
}

namespace {

// kCount: also the nonzero updates and those that left the master unchanged, branch-free (as
// applyMasterUpdate counts them: updates are nonzero almost everywhere, lost ones random).
template <bool kCount>
void sgdPass(std::span<const float> grad, std::span<float> master, std::span<float> momentum,
             float mu, float wd, float rate, MasterUpdateCounts* counts) {
    std::uint64_t updates = 0, lost = 0;
    for (std::size_t i = 0; i < grad.size(); ++i) {
        const float v = mu * momentum[i] + (grad[i] + wd * master[i]);
        momentum[i] = v;
        const float update = rate * v;
        const float next = master[i] - update;
        if constexpr (kCount) {
            const std::uint64_t moved = update != 0.0f ? 1u : 0u;
            updates += moved;
            lost += moved & (next == master[i] ? 1u : 0u);
        }
        master[i] = next;
    }
    if constexpr (kCount) {
        counts->updates += updates;
        counts->lost += lost;
    }
}

} // namespace

void sgdStepFloat32(const OptimizerSettings& settings, std::span<const float> grad,
                    std::span<float> master, std::span<float> momentum, double lr,
                    MasterUpdateCounts* counts) {
    const auto wd = static_cast<float>(settings.weightDecay);
    const auto mu = static_cast<float>(settings.momentum);
    const auto rate = static_cast<float>(lr);
    if (counts != nullptr)
        sgdPass<true>(grad, master, momentum, mu, wd, rate, counts);
    else
        sgdPass<false>(grad, master, momentum, mu, wd, rate, nullptr);
}

} // namespace plab
