// Parity of a training engine (TensorOps) against the CPU engine, as plain C++ (GPU machines have
// no Qt): every layer's forward and backward, the loss, the reductions, the scaled and MX
// quantisers, the optimisers and the master update, and whole training runs of every preset.
// Shared by the host emulation test (CI, no GPU) and the CUDA test (label gpu).
#pragma once

#include "engine/tensor_ops.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace plab::parity {

using OpsFactory = std::function<std::unique_ptr<TensorOps>()>;

struct Report {
    int checks = 0;
    std::vector<std::string> failures; // one line each: what, measured, bound
    void expect(bool ok, const std::string& what);
};

// Largest |a - b| over the largest |b| (the reference), the normalised error of one tensor.
double normalisedError(const std::vector<float>& a, const std::vector<float>& b);

// Bounds, stated once: FP32 arithmetic in a different order (1e-5 of the tensor's scale); a
// narrow accumulator may round one partial sum differently (a few of its ulps, 2^-8). Whole runs,
// on kParitySeeds seeds: the first step's loss (same weights, same batch) within 1e-3 on every
// seed; after that the engines' summation orders compound and the runs part as two seeds of one
// experiment do, so the mean over seeds of each engine's mean loss of the last 50 steps must
// agree within 10% of the reference's plus two standard errors of their difference
// (tailLossBound). One seed's 50-step mean was seen to move by 17% with the OpenBLAS kernel.
inline constexpr double kFp32Bound = 1e-5;
inline constexpr double kAccumulatorBound = 1.0 / 256;
inline constexpr int kParitySeeds = 3;
// A whole GPT's gradients: FP32 in another order through two blocks, attention and LayerNorm
// (LayerNorm's input gradient subtracts two means: differences compound more than in a layer).
inline constexpr double kGptBound = 1e-4;
inline constexpr double kFirstLossBound = 1e-3, kTailLossBound = 0.10;
// Step by step over the first kEarlySteps steps, before the orders compound: every step's loss
// within kEarlyLossBound on every seed (measured: at most 1.3e-3, the GPT on nvfp4; the MLPs below
// 1e-6).
inline constexpr int kEarlySteps = 5;
inline constexpr double kEarlyLossBound = 1e-2;

struct SampleSummary {
    double mean = 0.0, sd = 0.0; // sd: the sample standard deviation (n - 1)
    int n = 0;
};
SampleSummary summarise(const std::vector<double>& values);
double tailLossBound(const SampleSummary& reference, const SampleSummary& candidate);

void layers(const OpsFactory& candidate, Report& report);
void lossAndReductions(const OpsFactory& candidate, Report& report);
void quantisers(const OpsFactory& candidate, Report& report);
void optimisers(const OpsFactory& candidate, Report& report);
// Every preset on the MLP (hidden widths as given), and the CNN with FP16 and a static scale,
// trained side by side on the built-in data; and every preset on a small GPT (vocabulary 256,
// context 16, width 32, 2 heads, 1 block) on the built-in text.
struct TrainingRuns {
    int steps = 200, batch = 128;
    std::vector<int> hidden = {256, 256};
    int cnnSteps = 200, cnnBatch = 128;
    int gptSteps = 200, gptBatch = 8;
    // Which runs: the presets with index % parts == part (on the MLP, on the GPT), and the CNN
    // (CTest runs the parts as separate tests, in parallel).
    bool presetRuns = true, cnnRun = true, gptRuns = true;
    int part = 0, parts = 1;
    // The sanitizer builds' lighter set (the same runs, each a few steps on one seed, only the
    // first step compared): what they look for, a bad access or an undefined operation, shows in
    // any step, and the statistical comparison of whole runs is the plain build's to make.
    bool memoryCheckOnly = false;
};
// The plan above cut down as memoryCheckOnly says (CTest passes `--sanitizer` in the
// sanitizer builds, tests/engine/CMakeLists.txt).
TrainingRuns memoryCheckPlan(TrainingRuns plan);
// The whole GPT (the small one) on the candidate against the CPU, from the same weights and
// batch: its loss and every parameter's gradient, in FP32 and with a loss scale.
void gptModel(const OpsFactory& candidate, Report& report);
void training(const OpsFactory& candidate, const TrainingRuns& plan, Report& report);
// Statistics every step on an engine whose statistics may arrive late (a GPU's): each report
// names a step not after the one just taken and after the previous report, and the last step's
// statistics are there once the trainer is asked for them. Given sameArithmetic (the same
// kernels delivering statistics at once), each report equals its statistics of that step bit
// for bit and at least one arrived late; empty: order and completeness only.
void lateStatistics(const OpsFactory& candidate, const OpsFactory& sameArithmetic, Report& report);

// The same config twice on fresh engines of the candidate gives the same bits: large reductions
// (moments, sums of squares: many blocks on a GPU) repeated, and per-step losses of an MLP with
// per-layer scaling and gradient clipping (both decided from reductions) and of a small GPT.
// What config.json promises: a run replays exactly on the same machine.
void replays(const OpsFactory& candidate, Report& report);

// Prints the report; returns the process exit code (0 pass, 1 fail).
int finish(const Report& report, const std::string& title);

} // namespace plab::parity
