// Config parsing: defaults, JSON round trip, presets, --set, and errors that name the key path.
#include <QTest>

#include "train/presets.h"
#include "train/train_config.h"

#include <functional>
#include <string>
#include <vector>

using namespace plab;
using nlohmann::json;

class TestConfig : public QObject {
    Q_OBJECT
private slots:
    void defaultsRoundTrip();
    void presetsParse();
    void presetsAreDataWithTheirPapers();
    void settings();
    void errors_data();
    void errors();
    void everyKeyReplaysFieldByField();
    void everyPresetReplaysFieldByField();
    void roleOverridesMergeIntoPresetRoles();
    void aTimelineThatCouldNotReplayIsRefused();
};

void TestConfig::defaultsRoundTrip() {
    const TrainConfig c = configFromJson(json::object());
    QCOMPARE(c.batchSize, 128);
    QVERIFY(c.recipe.roles[0].format.name == "fp32");
    const json once = c.toJson();
    QCOMPARE(configFromJson(once).toJson().dump(), once.dump());
}

void TestConfig::presetsParse() {
    for (const char* name :
         {"fp32", "fp16-noscale", "fp16-static", "bf16", "fp8-e5m2", "fp8-e4m3"}) {
        const TrainConfig c = configFromJson(findPreset(name).json);
        const json again = c.toJson();
        QCOMPARE(configFromJson(again).toJson().dump(), again.dump());
    }
    const TrainConfig e5m2 = configFromJson(findPreset("fp8-e5m2").json);
    QVERIFY(e5m2.recipe.config(0, 3, TensorRole::ActivationGradients).format.name == "fp8-e5m2");
    QVERIFY(e5m2.recipe.config(0, 3, TensorRole::MasterWeights).rounding == Rounding::Stochastic);
    QCOMPARE(configFromJson(findPreset("fp16-static").json).lossScale, 1024.0);
    QVERIFY_THROWS_EXCEPTION(ConfigError, findPreset("fp7"));
    const TrainConfig amp = configFromJson(findPreset("fp16-amp").json);
    QVERIFY(amp.scalingPolicy == ScalingPolicy::Dynamic);
    QCOMPARE(amp.lossScale, 65536.0);
    QCOMPARE(amp.dynamic.growthInterval, std::int64_t{2000});
    const TrainConfig mel = configFromJson(findPreset("fp8-e5m2-mellempudi").json);
    QVERIFY(mel.recipe.config(0, 3, TensorRole::Weights).format.name == "fp16"); // first layer
    QVERIFY(mel.recipe.config(2, 3, TensorRole::Weights).format.name == "fp16"); // last layer
    QVERIFY(mel.recipe.config(1, 3, TensorRole::Weights).format.name == "fp8-e5m2");
    QVERIFY(mel.recipe.config(1, 3, TensorRole::WeightGradients).rounding == Rounding::Stochastic);
}

void TestConfig::settings() {
    json j = json::object();
    applySetting(j, "train.lr=0.01");
    applySetting(j, "recipe.weights=fp16");
    applySetting(j, "model.hidden=[64,32]");
    const TrainConfig c = configFromJson(j);
    QCOMPARE(c.learningRate, 0.01);
    QVERIFY(c.recipe.roles[0].format.name == "fp16");
    QCOMPARE(c.model.hidden, (std::vector<int>{64, 32}));
    QVERIFY_THROWS_EXCEPTION(ConfigError, applySetting(j, "novalue"));
    // Overrides: first and last stage kept in FP32 while the rest is E5M2.
    const TrainConfig o = configFromJson(json::parse(R"({"recipe": {"weights": "fp8-e5m2",
        "overrides": [{"stage": 0, "weights": "fp32"}, {"stage": -1, "weights": "fp16"}]}})"));
    QVERIFY(o.recipe.config(0, 3, TensorRole::Weights).format.name == "fp32");
    QVERIFY(o.recipe.config(1, 3, TensorRole::Weights).format.name == "fp8-e5m2");
    QVERIFY(o.recipe.config(2, 3, TensorRole::Weights).format.name == "fp16");
}

