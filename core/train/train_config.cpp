// TrainConfig: its defaults, its JSON (toJson), merging and describing configs. The reader
// (configFromJson, every key checked) is config_reader.cpp; --set is config_settings.cpp;
// the presets are data (presets.json).
#include "train/train_config.h"

#include "train/config_json.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace plab {
namespace {

using nlohmann::json;

} // namespace

json quantJson(const QuantConfig& c) {
    return {{"format", c.format.name},
            {"rounding", std::string(toString(c.rounding))},
            {"overflow", std::string(toString(c.overflow))}};
}

json tensorScalingJson(const TensorScaling& t) {
    return {{"policy", std::string(toString(t.policy))},
            {"margin", t.amaxMargin},
            {"amax_history", t.amaxHistory},
            {"amax_algorithm", t.amaxMostRecent ? "most_recent" : "max"},
            {"amax_first_scale", t.amaxFirstScaleOne ? "one" : "own_amax"},
            {"block_size", t.blockSize},
            {"scale_rounding", std::string(toString(t.scaleRounding))},
            {"weight_tiles", t.weightTiles},
            {"pow2_scales", t.pow2Scales},
            {"four_over_six", t.fourOverSix}};
}

const char* optimizerName(OptimizerKind kind) {
    for (const OptimizerName& n : kOptimizerNames)
        if (n.kind == kind)
            return n.name;
    return "?";
}

double defaultLearningRate(const std::string& modelType) {
    // SGD with momentum 0.9: the small CNN does not learn at the MLP's 0.05 (its loss stays at
    // ln 10 from the first steps, in FP32 too); 0.01 trains it to ~83% on Fashion-MNIST in an
    // epoch. The GPT: AdamW at the peer's 1e-3.
    if (modelType == "gpt")
        return 1e-3;
    return modelType == "cnn" ? 0.01 : 0.05;
}

void mergeConfig(nlohmann::json& into, const nlohmann::json& from) {
    for (auto it = from.begin(); it != from.end(); ++it) {
        const bool have = into.contains(it.key());
        // A role given as a format name ("fp16") is {"format": "fp16"}: an object merged onto
        // it keeps the format (--set recipe.weights.rounding=stochastic on a preset).
        if (it->is_object() && have && into[it.key()].is_string())
            into[it.key()] = nlohmann::json{{"format", into[it.key()]}};
        if (it->is_object() && have && into[it.key()].is_object())
            mergeConfig(into[it.key()], *it);
        else
            into[it.key()] = *it;
    }
}

// config.timeline: [{"step": N, "set": {...}}, ...], steps not decreasing, each patch valid on
// the config as the earlier edits left it.
std::string describeConfigChange(const json& before, const json& after, const std::string& path) {
    if (before.is_object() && after.is_object()) {
        std::string out;
        for (auto it = after.begin(); it != after.end(); ++it) {
            const std::string key = path.empty() ? it.key() : path + "." + it.key();
            const std::string part = describeConfigChange(
                before.contains(it.key()) ? before.at(it.key()) : json(), *it, key);
            if (!part.empty())
                out += (out.empty() ? "" : "; ") + part;
        }
        return out;
    }
    if (before == after)
        return {};
    const auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    return path + ": " + text(before) + " -> " + text(after);
}

