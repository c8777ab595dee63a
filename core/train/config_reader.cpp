// TrainConfig from JSON, with every key checked: type, range, and no unknown keys; config text
// and files read strictly; timeline edits applied.
#include "train/train_config.h"

#include "util/bounded_read.h"
#include "util/nearest_name.h"

#include "util/thread_pool.h"

#include "device/compute_backend.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <thread>
#include <unordered_set>

namespace plab {
namespace {

using nlohmann::json;

// 2^64 - 1 as a bound (the double is 2^64: a JSON integer is at most 2^64 - 1, and 2^64 itself
// is read as a float and refused as not an integer).
constexpr double kUint64Max = 18446744073709551615.0;

// Reads one JSON object, remembering the keys it was asked for so that the rest can be reported
// as unknown.
class Reader {
public:
    Reader(const json& j, std::string path) : m_j(j), m_path(std::move(path)) {
        if (!j.is_object())
            throw ConfigError(m_path + ": expected an object, got " + j.dump());
    }

    std::string path(const char* key) const { return m_path + "." + key; }
    bool has(const char* key) {
        m_known.insert(key);
        return m_j.contains(key);
    }
    const json& at(const char* key) const { return m_j.at(key); }

    template <typename T>
    void number(const char* key, T& out, double min, double max) {
        if (!has(key))
            return;
        const json& v = m_j.at(key);
        constexpr bool integral = std::is_integral_v<T>;
        if (!v.is_number() || (integral && !v.is_number_integer()))
            throw ConfigError(path(key) + ": expected " + (integral ? "an integer" : "a number") +
                              " in " + range(min, max) + ", got " + v.dump());
        const double d = v.get<double>();
        if (!(d >= min && d <= max))
            throw ConfigError(path(key) + ": " + v.dump() + " is out of range " + range(min, max));
        out = v.get<T>();
    }

    void text(const char* key, std::string& out) {
        if (!has(key))
            return;
        const json& v = m_j.at(key);
        if (!v.is_string())
            throw ConfigError(path(key) + ": expected a string, got " + v.dump());
        out = v.get<std::string>();
    }

    // A key that takes one of two words: whether it names `yes` (`current` when absent).
    bool either(const char* key, bool current, const char* no, const char* yes) {
        std::string word = current ? yes : no;
        text(key, word);
        if (word != no && word != yes)
            throw ConfigError(path(key) + ": \"" + word + "\" (expected " + no + " or " + yes +
                              ")");
        return word == yes;
    }

    void flag(const char* key, bool& out) {
        if (!has(key))
            return;
        const json& v = m_j.at(key);
        if (!v.is_boolean())
            throw ConfigError(path(key) + ": expected true or false, got " + v.dump());
        out = v.get<bool>();
    }

    void finish() const {
        for (auto it = m_j.begin(); it != m_j.end(); ++it)
            if (!m_known.contains(it.key())) {
                std::string list;
                for (const std::string& k : m_known)
                    list += (list.empty() ? "" : ", ") + k;
                // As JSON spells it: a NUL or a newline in a key shows, and cuts nothing.
                const std::string key = json(it.key()).dump();
                throw ConfigError(m_path + "." + key.substr(1, key.size() - 2) +
                                  ": unknown key (expected one of: " + list + ")");
            }
    }

private:
    static std::string range(double min, double max) {
        auto fmt = [](double v) {
            if (v == kUint64Max)
                return std::string("18446744073709551615");
            if (v == std::floor(v) && std::fabs(v) < 9.2e18)
                return std::to_string(static_cast<long long>(v));
            return json(v).dump(); // the shortest text of the double, e.g. 1e+30
        };
        return "[" + fmt(min) + ", " + fmt(max) + "]";
    }