void TestConfig::errors_data() {
    QTest::addColumn<QString>("jsonText");
    QTest::addColumn<QString>("mustMention");
    QTest::newRow("unknown key") << R"({"train": {"lrr": 1}})"
                                 << "config.train.lrr: unknown key";
    QTest::newRow("wrong type") << R"({"train": {"lr": "fast"}})"
                                << "config.train.lr: expected a number";
    QTest::newRow("integer expected") << R"({"train": {"batch_size": 1.5}})"
                                      << "config.train.batch_size: expected an integer";
    QTest::newRow("out of range") << R"({"train": {"batch_size": 0}})"
                                  << "out of range [1, 65536]";
    QTest::newRow("negative lr") << R"({"train": {"lr": -1}})"
                                 << "config.train.lr: -1 is out of range";
    QTest::newRow("bad format") << R"({"recipe": {"weights": "fp9"}})"
                                << "config.recipe.weights: format \"fp9\"";
    QTest::newRow("bad rounding")
        << R"({"recipe": {"weights": {"format": "fp16", "rounding": "up"}}})"
        << "rounding \"up\"";
    QTest::newRow("unknown role") << R"({"recipe": {"gradients": "fp16"}})"
                                  << "config.recipe.gradients: unknown key";
    QTest::newRow("optimizer") << R"({"train": {"optimizer": "rmsprop"}})"
                               << "config.train.optimizer";
    QTest::newRow("no length") << R"({"train": {"steps": 0, "epochs": 0}})"
                               << "steps and epochs are both 0";
    QTest::newRow("model type") << R"({"model": {"type": "rnn"}})"
                                << "config.model.type";
    QTest::newRow("not an object") << R"({"train": 5})"
                                   << "config.train: expected an object";
    QTest::newRow("policy") << R"({"scaling": {"policy": "zhao"}})"
                            << "config.scaling.policy";
    QTest::newRow("two accumulation modes")
        << R"({"recipe": {"accumulation": {"format": "e8m13", "every": 4, "promote_every": 128}}})"
        << "config.recipe.accumulation";
    QTest::newRow("scale rounding") << R"({"scaling": {"policy": "mx", "scale_rounding": "up"}})"
                                    << "config.scaling.scale_rounding";
    QTest::newRow("first amax scale")
        << R"({"scaling": {"policy": "amax-delayed", "amax_first_scale": "zero"}})"
        << "config.scaling.amax_first_scale";
    QTest::newRow("weight tiles") << R"({"scaling": {"policy": "nvfp4", "weight_tiles": 1}})"
                                  << "config.scaling.weight_tiles";
    QTest::newRow("block size") << R"({"scaling": {"policy": "blockwise", "block_size": -2}})"
                                << "config.scaling.block_size";
    QTest::newRow("backoff") << R"({"scaling": {"policy": "dynamic", "backoff_factor": 2}})"
                             << "config.scaling.backoff_factor";
    QTest::newRow("override scaling: the loss scale")
        << R"({"recipe": {"overrides": [{"stage": 0, "scaling": {"policy": "amax-current",
                                                                  "scale": 8}}]}})"
        << "config.recipe.overrides[0].scaling.scale: the run's setting (config.scaling.scale)";
    QTest::newRow("override scaling: a loss-scale policy")
        << R"({"recipe": {"overrides": [{"stage": 0, "scaling": {"policy": "dynamic"}}]}})"
        << "config.recipe.overrides[0].scaling.policy: \"dynamic\" scales the loss";
    QTest::newRow("override scaling: no policy")
        << R"({"recipe": {"overrides": [{"stage": 0, "scaling": {"margin": 1}}]}})"
        << "config.recipe.overrides[0].scaling.policy: missing";
    QTest::newRow("override scaling: a site")
        << R"({"recipe": {"overrides": [{"kind": "softmax", "scaling": {"policy": "mx"}}]}})"
        << "config.recipe.overrides[0].scaling: the softmax site is cast within";
    QTest::newRow("override scaling: a bad key")
        << R"({"recipe": {"overrides": [{"stage": 0, "scaling": {"policy": "mx",
                                                                  "scale_rounding": "up"}}]}})"
        << "config.recipe.overrides[0].scaling.scale_rounding: \"up\"";
    QTest::newRow("timeline not an array") << R"({"timeline": 5})"
                                           << "config.timeline: expected an array";
    QTest::newRow("timeline edits the model")
        << R"({"timeline": [{"step": 1, "set": {"model": {"hidden": [8]}}}]})"
        << "config.timeline[0].set.model: cannot change while a run goes";
    QTest::newRow("timeline edits train.steps")
        << R"({"timeline": [{"step": 1, "set": {"train": {"steps": 8}}}]})"
        << "config.timeline[0].set.train: cannot change while a run goes";
    QTest::newRow("timeline bad value")
        << R"({"timeline": [{"step": 1, "set": {"train": {"lr": -1}}}]})"
        << "config.timeline[0].set.train.lr: -1 is out of range";
    QTest::newRow("timeline out of order")
        << R"({"timeline": [{"step": 5, "set": {"train": {"lr": 0.1}}},
                            {"step": 2, "set": {"train": {"lr": 0.2}}}]})"
        << "config.timeline[1].step: 2 comes before the previous edit's step 5";
    QTest::newRow("timeline edit without set") << R"({"timeline": [{"step": 1}]})"
                                               << "config.timeline[0].set: missing";
    QTest::newRow("timeline unknown key")
        << R"({"timeline": [{"step": 1, "set": {"train": {"lr": 0.1}}, "at": 3}]})"
        << "config.timeline[0].at: unknown key";
    QTest::newRow("timeline negative step")
        << R"({"timeline": [{"step": -1, "set": {"train": {"lr": 0.1}}}]})"
        << "config.timeline[0].step: -1 is out of range";
}

