// The recipe advisor: for each module and role of a recorded run, the narrowest format of a
// ladder whose recorded statistics meet every criterion over a window of steps, with the number
// that decided it; and for each product (GEMM) the format its two operands allow. It reads only
// what the record holds (a watched run judges every tensor in several formats; an emulated or
// trained run casts each role in one): a format without statistics is said to have none, never
// guessed.
#pragma once

#include "numerics/tensor_role.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace plab {

class RunRecord;

// Defaults and their reasons: docs/advise.md.
struct AdviceCriteria {
    // Narrowest first; each a format `quantize` names ("fp32" keeps float32's values) or a recipe
    // candidate the watcher judged (train/recipe_candidates.h). Empty: defaultLadder() of the
    // formats the record holds.
    std::vector<std::string> ladder;
    double maxFlushed = 0.01;        // of nonzero values flushed to zero, at any step
    double maxOverflow = 0.0;        // of nonzero values past the format's max, at any step
    double minSqnrDb = 20.0;         // signal to quantisation noise, at every step
    double maxFlushedBlocks = 0.001; // block formats: of blocks with a nonzero input, all flushed
    double maxSaturatedBlocks = 1.0; // block formats: of blocks, one element or more clipped
    // Advise only where the worst step is within this share of each limit (a share limit times
    // it, the SQNR floor raised by 10 log10(1/margin) dB; a limit of 100% stays off), so that the
    // run under the advice, whose values differ, still meets the limits. 1: at the limits.
    double margin = 0.5;
    // Opt-in, "FP4 all the way" (arXiv 2505.19115): a 4-bit entry on gradients is judged by that
    // paper's floor instead of minSqnrDb: it fails where the gradient's norm falls below sqrt(3)
    // times its quantisation noise's (10^(SQNR/20) < sqrt 3, SQNR below 4.8 dB; the margin
    // raises it as it raises the SQNR floor), where FP4 stops helping training.
    bool fp4GradientNoise = false;
    // Which statistics steps count: the last `lastSteps` steps of the record (0: every step),
    // or from firstStep to lastStep inclusive when lastStep > 0.
    std::int64_t lastSteps = 200;
    std::int64_t firstStep = 0, lastStep = 0;
};

// The frameworks' recipes narrowest first, then BF16 and FP32: what a watched run's default
// formats judge (precision_lab.torch.DEFAULT_FORMATS).
inline const std::vector<std::string> kDefaultLadder = {
    "nvfp4", "mxfp8", "fp8-block", "fp8-delayed", "fp8-current", "bf16", "fp32"};
// The ladder of a record that holds statistics in `recorded` (its formats, any order): where it
// holds a recipe candidate, the default ladder's entries it holds; otherwise (a trained FP16
// run, a run watched in plain formats) the formats it holds, narrowest first (fewest bits).
// FP32 always ends it: it is always advisable.
std::vector<std::string> defaultLadder(const std::vector<std::string>& recorded);

// "all", "last:N" or "A:B" (inclusive) into criteria's window; std::invalid_argument naming the
// text otherwise.
void parseStepWindow(const std::string& text, AdviceCriteria& criteria);
// "1%", "0.5%" or a plain fraction "0.01" (0 to 1); std::invalid_argument naming `what`.
double parseShare(const std::string& text, const std::string& what);
// Throws std::invalid_argument (one line naming the criterion) for a criterion out of range or
// an unknown ladder format (the format's own message).
void checkCriteria(const AdviceCriteria& criteria);

// One format of the ladder judged for one module's role.
struct FormatVerdict {
    enum class Outcome { Meets, Fails, NoData };
    std::string format;
    Outcome outcome = Outcome::NoData;
    std::string criterion; // the failed or tightest criterion: "flushed", "overflow", "sqnr", ...
    double value = 0.0;    // its worst value over the window (shares 0..1, SQNR in dB)
    std::int64_t step = 0; // the step of that worst value
    std::string reason; // one sentence: "3.2% of nonzero activation gradients flushed at step 812"
};

// A module's product inputs (weights, activations, activation gradients) take one scaled entry at
// most, and no unscaled narrow format beside it: a recipe scales a layer under one policy, so
// a role whose narrowest passing entry is another one takes the next that the layer's policy
// allows, and its summary says so.
struct RoleAdvice {
    std::size_t stage = 0;
    std::string module;
    TensorRole role = TensorRole::Weights;
    std::string chosen;  // empty: no format of the ladder meets the criteria (or none recorded)
    std::string summary; // "fp8-e4m3 rejected: ...; bf16 chosen: ..."
    std::vector<FormatVerdict> verdicts; // the ladder's formats up to the chosen one, in order
};

// A layer's three products: forward = activations x weights, data gradient = activation
// gradients x weights, weight gradient = activation gradients x activations.
struct GemmAdvice {
    std::size_t stage = 0;
    std::string module;
    std::string gemm; // "forward", "data_gradient", "weight_gradient"
    TensorRole a = TensorRole::Activations, b = TensorRole::Weights;
    std::string format; // the wider of its operands' chosen formats; empty when neither is known
    std::string reason; // which operand decided it
};

struct RunAdvice {
    std::string runDir;
    AdviceCriteria criteria;
    bool watched = false;       // stages are a PyTorch model's modules (names, not indices)
    nlohmann::json runConfig;   // a trained run's config.json (what replays it); else null
    std::int64_t firstStep = 0; // the statistics steps the window held
    std::int64_t lastStep = 0;
    std::size_t statisticsSteps = 0;
    std::vector<std::string> recordedFormats; // every format the record holds statistics of
    double lossScale = 1.0;                   // the window's last step's loss scale
    bool scaleVaried = false;                 // the loss scale changed within the window
    std::vector<RoleAdvice> roles;
    std::vector<GemmAdvice> gemms;
    // Per stage: whether it is a product that a recipe casts (a watched run also records
    // LayerNorms and other modules with parameters: advised, but no product and no recipe
    // entry), and the name a recipe's override gives it (emulate names a MultiheadAttention's
    // input projection NAME.in_proj).
    std::vector<bool> products;
    std::vector<std::string> recipeNames;
    // Per stage: a watched module's PyTorch type ("Linear", "Embedding"), empty when unknown.
    std::vector<std::string> moduleTypes;
};

// Throws std::invalid_argument (one line) for bad criteria, a record with no statistics in the
// window, or a ladder none of whose formats (fp32 aside) the record holds; RecordError for a
// record that cannot be read.
RunAdvice adviseRun(const RunRecord& record, const AdviceCriteria& criteria);

// A ladder entry in the record's spelling: a recipe candidate's name (train/recipe_candidates.h)
// or "fp32" as it is, any other format as TensorCast names it ("float8_e4m3fn" -> fp8-e4m3);
// FormatError for a name that is neither.
std::string ladderName(const std::string& format);
// Bits of a ladder entry's element (a block format's element, a candidate's widest role):
// what decides whether a product runs in 8 bits. FormatError for an unknown name.
int ladderElementBits(const std::string& format);
// Whether a ladder entry is cast under a scaling of its own (a block format, a recipe candidate):
// a layer scales under one such policy.
bool ladderCastsScaled(const std::string& format);
// Whether a ladder entry casts in blocks (a block format, or a block-scaled candidate): its
// blocks flushed whole are judged too.
bool ladderScalesBlocks(const std::string& format);

// Index of a format in the ladder's order (narrower first); fp32 and unknown formats last.
std::size_t ladderRank(const AdviceCriteria& criteria, const std::string& format);

} // namespace plab
