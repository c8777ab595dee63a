// Emulator and LossScaler: precision_lab.torch.emulate's hand-over to the core's EmulatedRun
// (the recipe's casts over the script's tensors, counted into the run record), the config
// builder that resolves a recipe, and the core's loss-scaling policies.
//
// Tensors come as addresses of float32, contiguous host memory that precision_lab/_emulate.py
// checked: the casts read and write the script's tensors where they are, GIL released.
#include "bindings.h"

#include "nn/model.h"
#include "recipe/dynamic_scaler.h"
#include "recipe/make_loss_scaler.h"
#include "record/run_commands.h"
#include "torch_runs/emulated_run.h"
#include "train/presets.h"
#include "train/run_config_builder.h"
#include "train/run_data.h"

#include <pybind11/stl.h>

namespace plab::python {
namespace {

float* address(std::uintptr_t pointer) {
    return reinterpret_cast<float*>(pointer); // NOLINT: the Python side checked it
}

TensorRole roleOf(const std::string& role) {
    const std::optional<TensorRole> r = parseRole(role);
    if (!r)
        throw py::value_error("role \"" + role + "\": expected a tensor role");
    return *r;
}

class Emulator {
public:
    Emulator(const std::string& dir, const std::string& configJson,
             const std::vector<std::string>& stageNames, int every, int histogramsEvery,
             unsigned threads, const std::string& description, bool overwrite) {
        EmulationSettings s;
        s.config = configFromJson(nlohmann::json::parse(configJson));
        s.stageNames = stageNames;
        s.every = every;
        s.histogramsEvery = histogramsEvery;
        s.threads = threads;
        s.description = nlohmann::json::parse(description);
        s.overwrite = overwrite;
        m_run = std::make_unique<EmulatedRun>(dir, s);
    }