void TestConfig::errors() {
    QFETCH(QString, jsonText);
    QFETCH(QString, mustMention);
    try {
        configFromJson(json::parse(jsonText.toStdString()));
        QFAIL("no error");
    } catch (const ConfigError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(mustMention), e.what());
        QVERIFY(!QString::fromUtf8(e.what()).contains(QLatin1Char('\n')));
    }
}

// What is accepted must replay: a timeline whose run's config.json would be larger than a
// config may be read back at is refused on the way in (it was accepted, and its replay refused).
void TestConfig::aTimelineThatCouldNotReplayIsRefused() {
    nlohmann::json many = {{"timeline", nlohmann::json::array()}};
    for (std::size_t i = 0; i <= kTimelineMaxEdits; ++i)
        many["timeline"].push_back({{"step", 1}, {"set", {{"scaling", {{"scale", 2.0}}}}}});
    try {
        configFromJson(many);
        QFAIL("20001 edits accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("20001 edits: at most 20000") != std::string::npos,
                 e.what());
    }
    // Few edits, each a recipe with many per-stage overrides: the file it writes is too large.
    nlohmann::json overrides = nlohmann::json::array();
    for (int stage = 0; stage < 1000; ++stage)
        overrides.push_back(
            {{"stage", stage},
             {"weights", {{"format", "fp16"}, {"rounding", "stochastic"}}},
             {"activations", {{"format", "bf16"}, {"rounding", "stochastic"}}},
             {"activation_gradients", {{"format", "fp8-e5m2"}, {"rounding", "stochastic"}}},
             {"weight_gradients", {{"format", "fp8-e5m2"}, {"rounding", "stochastic"}}}});
    nlohmann::json bulky = {{"timeline", nlohmann::json::array()}};
    for (int i = 0; i < 60; ++i)
        bulky["timeline"].push_back(
            {{"step", i}, {"set", {{"recipe", {{"overrides", overrides}}}}}});
    try {
        configFromJson(bulky);
        QFAIL("a config whose config.json cannot be read back was accepted");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("more than the 16 MiB a config may be to replay") !=
                     std::string::npos,
                 e.what());
    }
    bulky["timeline"].erase(bulky["timeline"].begin() + 2, bulky["timeline"].end());
    const TrainConfig fits = configFromJson(bulky); // two such edits fit, and read back
    QVERIFY(fits.toJson().dump(2).size() < kConfigMaxBytes);
    QCOMPARE(configFromJson(fits.toJson()).timeline.size(), std::size_t{2});
}

QTEST_APPLESS_MAIN(TestConfig)
namespace {

// Every leaf key of a JSON document, as "a.b.c".
void leafKeys(const json& j, const std::string& prefix, std::vector<std::string>& out) {
    if (!j.is_object() || j.empty()) {
        out.push_back(prefix);
        return;
    }
    for (auto it = j.begin(); it != j.end(); ++it)
        leafKeys(*it, prefix.empty() ? it.key() : prefix + "." + it.key(), out);
}

// Written, read back and compared as structures (every field), then written again: the text
// must not drift either.
void expectReplays(const TrainConfig& c, const QString& what) {
    const json written = c.toJson();
    const TrainConfig replay = configFromJson(written);
    QVERIFY2(replay == c,
             qPrintable(what + QStringLiteral(": ") + QString::fromStdString(written.dump())));
    QVERIFY2(replay.toJson() == written, qPrintable(what));
}

} // namespace