    const json& m_j;
    std::string m_path;
    std::set<std::string> m_known;
};

constexpr double kHuge = 1e300;

// The per-tensor scaling keys, the run's (config.scaling) and an override's alike.
void readTensorScalingKeys(Reader& s, TensorScaling& t) {
    s.number("margin", t.amaxMargin, -64, 64);
    s.number("amax_history", t.amaxHistory, 1, 1 << 20);
    t.amaxMostRecent = s.either("amax_algorithm", t.amaxMostRecent, "max", "most_recent");
    t.amaxFirstScaleOne = s.either("amax_first_scale", t.amaxFirstScaleOne, "own_amax", "one");
    s.number("block_size", t.blockSize, 0, 4096);
    t.scaleRounding =
        s.either("scale_rounding", t.scaleRounding == ScaleRounding::Ceil, "floor", "ceil")
            ? ScaleRounding::Ceil
            : ScaleRounding::Floor;
    s.flag("weight_tiles", t.weightTiles);
    s.flag("pow2_scales", t.pow2Scales);
    s.flag("four_over_six", t.fourOverSix);
}

// The run's keys an override's scaling may not give: the loss scaler's and the transform's.
constexpr const char* kRunScalingKeys[] = {
    "scale",     "growth_factor", "backoff_factor", "growth_interval", "min_scale",
    "max_scale", "hysteresis",    "floor",          "floor_growth",    "floor_interval",
    "floor_max", "per_layer_cap", "cumulative_cap", "hadamard"};

std::string tensorScalingPolicyNames() {
    std::string names;
    for (const ScalingPolicyInfo& p : kScalingPolicies)
        if (isTensorScalingPolicy(p.policy))
            names += (names.empty() ? "" : ", ") + std::string(p.name);
    return names;
}

// An override's "scaling": a layer's own per-tensor scaling (recipe/tensor_scaling.h).
TensorScaling readOverrideScaling(const json& v, const std::string& path) {
    Reader r(v, path);
    for (const char* key : kRunScalingKeys)
        if (r.has(key))
            throw ConfigError(r.path(key) + ": the run's setting (config.scaling." + key +
                              "), not a layer's: an override's scaling is its per-tensor "
                              "scaling (policy " +
                              tensorScalingPolicyNames() + ")");
    std::string policy;
    r.text("policy", policy);
    if (!r.has("policy"))
        throw ConfigError(r.path("policy") + ": missing (" + tensorScalingPolicyNames() + ")");
    const std::optional<ScalingPolicy> parsed = parseScalingPolicy(policy);
    if (!parsed)
        throw ConfigError(r.path("policy") + ": \"" + policy + "\" (expected " +
                          tensorScalingPolicyNames() + ")");
    if (!isTensorScalingPolicy(*parsed))
        throw ConfigError(r.path("policy") + ": \"" + policy +
                          "\" scales the loss, which is the run's (config.scaling.policy); a "
                          "layer's scaling is one of " +
                          tensorScalingPolicyNames());
    TensorScaling t;
    t.policy = *parsed;
    t.weightTiles = t.policy == ScalingPolicy::Nvfp4 || t.policy == ScalingPolicy::Blockwise;
    readTensorScalingKeys(r, t);
    r.finish();
    return t;
}

QuantConfig readQuant(const json& v, const std::string& path) {
    auto wrap = [&](auto&& fn) {
        try {
            return fn();
        } catch (const FormatError& e) {
            throw ConfigError(path + ": " + e.what());
        }
    };
    if (v.is_string())
        return wrap([&] { return QuantConfig::forFormat(parseFormat(v.get<std::string>())); });
    Reader r(v, path);
    std::string format = "fp32", rounding = "nearest-even", overflow;
    r.text("format", format);
    r.text("rounding", rounding);
    r.text("overflow", overflow);
    r.finish();
    return wrap([&] {
        QuantConfig c = QuantConfig::forFormat(parseFormat(format), parseRounding(rounding));
        if (!overflow.empty())
            c.overflow = parseOverflow(overflow);
        return c;
    });
}

void readRoles(Reader& r, const std::string& base,
               std::array<std::optional<QuantConfig>, kRoleCount>& out) {
    for (TensorRole role : kAllRoles) {
        const std::string key(toString(role));
        if (r.has(key.c_str()))
            out[static_cast<std::size_t>(role)] = readQuant(r.at(key.c_str()), base + "." + key);
    }
}

void readRecipe(const json& j, PrecisionRecipe& recipe) {
    Reader r(j, "config.recipe");
    std::array<std::optional<QuantConfig>, kRoleCount> roles;
    readRoles(r, "config.recipe", roles);
    for (std::size_t i = 0; i < kRoleCount; ++i)
        if (roles[i])
            recipe.roles[i] = *roles[i];
    if (r.has("accumulation")) {
        const json& a = r.at("accumulation");
        Reader ar(a, "config.recipe.accumulation");
        std::string format = "fp32";
        int every = 0;   // 0: one chunk, the whole sum rounded once to the format
        int promote = 0; // 0: no promotion
        ar.text("format", format);
        ar.number("every", every, 0, 1 << 20);
        ar.number("promote_every", promote, 0, 1 << 20);
        ar.finish();
        if (every > 0 && promote > 0)
            throw ConfigError("config.recipe.accumulation: every and promote_every are two "
                              "modes; give one of them");
        if (format != "fp32") {
            recipe.accumulation = readQuant(json(format), "config.recipe.accumulation.format");
            recipe.accumulateEvery = every;
            recipe.promoteEvery = promote;
        }
    }
    if (r.has("overrides")) {
        const json& list = r.at("overrides");
        if (!list.is_array())
            throw ConfigError(
                "config.recipe.overrides: expected an array of {\"stage\": N, role: format}");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string base = "config.recipe.overrides[" + std::to_string(i) + "]";
            Reader o(list[i], base);
            if (o.has("kind")) { // a transformer stage kind or site
                std::string kind;
                o.text("kind", kind);
                const OverrideKind* k = findOverrideKind(kind);
                if (k == nullptr || o.has("stage")) {
                    std::string names;
                    for (const OverrideKind& known : kOverrideKinds)
                        names += (names.empty() ? "" : ", ") + std::string(known.name);
                    throw ConfigError(base +
                                      (k ? ": give a stage or a kind, not both"
                                         : ".kind: \"" + kind + "\" (expected " + names + ")"));
                }
                auto& kindRoles = recipe.kindOverrides[kind];
                readRoles(o, base, kindRoles);
                if (o.has("scaling")) {
                    if (k->site)
                        throw ConfigError(base + ".scaling: the " + kind +
                                          " site is cast within its stage's scaling; give "
                                          "scaling to a stage or a stage kind (attention, mlp, "
                                          "head)");
                    recipe.kindScaling[kind] =
                        readOverrideScaling(o.at("scaling"), base + ".scaling");
                }
                for (TensorRole role : kAllRoles)
                    if (kindRoles[static_cast<std::size_t>(role)] &&
                        !k->roles[static_cast<std::size_t>(role)])
                        throw ConfigError(base + "." + std::string(toString(role)) + ": the " +
                                          kind + " kind sets other roles (it is " +
                                          std::string(k->what) + ")");
                o.finish();
                continue;
            }
            int stage = -1;
            o.number("stage", stage, -1, 1000);
            if (!o.has("stage"))
                throw ConfigError(base + ".stage: missing (the layer index, -1 for the last, or "
                                         "a \"kind\" for the gpt)");
            readRoles(o, base, recipe.stageOverrides[stage]);
            if (o.has("scaling"))
                recipe.stageScaling[stage] =
                    readOverrideScaling(o.at("scaling"), base + ".scaling");
            o.finish();
        }
    }
    r.finish();
}

} // namespace

