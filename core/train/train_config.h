// TrainConfig: everything that defines a run, read from and written to JSON (the run
// directory's config.json replays a run exactly). Validation errors name the key path and the
// allowed values.
#pragma once

#include "engine/optimizer.h"
#include "nn/model.h"
#include "numerics/block_scheme.h"
#include "recipe/casting_settings.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace plab {

class ConfigError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

struct OptimizerName {
    OptimizerKind kind;
    const char* name;
};
// The one name table: the parser, the writer and their messages read it.
inline constexpr OptimizerName kOptimizerNames[] = {
    {OptimizerKind::Sgd, "sgd"}, {OptimizerKind::Adam, "adam"}, {OptimizerKind::AdamW, "adamw"}};
// kOptimizerNames' name of an optimiser ("?" for none of them).
const char* optimizerName(OptimizerKind kind);

// A change made while a run goes (a GUI edit, a replayed session's): after `step` steps, before
// the next, the config patch `set` (train.lr, scaling.*, recipe) is merged into the run's config.
// A run's config.json holds its starting config plus this timeline, so it replays the edits.
struct TimedEdit {
    std::int64_t step = 0;
    nlohmann::json set;
    bool operator==(const TimedEdit&) const = default;
};

// A run's whole config: how its tensors are cast (CastingSettings: the seed, recipe and
// scaling.*) and everything else that defines it.
struct TrainConfig : CastingSettings {
    unsigned threads = 1;
    std::string device = "auto"; // auto | cpu | cuda | cuda:N (device/compute_backend.h)

    // data
    std::string dataSource = "synthetic"; // "synthetic", "fashion-mnist" or a directory
    int syntheticTrain = 20000, syntheticTest = 2000;

    ModelSpec model;

    // training
    std::int64_t steps = 0; // 0: use epochs
    int epochs = 1;
    int batchSize = 128;
    double learningRate = 0.05;
    OptimizerKind optimizer = OptimizerKind::Sgd;
    double momentum = 0.9, weightDecay = 0.0;
    double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
    double clipNorm = 0.0; // 0: no clipping (of the unscaled global gradient norm)
    int statsEvery = 1;    // collect per-layer statistics every k steps
    // histograms.csv gets a statistics step's histograms every k statistics steps (the live
    // views get every one): the histograms are most of a run's disk (docs/record.md).
    int histogramsEvery = 20;
    // The run record's disk budget in MB (0: none). Past it, histograms are no longer recorded
    // (an event says so); steps, counters and events always are.
    int recordBudgetMb = 200;
    int evalEvery = 0; // test-set evaluation every k steps; 0: at the end of each epoch
    // A checkpoint (train/run_checkpoint.h) every k steps as well as when the run is stopped,
    // so that a run killed outright (SIGKILL, a crash, a node lost) goes on from the last one;
    // 0: only when stopped.
    std::int64_t checkpointEvery = 0;

    std::vector<TimedEdit> timeline; // in step order; written only when not empty

    nlohmann::json toJson() const;
    // Field by field: what a replay test compares (a config and its config.json read back).
    bool operator==(const TrainConfig&) const = default;
};

// A config document from text, strictly: valid JSON, a top-level object, at most
// kConfigMaxDepth levels of nesting (configs need 4), no key twice in one object. Errors name
// the source (a file path) and what was expected.
inline constexpr int kConfigMaxDepth = 16;
// The largest config file any reader takes (train --config, Open session, a sweep's configs).
// What is accepted must replay: a config whose timeline would make its run's config.json larger
// than this is refused when it is read, not when its replay is (configFromJson).
inline constexpr std::size_t kConfigMaxBytes = std::size_t{16} << 20;
// Timeline edits a config may hold (each is checked as it is read: ~0.2 ms an edit).
inline constexpr std::size_t kTimelineMaxEdits = 20000;
nlohmann::json parseConfigText(const std::string& text, const std::string& source);
// A config file read whole (at most kConfigMaxBytes: a FIFO or /dev/zero is not read without
// bound) and parsed by parseConfigText; ConfigError naming the file and what is wrong with it.
nlohmann::json readConfigFile(const std::string& path);
// `from` merged into `into` (objects merged key by key, everything else replaced).
void mergeConfig(nlohmann::json& into, const nlohmann::json& from);

// train.lr when the config does not give one: what suits each model (mlp 0.05, cnn 0.01).
double defaultLearningRate(const std::string& modelType);

// Defaults, then the given JSON on top. Throws ConfigError("config.train.lr: ...").
TrainConfig configFromJson(const nlohmann::json& j);
// `config` with an edit's patch merged in (what the run's config is after the edit). Throws
// ConfigError naming the patch's key for a patch that changes what cannot change mid-run or
// gives a bad value.
TrainConfig applyEdit(const TrainConfig& config, const nlohmann::json& patch);
// The settings a run had after `stepsTaken` steps: config with its timeline's edits of those
// steps applied (the timeline cleared). An edit the config refuses is skipped, as the run that
// replayed it refused it.
TrainConfig configAfterSteps(const TrainConfig& config, std::int64_t stepsTaken);
// "recipe.weights.format: fp8-e5m2 -> fp8-e4m3; ..." for every leaf of `after` that differs
// from `before` (what an event says an edit changed).
std::string describeConfigChange(const nlohmann::json& before, const nlohmann::json& after,
                                 const std::string& path = {});
// Applies "a.b.c=value" (value parsed as JSON, else taken as a string) to a JSON document.
void applySetting(nlohmann::json& j, const std::string& assignment);

} // namespace plab