// Every key set to a value other than its default: the config read from its own config.json
// equals it field by field. A key the writer emits that this document does not set fails the
// test, so a new key cannot go untested.
void TestConfig::everyKeyReplaysFieldByField() {
    const json every = {
        {"seed", 18446744073709551615ull},
        {"threads", 3},
        {"device", "cpu"},
        {"data", {{"source", "fashion-mnist"}, {"train_size", 1234}, {"test_size", 321}}},
        {"model",
         {{"type", "cnn"},
          {"hidden", {7, 5}},
          {"activation", "tanh"},
          {"init", "uniform"},
          {"init_scale", 0.05},
          {"conv_channels1", 3},
          {"conv_channels2", 5},
          {"conv_kernel", 3}}},
        {"train",
         {{"steps", 17},
          {"epochs", 2},
          {"batch_size", 33},
          {"lr", 0.0123},
          {"optimizer", "adam"},
          {"momentum", 0.5},
          {"weight_decay", 1e-4},
          {"beta1", 0.8},
          {"beta2", 0.99},
          {"eps", 1e-6},
          {"clip_norm", 2.5},
          {"stats_every", 3},
          {"histograms_every", 4},
          {"record_budget_mb", 9},
          {"eval_every", 7},
          {"checkpoint_every", 500}}},
        {"recipe",
         {{"weights", {{"format", "fp8-e4m3"}, {"rounding", "stochastic"}, {"overflow", "inf"}}},
          {"activations", "bf16"},
          {"activation_gradients",
           {{"format", "fp8-e5m2"}, {"rounding", "stochastic"}, {"overflow", "saturate"}}},
          {"weight_gradients",
           {{"format", "e3m4:bias=5"}, {"rounding", "toward-zero"}, {"overflow", "saturate"}}},
          {"master_weights", "fp16"},
          {"optimizer_state",
           {{"format", "bf16"}, {"rounding", "nearest-away"}, {"overflow", "saturate"}}},
          {"accumulation", {{"format", "fp16"}, {"every", 4}}},
          {"overrides",
           {{{"stage", 0}, {"weights", "fp16"}},
            {{"stage", -1}, {"activations", "fp32"}},
            {{"stage", 1},
             {"scaling",
              {{"policy", "amax-delayed"},
               {"margin", 2},
               {"amax_history", 8},
               {"amax_algorithm", "most_recent"},
               {"amax_first_scale", "one"}}}},
            {{"stage", 2},
             {"weights", "fp4-e2m1"},
             {"scaling",
              {{"policy", "nvfp4"}, {"four_over_six", true}, {"weight_tiles", false}}}}}}}},
        {"scaling",
         {{"policy", "enhanced"},
          {"scale", 256.0},
          {"growth_factor", 3.0},
          {"backoff_factor", 0.25},
          {"growth_interval", 99},
          {"min_scale", 2.0},
          {"max_scale", 1e9},
          {"hysteresis", 2},
          {"floor", 4.0},
          {"floor_growth", 1.5},
          {"floor_interval", 77},
          {"floor_max", 1024.0},
          {"per_layer_cap", 8.0},
          {"cumulative_cap", 512.0},
          {"margin", 1},
          {"amax_history", 16},
          {"amax_algorithm", "most_recent"},
          {"amax_first_scale", "one"},
          {"block_size", 64},
          {"scale_rounding", "ceil"},
          {"weight_tiles", true},
          {"pow2_scales", true},
          {"four_over_six", true},
          {"hadamard", true}}},
        {"timeline",
         {{{"step", 5}, {"set", {{"train", {{"lr", 0.01}}}}}},
          {{"step", 9},
           {"set", {{"scaling", {{"scale", 4096.0}}}, {"recipe", {{"weights", "bf16"}}}}}}}}};
    TrainConfig c;
    try {
        c = configFromJson(every);
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    expectReplays(c, QStringLiteral("every key"));
    // Coverage: each leaf the writer emits was given a non-default value above.
    std::vector<std::string> written, given;
    leafKeys(c.toJson(), "", written);
    leafKeys(every, "", given);
    const json defaults = configFromJson(json::object()).toJson();
    for (const std::string& key : written) {
        const bool isGiven = std::find_if(given.begin(), given.end(), [&](const std::string& g) {
                                 return key == g || key.rfind(g + ".", 0) == 0;
                             }) != given.end();
        QVERIFY2(isGiven, qPrintable(QStringLiteral("config key %1 is written but not covered here")
                                         .arg(QString::fromStdString(key))));
        std::string pointer = "/";
        for (char ch : key)
            pointer.push_back(ch == '.' ? '/' : ch);
        const json::json_pointer ptr(pointer);
        if (defaults.contains(ptr))
            QVERIFY2(defaults.at(ptr) != c.toJson().at(ptr) ||
                         key.find("overflow") != std::string::npos ||
                         key.find("rounding") != std::string::npos,
                     qPrintable(QStringLiteral("config key %1 is tested at its default value")
                                    .arg(QString::fromStdString(key))));
    }
    // A stage kind's own scaling (the GPT's head in MXFP8 blocks) replays too.
    expectReplays(configFromJson({{"model", {{"type", "gpt"}}},
                                  {"recipe",
                                   {{"overrides",
                                     {{{"kind", "head"},
                                       {"weights", "fp8-e4m3"},
                                       {"scaling", {{"policy", "mx"}, {"block_size", 16}}}}}}}}}),
                  QStringLiteral("a kind's scaling"));
    // Accumulation without "every" (one rounding of the whole sum) replays too.
    expectReplays(configFromJson({{"recipe", {{"accumulation", {{"format", "bf16"}}}}}}),
                  QStringLiteral("accumulation without every"));
}

// The presets are the data file's (core/train/presets.json): each names its paper and says in a
// line what it is; a table entry without either, or named twice, or with a config the reader
// refuses, is refused by name.
void TestConfig::presetsAreDataWithTheirPapers() {
    QVERIFY(presets().size() >= 17);
    for (const Preset& p : presets()) {
        QVERIFY2(!p.paper.empty() && !p.description.empty(), p.name.c_str());
        QVERIFY2(p.description.find('\n') == std::string::npos, p.name.c_str()); // one line
    }
    QVERIFY(findPreset("fp8-e5m2-mellempudi").paper.find("arXiv 1905.12334") != std::string::npos);
    QVERIFY(findPreset("fp16-zhao").paper.find("arXiv 1910.12385") != std::string::npos);
    const auto refusal = [](const char* table) {
        try {
            readPresetTable(table);
        } catch (const std::logic_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    QCOMPARE(refusal(R"({"presets": [{"name": "x", "description": "d", "config": {}}]})"),
             std::string("presets.json: preset \"x\": \"paper\" is missing or empty"));
    QCOMPARE(refusal(R"({"presets": [{"name": "x", "paper": "p", "description": ""}]})"),
             std::string("presets.json: preset \"x\": \"description\" is missing or empty"));
    QCOMPARE(refusal(R"({"presets": [{"name": "x", "paper": "p", "description": "d"},
                                     {"name": "x", "paper": "p", "description": "d"}]})"),
             std::string("presets.json: preset \"x\" is given twice"));
    QVERIFY(refusal(R"({"presets": [{"name": "x", "paper": "p", "description": "d",
                                     "config": {"recipe": {"weights": "fp7"}}}]})")
                .find("preset \"x\": config.recipe.weights") != std::string::npos);
    QVERIFY(readPresetTable(R"({"presets": [{"name": "x", "paper": "p", "description": "d"}]})")
                .front()
                .json == nlohmann::json::object()); // no config: the defaults
}