nlohmann::json parseConfigText(const std::string& text, const std::string& source) {
    // JSON text has no NUL: what follows one (a file padded or cut and glued) would be dropped.
    if (const std::size_t nul = text.find('\0'); nul != std::string::npos)
        throw ConfigError(source + ": a NUL byte at offset " + std::to_string(nul) +
                          " (a config is JSON text)");
    // The parser's callback sees every value as it is read: depth and duplicate keys are
    // refused there, before a deep document can reach any recursive code.
    // Per open object (arrays: an empty entry); a hash set, so that a document of many keys is
    // read in linear time (a vector's search made 200,000 keys take 25 s).
    std::vector<std::unordered_set<std::string>> keys;
    const auto check = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& value) {
        using Event = nlohmann::json::parse_event_t;
        if (event == Event::object_start || event == Event::array_start) {
            if (depth >= kConfigMaxDepth)
                throw ConfigError(source + ": nested deeper than " +
                                  std::to_string(kConfigMaxDepth) + " levels (a config needs 4)");
            keys.emplace_back();
        } else if (event == Event::object_end || event == Event::array_end) {
            if (!keys.empty())
                keys.pop_back();
        } else if (event == Event::key && !keys.empty()) {
            std::string key = value.get<std::string>();
            if (!keys.back().insert(key).second)
                throw ConfigError(source + ": key \"" + key.substr(0, 80) +
                                  "\" appears twice in one object");
        }
        return true;
    };
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text, check);
    } catch (const nlohmann::json::exception& e) { // parse errors, numbers out of range
        std::string what = e.what();
        if (const auto p = what.find("] "); p != std::string::npos)
            what = what.substr(p + 2); // without the library's "[json.exception.parse_error.101]"
        throw ConfigError(source + ": not valid JSON (" + what + ")");
    }
    if (!j.is_object())
        throw ConfigError(source + ": the top level must be a JSON object ({...}), not " +
                          (j.is_null() ? std::string("null") : std::string(j.type_name())));
    return j;
}

