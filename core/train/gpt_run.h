// Training the tiny GPT in FP32 as the PyTorch peer trains it (AdamW lr 1e-3, betas 0.9 / 0.95,
// eps 1e-8, weight decay 0.1 on matrices and embeddings only, batch 32, random windows, no
// schedule, no clipping), and its validation loss over fixed windows. The benchmark against
// ../shared/peers/gpt_torch.py runs this; the precision recipes' casts come in the trainer.
#pragma once

#include "data/text_corpus.h"
#include "nn/transformer/gpt_model.h"
#include "train/gpt_casts.h"
#include "train/loss_scaler.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace plab {

struct GptRunSettings {
    transformer::GptSpec spec;
    int batch = 32;
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8, weightDecay = 0.1;
    std::uint64_t seed = 1;
    int validationWindows = 50; // drawn once from seed 1234, the same for every evaluation
    int threads = 1;            // for the matrix products (OpenBLAS)
    // A train config whose precision recipe and scaling the run applies (its model, data and
    // optimiser settings are not used: the GPT's are above). None: FP32.
    std::optional<TrainConfig> precision;
};

class GptRun {
public:
    GptRun(const GptRunSettings& settings, const TextCorpus& corpus);

    // One training step; returns its loss (nats per byte). Throws std::runtime_error when the
    // gradients overflow under a policy that cannot back off (none, static).
    double step();
    // The recipe's casts (null for FP32) and loss scale.
    const GptRecipeCasts* casts() const { return m_casts.get(); }
    double lossScale() const;
    std::int64_t skippedSteps() const { return m_skipped; }
    // What the run changed of the recipe, and why (empty: nothing).
    const std::string& notice() const { return m_notice; }
    const transformer::GptModel& model() const { return m_model; }
    // Mean loss over the validation windows (nats per byte).
    double validationLoss();
    // `length` bytes the model writes after `prompt` (at least one byte), each drawn from its
    // softmax at temperature 1 with a generator seeded by `seed`, the last `context` bytes as
    // its window: what the model has learnt, to read. Not counted in the statistics.
    std::string sample(const std::string& prompt, int length, std::uint64_t seed);
    std::int64_t stepsTaken() const { return m_step; }
    const std::vector<float>& parameters() const { return m_params; }

private:
    GptRunSettings m_settings;
    const TextCorpus& m_corpus;
    transformer::GptModel m_model;
    std::vector<float> m_params, m_grads, m_update, m_first, m_second;
    std::vector<std::uint8_t> m_inputs, m_targets, m_valInputs, m_valTargets;
    std::mt19937_64 m_rng;
    std::int64_t m_step = 0, m_skipped = 0;
    std::unique_ptr<GptRecipeCasts> m_casts;
    std::unique_ptr<LossScaler> m_scaler; // dynamic / enhanced
    std::unique_ptr<Quantizer> m_master, m_state;
    std::string m_notice;
};

} // namespace plab