void TestConfig::everyPresetReplaysFieldByField() {
    for (const Preset& p : presets()) {
        expectReplays(configFromJson(p.json), QString::fromStdString(p.name));
        json cnn = p.json;
        cnn["model"] = {{"type", "cnn"}, {"init", "uniform"}};
        expectReplays(configFromJson(cnn), QString::fromStdString(p.name + " on the cnn"));
    }
}

// --set recipe.weights.rounding=stochastic on a preset whose weights are "fp16" keeps FP16.
void TestConfig::roleOverridesMergeIntoPresetRoles() {
    json j = findPreset("fp16-noscale").json;
    applySetting(j, "recipe.weights.rounding=stochastic");
    const TrainConfig c = configFromJson(j);
    const QuantConfig& w = c.recipe.roles[static_cast<std::size_t>(TensorRole::Weights)];
    QCOMPARE(w.format.name, std::string("fp16"));
    QVERIFY(w.rounding == Rounding::Stochastic);
    json k = findPreset("fp16-noscale").json;
    mergeConfig(k, {{"recipe", {{"activations", {{"rounding", "stochastic"}}}}}});
    const TrainConfig merged = configFromJson(k);
    const QuantConfig& a = merged.recipe.roles[static_cast<std::size_t>(TensorRole::Activations)];
    QCOMPARE(a.format.name, std::string("fp16"));
    QVERIFY(a.rounding == Rounding::Stochastic);
}

#include "test_config.moc"