nlohmann::json readConfigFile(const std::string& path) {
    std::string text;
    switch (readBounded(path, kConfigMaxBytes, text)) {
    case BoundedRead::Ok:
        return parseConfigText(text, path);
    case BoundedRead::CannotOpen:
        throw ConfigError(path + ": cannot open the config file");
    case BoundedRead::IsADirectory:
        throw ConfigError(path + ": is a directory (expected a JSON config file)");
    case BoundedRead::CannotRead:
        throw ConfigError(path + ": cannot read the config file");
    case BoundedRead::TooLarge:
        break;
    }
    throw ConfigError(path + ": larger than " + describeBytes(kConfigMaxBytes) +
                      " (a config is a few KB of JSON)");
}

std::vector<TimedEdit> readTimeline(const json& j, const TrainConfig& start) {
    if (!j.is_array())
        throw ConfigError("config.timeline: expected an array of {\"step\", \"set\"} edits, got " +
                          j.dump().substr(0, 80));
    if (j.size() > kTimelineMaxEdits)
        throw ConfigError("config.timeline: " + std::to_string(j.size()) + " edits: at most " +
                          std::to_string(kTimelineMaxEdits) +
                          " (a run's config.json replays its edits; edits at one step are one)");
    // Before each edit is checked (~0.2 ms each): its run's config.json would hold at least this.
    if (const std::size_t bytes = j.dump(2).size(); bytes > kConfigMaxBytes)
        throw ConfigError("config.timeline: its " + std::to_string(j.size()) +
                          " edits make a config.json of " + std::to_string(bytes >> 20) +
                          " MiB, more than the 16 MiB a config may be to replay");
    std::vector<TimedEdit> timeline;
    TrainConfig state = start;
    for (std::size_t i = 0; i < j.size(); ++i) {
        const std::string path = "config.timeline[" + std::to_string(i) + "]";
        Reader e(j[i], path);
        TimedEdit edit;
        if (!e.has("step")) // not 0: an edit without its step would apply before the run
            throw ConfigError(path + ".step: missing (the number of steps after which the edit "
                                     "applies)");
        e.number("step", edit.step, 0, 1e15);
        if (!e.has("set"))
            throw ConfigError(path + ".set: missing (the config patch to apply)");
        edit.set = e.at("set");
        e.finish();
        if (!timeline.empty() && edit.step < timeline.back().step)
            throw ConfigError(path + ".step: " + std::to_string(edit.step) +
                              " comes before the previous edit's step " +
                              std::to_string(timeline.back().step));
        try {
            state = applyEdit(state, edit.set);
        } catch (const ConfigError& err) {
            std::string what = err.what();
            if (what.rfind("config.", 0) == 0) // "config.train.lr: ..." -> "...set.train.lr: ..."
                what = what.substr(7);
            throw ConfigError(path + ".set." + what);
        }
        timeline.push_back(std::move(edit));
    }
    return timeline;
}

