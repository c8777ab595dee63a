// Config parsing: defaults, JSON round trip, presets, --set, and errors that name the key path.
#include <QTest>

#include "train/train_config.h"

using namespace plab;
using nlohmann::json;

class TestConfig : public QObject {
    Q_OBJECT
private slots:
    void defaultsRoundTrip();
    void presetsParse();
    void settings();
    void errors_data();
    void errors();
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
    QVERIFY(amp.scalingPolicy == "dynamic");
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
    QTest::newRow("backoff") << R"({"scaling": {"policy": "dynamic", "backoff_factor": 2}})"
                             << "config.scaling.backoff_factor";
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

QTEST_APPLESS_MAIN(TestConfig)
#include "test_config.moc"
