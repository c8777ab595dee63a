// Device selection without a GPU: parsing "auto|cpu|cuda[:N]", and resolveDevice against a fake
// CUDA backend that reports usable and unusable devices, so every fallback rule is exercised on
// any machine. (The real backend's kernels are tested by tests/gpu on a GPU machine.)
#include <QTest>

#include <cmath>

#include "data/dataset.h"
#include "device/compute_backend.h"
#include "engine/host_kernel_ops.h"
#include "engine/tensor_ops.h"
#include "train/gpt_trainer.h"
#include "train/run_data.h"
#include "train/train_config.h"
#include "train/trainer.h"

using namespace plab;

class TestDeviceSelection : public QObject {
    Q_OBJECT
private slots:
    void parsesDeviceStrings();
    void rejectsBadDeviceStrings();
    void withoutCudaBackendEverythingIsCpu();
    void withFakeBackend();
    void configKeyIsChecked();
    void outOfDeviceMemoryFallsBackToCpu();
    void gptOutOfDeviceMemoryFallsBackToCpu();
};

namespace {

// Its training engine is the GPU kernels emulated on the host with a settable memory size.
std::size_t fakeDeviceMemory = SIZE_MAX;

class FakeCuda final : public ComputeBackend {
public:
    std::string name() const override { return "cuda"; }
    std::unique_ptr<TensorOps> makeTensorOps(int) const override {
        return makeHostKernelOps(HostStatistics::Immediate, fakeDeviceMemory);
    }
    DeviceReport probe() const override {
        DeviceReport r;
        r.backend = "cuda";
        r.available = true;
        r.summary = "2 device(s)";
        DeviceInfo old{0, "Old GPU", 6, 1, 8ull << 30, false, "compute capability 6.1 is older"};
        DeviceInfo good{1, "Good GPU", 9, 0, 80ull << 30, true, ""};
        r.devices = {old, good};
        return r;
    }
    void quantize(int, const QuantConfig&, std::span<const float>, std::span<float>, QuantStats*,
                  const QuantizeOptions&) const override {}
    DeviceTiming timeQuantize(int, const QuantConfig&, std::span<const float>, int,
                              bool) const override {
        return {};
    }
};

// A run whose GPU engine ran out of memory at set-up: on the CPU, saying why, and training.
void expectCpuFallback(TrainingRun& run) {
    QCOMPARE(run.deviceName(), std::string("cpu"));
    QVERIFY2(run.deviceNotice().find("out of memory") != std::string::npos &&
                 run.deviceNotice().find("; training on the CPU") != std::string::npos,
             run.deviceNotice().c_str());
    QVERIFY(std::isfinite(run.step().scalars.loss));
}

} // namespace

void TestDeviceSelection::parsesDeviceStrings() {
    QVERIFY(parseDeviceSpec("auto").kind == DeviceKind::Auto);
    QVERIFY(parseDeviceSpec("cpu").kind == DeviceKind::Cpu);
    const DeviceSpec cuda = parseDeviceSpec("cuda");
    QVERIFY(cuda.kind == DeviceKind::Cuda);
    QCOMPARE(cuda.index, 0);
    QCOMPARE(parseDeviceSpec("cuda:3").index, 3);
    QCOMPARE(toString(parseDeviceSpec("cuda")), std::string("cuda:0"));
}

void TestDeviceSelection::rejectsBadDeviceStrings() {
    for (const char* bad : {"", "gpu", "cuda:", "cuda:-1", "cuda:1x", "cuda:64", "CPU", "cuda0"}) {
        try {
            parseDeviceSpec(bad);
            QFAIL(bad);
        } catch (const DeviceError& e) {
            const std::string message = e.what();
            QVERIFY2(message.find(std::string("\"") + bad + "\"") != std::string::npos, e.what());
            QVERIFY2(message.find("expected auto, cpu, cuda or cuda:N") != std::string::npos,
                     e.what());
        }
    }
}

void TestDeviceSelection::withoutCudaBackendEverythingIsCpu() {
    QVERIFY(findBackend("cuda") == nullptr); // this test links no plab_cuda
    const std::vector<DeviceReport> reports = deviceReports();
    QCOMPARE(reports.size(), std::size_t{2});
    QCOMPARE(reports[0].backend, std::string("cpu"));
    QVERIFY(reports[0].available);
    QVERIFY(!reports[1].available);
    QVERIFY2(reports[1].summary.find("not in this build") != std::string::npos,
             reports[1].summary.c_str());
    const DeviceChoice autoChoice = resolveDevice(parseDeviceSpec("auto"));
    QVERIFY(!autoChoice.cuda);
    QVERIFY2(autoChoice.notice.find("auto: no usable GPU (not in this build") == 0,
             autoChoice.notice.c_str());
    const DeviceChoice asked = resolveDevice(parseDeviceSpec("cuda:1"));
    QVERIFY(!asked.cuda);
    QVERIFY2(asked.notice.find("cuda:1: ") == 0 &&
                 asked.notice.find("; using the CPU") != std::string::npos,
             asked.notice.c_str());
    QVERIFY(resolveDevice(parseDeviceSpec("cpu")).notice.empty());
}