TrainConfig configFromJson(const json& j) {
    if (j.is_object() && j.contains("watch"))
        throw ConfigError("config.watch: this is a watched PyTorch run's description "
                          "(precision_lab.torch.watch), not a training config: the run replays "
                          "by running its script again");
    if (j.is_object() && j.contains("emulate"))
        throw ConfigError("config.emulate: this is an emulated PyTorch run's description "
                          "(precision_lab.torch.emulate); its recipe is emulate.train_config, and "
                          "the run replays by running its script again with it");
    TrainConfig c;
    Reader top(j, "config");
    top.number("seed", c.seed, 0, kUint64Max);
    top.number("threads", c.threads, 0u, kMaxThreads);
    // 0 means every core of this machine: the count it stands for is what the run uses and what
    // its config.json says, so that a replay elsewhere runs with as many (results depend on it).
    if (c.threads == 0)
        c.threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
    top.text("device", c.device);
    try {
        c.device = toString(parseDeviceSpec(c.device));
    } catch (const DeviceError& e) {
        throw ConfigError(std::string("config.device: ") + e.what());
    }
    if (top.has("data")) {
        Reader d(top.at("data"), "config.data");
        d.text("source", c.dataSource);
        d.number("train_size", c.syntheticTrain, 10, 1e7);
        d.number("test_size", c.syntheticTest, 10, 1e7);
        d.finish();
    }
    if (top.has("model")) {
        Reader m(top.at("model"), "config.model");
        m.text("type", c.model.type);
        if (c.model.type != "mlp" && c.model.type != "cnn" && c.model.type != "gpt")
            throw ConfigError("config.model.type: \"" + c.model.type +
                              "\" (expected mlp, cnn or gpt)");
        if (m.has("hidden")) {
            const json& h = m.at("hidden");
            if (!h.is_array() || h.size() > 32)
                throw ConfigError("config.model.hidden: expected an array of up to 32 widths");
            c.model.hidden.clear();
            for (const json& w : h) {
                if (!w.is_number_integer() || w.get<long long>() < 1 || w.get<long long>() > 65536)
                    throw ConfigError("config.model.hidden: width " + w.dump() +
                                      " out of range [1, 65536]");
                c.model.hidden.push_back(w.get<int>());
            }
        }
        std::string activation = "relu", init = "he";
        m.text("activation", activation);
        try {
            c.model.activation = parseActivation(activation);
        } catch (const std::invalid_argument& e) {
            throw ConfigError(std::string("config.model.activation: ") + e.what());
        }
        m.text("init", init);
        bool knownInit = false;
        std::string initNames;
        for (const InitKindName& n : kInitKindNames) {
            initNames += std::string(initNames.empty() ? "" : ", ") + n.name;
            if (init == n.name) {
                c.model.init = n.kind;
                knownInit = true;
            }
        }
        if (!knownInit)
            throw ConfigError("config.model.init: \"" + init + "\" (expected one of: " + initNames +
                              ")");
        m.number("init_scale", c.model.initScale, 1e-12, 1e6);
        m.number("conv_channels1", c.model.convChannels1, 1, 1024);
        m.number("conv_channels2", c.model.convChannels2, 1, 1024);
        m.number("conv_kernel", c.model.convKernel, 3, 5);
        if (c.model.convKernel != 3 && c.model.convKernel != 5)
            throw ConfigError("config.model.conv_kernel: expected 3 or 5, got " +
                              std::to_string(c.model.convKernel));
        m.number("context", c.model.context, 1, 4096);
        m.number("width", c.model.width, 1, 8192);
        m.number("heads", c.model.heads, 1, 256);
        m.number("blocks", c.model.blocks, 1, 64);
        if (c.model.width % c.model.heads != 0)
            throw ConfigError("config.model.width: " + std::to_string(c.model.width) +
                              " is not divisible by config.model.heads " +
                              std::to_string(c.model.heads));
        m.finish();
    }
    c.learningRate = defaultLearningRate(c.model.type); // unless train.lr says otherwise
    if (c.model.type == "gpt") { // the peer's recipe (../shared/peers/gpt_torch.py) unless given
        c.optimizer = OptimizerKind::AdamW;
        c.beta2 = 0.95;
        c.weightDecay = 0.1;
        c.batchSize = 32;
        c.steps = 1000;
        c.evalEvery = 200; // validation loss and a sample of text
    }
    if (top.has("train")) {
        Reader t(top.at("train"), "config.train");
        t.number("steps", c.steps, 0, 1e12);
        t.number("epochs", c.epochs, 0, 100000);
        t.number("batch_size", c.batchSize, 1, 65536);
        t.number("lr", c.learningRate, 1e-12, 1e6);
        std::string optimizer = optimizerName(c.optimizer);
        t.text("optimizer", optimizer);
        const auto named =
            std::find_if(std::begin(kOptimizerNames), std::end(kOptimizerNames),
                         [&](const OptimizerName& n) { return optimizer == n.name; });
        if (named == std::end(kOptimizerNames)) {
            std::string expected;
            for (const OptimizerName& n : kOptimizerNames)
                expected += (expected.empty() ? "" : " or ") + std::string(n.name);
            throw ConfigError("config.train.optimizer: \"" + optimizer + "\" (expected " +
                              expected + ")");
        }
        c.optimizer = named->kind;
        t.number("momentum", c.momentum, 0, 0.999999);
        t.number("weight_decay", c.weightDecay, 0, 1);
        t.number("beta1", c.beta1, 0, 0.999999);
        t.number("beta2", c.beta2, 0, 0.999999999);
        t.number("eps", c.epsilon, 1e-30, 1);
        t.number("clip_norm", c.clipNorm, 0, kHuge);
        t.number("stats_every", c.statsEvery, 1, 1e9);
        t.number("histograms_every", c.histogramsEvery, 1, 1e9);
        t.number("record_budget_mb", c.recordBudgetMb, 0, 1e9);
        t.number("eval_every", c.evalEvery, 0, 1e9);
        t.number("checkpoint_every", c.checkpointEvery, 0, 1e12);
        t.finish();
        if (c.steps == 0 && c.epochs == 0)
            throw ConfigError("config.train: steps and epochs are both 0; set one of them");
    }
    if (top.has("recipe"))
        readRecipe(top.at("recipe"), c.recipe);
    if (top.has("scaling")) {
        Reader s(top.at("scaling"), "config.scaling");
        std::string policy(toString(c.scalingPolicy));
        s.text("policy", policy);
        const std::optional<ScalingPolicy> parsed = parseScalingPolicy(policy);
        if (!parsed)
            throw ConfigError("config.scaling.policy: \"" + policy + "\" (expected " +
                              scalingPolicyNames() + ")");
        if (*parsed != c.scalingPolicy) // a policy's own defaults, unless given below
            c.tensors.weightTiles =
                *parsed == ScalingPolicy::Nvfp4 || *parsed == ScalingPolicy::Blockwise;
        c.scalingPolicy = *parsed;
        if (info(c.scalingPolicy).adaptsLossScale)
            c.lossScale = 65536.0; // GradScaler's initial scale unless given
        s.number("scale", c.lossScale, 1.0 / (1ull << 40), 1e30);
        DynamicScalerSettings& d = c.dynamic;
        s.number("growth_factor", d.growthFactor, 1.0, 1e6);
        s.number("backoff_factor", d.backoffFactor, 1e-6, 1.0);
        s.number("growth_interval", d.growthInterval, 1, 1e12);
        s.number("min_scale", d.minScale, 0.0, 1e30);
        s.number("max_scale", d.maxScale, 0.0, 1e30);
        if (d.maxScale > 0 && d.minScale > d.maxScale) // max_scale 0: no maximum
            throw ConfigError("config.scaling.min_scale: " + json(d.minScale).dump() +
                              " is larger than config.scaling.max_scale " +
                              json(d.maxScale).dump());
        s.number("hysteresis", d.hysteresis, 1, 1e6);
        s.number("floor", d.floorInitial, 0.0, 1e30);
        s.number("floor_growth", d.floorGrowth, 1.0, 1e6);
        s.number("floor_interval", d.floorInterval, 1, 1e12);
        s.number("floor_max", d.floorMax, 0.0, 1e30);
        s.number("per_layer_cap", c.perLayerCap, 1.0, 1e30);
        s.number("cumulative_cap", c.cumulativeCap, 1.0, 1e30);
        readTensorScalingKeys(s, c.tensors);
        s.flag("hadamard", c.hadamard);
        s.finish();
    }
    if (top.has("timeline")) {
        c.timeline = readTimeline(top.at("timeline"), c);
        // Its run writes it back as config.json, which must read again.
        if (!c.timeline.empty())
            if (const std::size_t bytes = c.toJson().dump(2).size() + 1; bytes > kConfigMaxBytes)
                throw ConfigError("config.timeline: its " + std::to_string(c.timeline.size()) +
                                  " edits make a config.json of " + std::to_string(bytes >> 20) +
                                  " MiB, more than the 16 MiB a config may be to replay");
    }
    top.finish();
    return c;
}