    void cast(int stage, const std::string& role, std::uintptr_t in, std::uintptr_t out,
              std::size_t n, std::size_t rows, std::size_t cols, bool tiles, double agreedAmax,
              bool training) {
        const TensorRole r = roleOf(role);
        py::gil_scoped_release release;
        m_run->cast(stage, r, address(in), address(out), n, {rows, cols, tiles}, agreedAmax,
                    training);
    }
    // Whether the cast takes a per-tensor amax (current or delayed scaling): the amax that
    // data-parallel replicas reduce before casting, as Transformer Engine does.
    bool reducesAmax(int stage, const std::string& role) const {
        return m_run->caster().scalesByTensorAmax(stage, roleOf(role));
    }
    void castAlongBatch(int stage, const std::string& role, std::uintptr_t raw, std::uintptr_t out,
                        std::size_t batch, std::size_t width) {
        const TensorRole r = roleOf(role);
        py::gil_scoped_release release;
        m_run->castAlongBatch(stage, r, address(raw), address(out), batch, width);
    }
    void endStep(std::optional<double> loss, std::optional<double> lr, double scale, bool skipped,
                 std::map<std::string, double> metrics) {
        py::gil_scoped_release release;
        m_run->endStep(loss, lr, scale, skipped, std::move(metrics));
    }
    // What the Python side asks of the recipe for one stage and role.
    std::string format(int stage, const std::string& role) const {
        return m_run->caster().quantizer(stage, roleOf(role)).config().format.name;
    }
    bool isIdentity(int stage, const std::string& role) const {
        return m_run->caster().isPlain(stage, roleOf(role)) &&
               m_run->caster().quantizer(stage, roleOf(role)).isIdentity();
    }
    bool hadamardFor(int stage) const { return m_run->caster().hadamardFor(stage); }
    std::int64_t step() const { return m_run->step(); }
    std::vector<double> castingState() const { return m_run->castingState(); }
    void restoreCastingState(const std::vector<double>& state) {
        m_run->restoreCastingState(state);
    }
    bool statisticsStep() const { return m_run->statisticsStep(); }
    void event(const std::string& type, const std::string& message) { m_run->event(type, message); }
    void flush() {
        py::gil_scoped_release release;
        m_run->flush();
    }
    // The changes applied at this step boundary: (action, the patch as JSON text or "").
    std::vector<std::pair<std::string, std::string>> steer() {
        std::vector<SteeringChange> changes;
        {
            py::gil_scoped_release release;
            changes = m_run->steer();
        }
        std::vector<std::pair<std::string, std::string>> out;
        for (const SteeringChange& c : changes)
            out.emplace_back(c.action, c.set.is_null() ? std::string() : c.set.dump());
        return out;
    }
    bool holding() const { return m_run->holding(); }
    bool paused() const { return m_run->paused(); }
    std::string effectiveConfig() const { return m_run->effectiveConfig().toJson().dump(); }
    void close(const std::string& reason, bool finished) {
        py::gil_scoped_release release;
        m_run->close(reason, finished);
    }

private:
    std::unique_ptr<EmulatedRun> m_run;
};

// The run config a preset and a config document make (the CLI's builder and checks), as JSON.
std::string resolveConfig(const std::string& preset, const std::string& configJson) {
    RunConfigParts parts;
    parts.preset = preset;
    parts.base = nlohmann::json::parse(configJson);
    return configFromJson(buildRunConfigJson(parts)).toJson().dump();
}

// Where the core's own trainer starts for an MLP or CNN config: each weight layer's initial
// (weights (outputs, fan-in...), biases) and the training set as the trainer feeds it (features
// standardised, labels), so that a PyTorch model can start from the same point and the two
// engines be compared (tests/python/test_emulate.py).
py::dict coreStartingPoint(const std::string& configJson) {
    const TrainConfig config = configFromJson(nlohmann::json::parse(configJson));
    const std::shared_ptr<const DataSplit> data = loadRunData(config);
    const Model model(config.model, data->train.shape, data->train.classes);
    std::vector<float> params(model.parameterCount());
    model.initParameters(params.data(), config.seed, config.model.init, config.model.initScale);
    py::list layers;
    for (int s = 0; s < model.stageCount(); ++s) {
        const std::size_t l = model.stageWeightLayer(s);
        const Layer& layer = *model.layers()[l];
        const float* at = params.data() + model.parameterOffset(l);
        const std::size_t weights = layer.weightCount();
        const std::size_t biases = layer.parameterCount() - weights;
        py::array_t<float> w(static_cast<py::ssize_t>(weights));
        py::array_t<float> b(static_cast<py::ssize_t>(biases));
        std::copy(at, at + weights, w.mutable_data());
        std::copy(at + weights, at + weights + biases, b.mutable_data());
        layers.append(py::make_tuple(w, b));
    }
    const Dataset& train = data->train;
    py::array_t<float> features(
        {static_cast<py::ssize_t>(train.count()), static_cast<py::ssize_t>(train.shape.size())});
    std::copy(train.features.begin(), train.features.end(), features.mutable_data());
    py::array_t<std::uint8_t> labels(static_cast<py::ssize_t>(train.count()));
    std::copy(train.labels.begin(), train.labels.end(), labels.mutable_data());
    py::dict d;
    d["layers"] = layers;
    d["features"] = features;
    d["labels"] = labels;
    return d;
}

std::vector<std::pair<std::string, std::string>> presetTable() {
    std::vector<std::pair<std::string, std::string>> rows;
    for (const Preset& p : presets())
        rows.emplace_back(p.name, p.description);
    return rows;
}

// The core's loss-scaling policy of a config (makeLossScaler): the scale, its update after each
// step, and the state a checkpoint keeps.
class Scaler {
public:
    explicit Scaler(const std::string& configJson)
        : m_config(configFromJson(nlohmann::json::parse(configJson))),
          m_scaler(makeLossScaler(m_config)) {}
    double scale() const { return m_scaler->scale(); }
    void setScale(double scale) { m_scaler->setScale(scale); }
    std::string name() const { return m_scaler->name(); }
    std::pair<bool, std::string> update(bool overflow) {
        const ScaleDecision d = m_scaler->update(overflow);
        return {d.skipStep, d.reason};
    }
    bool overflowIsDivergence() const { return m_scaler->overflowIsDivergence(); }
    py::dict state() const {
        py::dict d;
        d["scale"] = m_scaler->scale();
        if (const auto* dynamic = dynamic_cast<const DynamicScaler*>(m_scaler.get())) {
            const DynamicScaler::State s = dynamic->state();
            d["steps"] = s.steps;
            d["clean_steps"] = s.cleanSteps;
            d["hysteresis_left"] = s.hysteresisLeft;
        }
        return d;
    }
    void setState(const py::dict& d) {
        if (auto* dynamic = dynamic_cast<DynamicScaler*>(m_scaler.get())) {
            DynamicScaler::State s;
            s.scale = d["scale"].cast<double>();
            s.steps = d["steps"].cast<std::int64_t>();
            s.cleanSteps = d["clean_steps"].cast<std::int64_t>();
            s.hysteresisLeft = d["hysteresis_left"].cast<int>();
            dynamic->setState(s);
        } else {
            m_scaler->setScale(d["scale"].cast<double>());
        }
    }

private:
    TrainConfig m_config;
    std::unique_ptr<LossScaler> m_scaler;
};

} // namespace

void bindEmulate(py::module_& m) {
    py::class_<Emulator>(m, "Emulator")
        .def(py::init<const std::string&, const std::string&, const std::vector<std::string>&, int,
                      int, unsigned, const std::string&, bool>(),
             py::arg("dir"), py::arg("config"), py::arg("stage_names"), py::arg("every"),
             py::arg("histograms_every"), py::arg("threads"), py::arg("description"),
             py::arg("overwrite"))
        .def("cast", &Emulator::cast, py::arg("stage"), py::arg("role"), py::arg("src"),
             py::arg("dst"), py::arg("n"), py::arg("rows"), py::arg("cols"), py::arg("tiles"),
             py::arg("agreed_amax") = RecipeCaster::kOwnAmax, py::arg("training") = true)
        .def("reduces_amax", &Emulator::reducesAmax)
        .def("cast_along_batch", &Emulator::castAlongBatch, py::arg("stage"), py::arg("role"),
             py::arg("raw"), py::arg("dst"), py::arg("batch"), py::arg("width"))
        .def("end_step", &Emulator::endStep, py::arg("loss"), py::arg("lr"), py::arg("scale"),
             py::arg("skipped"), py::arg("metrics") = std::map<std::string, double>())
        .def("format", &Emulator::format)
        .def("is_identity", &Emulator::isIdentity)
        .def("hadamard_for", &Emulator::hadamardFor)
        .def_property_readonly("step", &Emulator::step)
        .def("casting_state", &Emulator::castingState)
        .def("restore_casting_state", &Emulator::restoreCastingState, py::arg("state"))
        .def_property_readonly("statistics_step", &Emulator::statisticsStep)
        .def("event", &Emulator::event)
        .def("flush", &Emulator::flush)
        .def("steer", &Emulator::steer)
        .def_property_readonly("holding", &Emulator::holding)
        .def_property_readonly("paused", &Emulator::paused)
        .def("effective_config", &Emulator::effectiveConfig)
        .def("close", &Emulator::close, py::arg("reason"), py::arg("finished"));
    // What the app's controls do (core/record/run_commands.h): one command appended to a run's
    // commands file; its number.
    m.def(
        "send_run_command",
        [](const std::string& dir, const std::string& command) {
            return sendRunCommand(dir, nlohmann::json::parse(command));
        },
        py::arg("dir"), py::arg("command"));
    m.def("resolve_config", &resolveConfig, py::arg("preset"), py::arg("config"));
    m.def("presets", &presetTable);
    m.def("core_starting_point", &coreStartingPoint, py::arg("config"));
    py::class_<Scaler>(m, "LossScaler")
        .def(py::init<const std::string&>(), py::arg("config"))
        .def_property_readonly("scale", &Scaler::scale)
        .def("set_scale", &Scaler::setScale)
        .def_property_readonly("name", &Scaler::name)
        .def("update", &Scaler::update, py::arg("overflow"))
        .def_property_readonly("overflow_is_divergence", &Scaler::overflowIsDivergence)
        .def("state", &Scaler::state)
        .def("set_state", &Scaler::setState);
}

} // namespace plab::python