json TrainConfig::toJson() const {
    json recipeJson;
    for (TensorRole r : kAllRoles)
        recipeJson[std::string(toString(r))] = quantJson(recipe.roles[static_cast<std::size_t>(r)]);
    if (recipe.accumulation)
        recipeJson["accumulation"] = // one of the two modes (they exclude each other)
            recipe.promoteEvery > 0 ? json{{"format", recipe.accumulation->format.name},
                                           {"promote_every", recipe.promoteEvery}}
                                    : json{{"format", recipe.accumulation->format.name},
                                           {"every", recipe.accumulateEvery}};
    // One entry per stage index, then per kind: its roles' formats and its own scaling.
    json overrides = json::array();
    const auto addOverride = [&](json o, const auto* roles, const TensorScaling* scaling) {
        if (roles != nullptr)
            for (TensorRole r : kAllRoles)
                if (const auto& q = (*roles)[static_cast<std::size_t>(r)])
                    o[std::string(toString(r))] = quantJson(*q);
        if (scaling != nullptr)
            o["scaling"] = tensorScalingJson(*scaling);
        overrides.push_back(std::move(o));
    };
    std::set<int> stages;
    for (const auto& entry : recipe.stageOverrides)
        stages.insert(entry.first);
    for (const auto& entry : recipe.stageScaling)
        stages.insert(entry.first);
    for (int stage : stages) {
        const auto roles = recipe.stageOverrides.find(stage);
        const auto scaling = recipe.stageScaling.find(stage);
        addOverride({{"stage", stage}},
                    roles == recipe.stageOverrides.end() ? nullptr : &roles->second,
                    scaling == recipe.stageScaling.end() ? nullptr : &scaling->second);
    }
    std::set<std::string, std::less<>> kinds;
    for (const auto& entry : recipe.kindOverrides)
        kinds.insert(entry.first);
    for (const auto& entry : recipe.kindScaling)
        kinds.insert(entry.first);
    for (const std::string& kind : kinds) {
        const auto roles = recipe.kindOverrides.find(kind);
        const auto scaling = recipe.kindScaling.find(kind);
        addOverride({{"kind", kind}},
                    roles == recipe.kindOverrides.end() ? nullptr : &roles->second,
                    scaling == recipe.kindScaling.end() ? nullptr : &scaling->second);
    }
    recipeJson["overrides"] = overrides;
    const char* init = "he";
    for (const InitKindName& n : kInitKindNames)
        if (n.kind == model.init)
            init = n.name;
    json j = {
        {"seed", seed},
        {"threads", threads},
        {"device", device},
        {"data",
         {{"source", dataSource}, {"train_size", syntheticTrain}, {"test_size", syntheticTest}}},
        {"model",
         {{"type", model.type},
          {"hidden", model.hidden},
          {"activation", std::string(toString(model.activation))},
          {"init", init},
          {"init_scale", model.initScale},
          {"conv_channels1", model.convChannels1},
          {"conv_channels2", model.convChannels2},
          {"conv_kernel", model.convKernel}}},
        {"train",
         {{"steps", steps},
          {"epochs", epochs},
          {"batch_size", batchSize},
          {"lr", learningRate},
          {"optimizer", optimizerName(optimizer)},
          {"momentum", momentum},
          {"weight_decay", weightDecay},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", epsilon},
          {"clip_norm", clipNorm},
          {"stats_every", statsEvery},
          {"histograms_every", histogramsEvery},
          {"record_budget_mb", recordBudgetMb},
          {"eval_every", evalEvery},
          {"checkpoint_every", checkpointEvery}}},
        {"recipe", recipeJson},
        {"scaling",
         {{"policy", std::string(toString(scalingPolicy))},
          {"scale", lossScale},
          {"growth_factor", dynamic.growthFactor},
          {"backoff_factor", dynamic.backoffFactor},
          {"growth_interval", dynamic.growthInterval},
          {"min_scale", dynamic.minScale},
          {"max_scale", dynamic.maxScale},
          {"hysteresis", dynamic.hysteresis},
          {"floor", dynamic.floorInitial},
          {"floor_growth", dynamic.floorGrowth},
          {"floor_interval", dynamic.floorInterval},
          {"floor_max", dynamic.floorMax},
          {"per_layer_cap", perLayerCap},
          {"cumulative_cap", cumulativeCap},
          {"hadamard", hadamard}}},
    };
    const json scalingKeys = tensorScalingJson(tensorScaling());
    for (const auto& [key, value] : scalingKeys.items())
        if (key != "policy")
            j["scaling"][key] = value;
    if (model.type == "gpt") // the GPT's shape, written only for it (older records lack it)
        for (const auto& [key, value] : {std::pair{"context", model.context},
                                         {"width", model.width},
                                         {"heads", model.heads},
                                         {"blocks", model.blocks}})
            j["model"][key] = value;
    if (!timeline.empty()) {
        json edits = json::array();
        for (const TimedEdit& e : timeline)
            edits.push_back({{"step", e.step}, {"set", e.set}});
        j["timeline"] = std::move(edits);
    }
    return j;
}

} // namespace plab