TrainConfig applyEdit(const TrainConfig& config, const json& patch) {
    if (!patch.is_object() || patch.empty())
        throw ConfigError("expected an object of train.lr, scaling or recipe, got " +
                          patch.dump().substr(0, 80));
    for (auto it = patch.begin(); it != patch.end(); ++it) {
        const bool lrOnly =
            it.key() == "train" && it->is_object() && it->size() == 1 && it->contains("lr");
        if (!lrOnly && it.key() != "scaling" && it.key() != "recipe")
            throw ConfigError(it.key() + ": cannot change while a run goes (expected train.lr, " +
                              "scaling or recipe)");
    }
    TrainConfig base = config;
    base.timeline.clear();
    json merged = base.toJson();
    mergeConfig(merged, patch);
    TrainConfig next = configFromJson(merged);
    next.timeline = config.timeline;
    return next;
}

TrainConfig configAfterSteps(const TrainConfig& config, std::int64_t stepsTaken) {
    TrainConfig now = config;
    now.timeline.clear();
    for (const TimedEdit& edit : config.timeline) {
        if (edit.step > stepsTaken)
            break; // in step order
        try {
            now = applyEdit(now, edit.set);
        } catch (const ConfigError&) {
        }
    }
    return now;
}

// "recipe.weights.format: fp8-e5m2 -> fp8-e4m3; ..." for every leaf that differs.
} // namespace plab