void TestDeviceSelection::withFakeBackend() {
    registerBackend(std::make_unique<FakeCuda>());
    // auto skips the unusable device 0 and says which GPU it took.
    const DeviceChoice autoChoice = resolveDevice(parseDeviceSpec("auto"));
    QVERIFY(autoChoice.cuda);
    QCOMPARE(autoChoice.index, 1);
    QCOMPARE(autoChoice.notice, std::string("auto: using cuda:1 (Good GPU)"));
    // An explicit unusable device falls back to the CPU with its reason.
    const DeviceChoice old = resolveDevice(parseDeviceSpec("cuda:0"));
    QVERIFY(!old.cuda);
    QCOMPARE(old.notice, std::string("cuda:0: cuda:0 (Old GPU) is not usable: compute capability "
                                     "6.1 is older; using the CPU"));
    // A device that is not there.
    const DeviceChoice missing = resolveDevice(parseDeviceSpec("cuda:5"));
    QVERIFY(!missing.cuda);
    QVERIFY2(missing.notice.find("no cuda:5 (2 device(s) found)") != std::string::npos,
             missing.notice.c_str());
    QVERIFY(resolveDevice(parseDeviceSpec("cuda:1")).cuda);
    QVERIFY(!resolveDevice(parseDeviceSpec("cpu")).cuda);
}

void TestDeviceSelection::configKeyIsChecked() {
    QCOMPARE(configFromJson({{"device", "cuda"}}).device, std::string("cuda:0"));
    QCOMPARE(configFromJson(nlohmann::json::object()).device, std::string("auto"));
    try {
        configFromJson({{"device", "tpu"}});
        QFAIL("no error");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("config.device: device \"tpu\"") == 0, e.what());
    }
}

// Out of device memory anywhere in the engine's set-up (here: the resident training set, long
// after the engine object itself was made) trains on the CPU with the reason, not an abort.
void TestDeviceSelection::outOfDeviceMemoryFallsBackToCpu() {
    QVERIFY(findBackend("cuda") != nullptr); // withFakeBackend registered it
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(1, 2000, 200));
    TrainConfig config = configFromJson({{"device", "cuda:1"}});
    config.batchSize = 32;
    config.model.hidden = {16};

    fakeDeviceMemory = SIZE_MAX;
    {
        Trainer roomy(config, data);
        QCOMPARE(roomy.deviceName(), std::string("host emulation of the GPU kernels"));
        QVERIFY(roomy.deviceNotice().empty());
    }
    // Room for the parameters but not for the training set's 2000 x 784 floats.
    fakeDeviceMemory = 1u << 20;
    Trainer tight(config, data);
    expectCpuFallback(tight);
    fakeDeviceMemory = SIZE_MAX;
}

// The GPT's rule is the MLP's: its parameters fit in 1 MiB, its batch's activations (the
// logits alone are 64 x 16 x 256 floats) do not, so the run is set up on the CPU with the reason.
void TestDeviceSelection::gptOutOfDeviceMemoryFallsBackToCpu() {
    QVERIFY(findBackend("cuda") != nullptr);
    const TrainConfig config = configFromJson(
        {{"device", "cuda:1"},
         {"model", {{"type", "gpt"}, {"context", 16}, {"width", 32}, {"heads", 2}, {"blocks", 1}}},
         {"train", {{"batch_size", 64}, {"steps", 2}}}});
    const std::shared_ptr<const DataSplit> data = loadRunData(config);

    fakeDeviceMemory = SIZE_MAX;
    {
        GptTrainer roomy(config, data);
        QCOMPARE(roomy.deviceName(), std::string("host emulation of the GPU kernels"));
    }
    fakeDeviceMemory = 1u << 20;
    GptTrainer tight(config, data);
    expectCpuFallback(tight);
    fakeDeviceMemory = SIZE_MAX;
}

QTEST_APPLESS_MAIN(TestDeviceSelection)
#include "test_device_selection.moc"
