// Recorder: the PyTorch watcher's hand-over to the core's WatchRecorder. The watcher's hooks
// capture() copies of tensors into the step being assembled; submit() hands the step to the
// counting thread, which never holds the GIL.
#include "bindings.h"

#include "torch_runs/watch_recorder.h"

#include <pybind11/stl.h>

#include <cstring>

namespace plab::python {
namespace {

class Recorder {
public:
    Recorder(const std::string& dir, const std::vector<std::string>& formats,
             const std::vector<std::string>& stageNames, int every, std::size_t queueSteps,
             unsigned threads, const std::string& description, bool overwrite) {
        WatchSettings s;
        s.formats = formats;
        s.stageNames = stageNames;
        s.every = every;
        s.queueSteps = queueSteps;
        s.threads = threads;
        s.description = nlohmann::json::parse(description);
        s.overwrite = overwrite;
        m_recorder = std::make_unique<WatchRecorder>(dir, s);
    }

    std::vector<std::string> formats() const { return m_recorder->settings().formats; }

    void capture(std::size_t stage, const std::string& role, const py::handle& values,
                 std::size_t rowLength, float multiplier) {
        const std::optional<TensorRole> r = parseRole(role);
        if (!r)
            throw py::value_error("role \"" + role +
                                  "\": expected one of weights, activations, "
                                  "activation_gradients, weight_gradients");
        if (stage >= m_recorder->settings().stageNames.size())
            throw py::value_error("stage " + std::to_string(stage) + ": the watcher has " +
                                  std::to_string(m_recorder->settings().stageNames.size()));
        const py::array a = checkedFloatArray(values, role, false);
        const std::span<float> v = floatValues(a);
        CapturedTensor t;
        t.stage = stage;
        t.role = *r;
        t.rowLength = rowLength;
        t.multiplier = multiplier;
        {
            py::gil_scoped_release release; // the copy is the capture's whole cost
            t.values.resize(v.size());
            std::memcpy(t.values.data(), v.data(), v.size_bytes());
        }
        m_pending.tensors.push_back(std::move(t));
    }

    bool submit(std::int64_t step, std::optional<double> loss, std::optional<double> lr,
                double scale, bool statistics, std::map<std::string, double> metrics) {
        m_pending.step = step;
        m_pending.metrics = std::move(metrics);
        m_pending.loss = loss;
        m_pending.learningRate = lr;
        m_pending.scale = scale;
        m_pending.statistics = statistics;
        WatchedStep ready = std::move(m_pending);
        m_pending = WatchedStep{};
        py::gil_scoped_release release;
        return m_recorder->submit(std::move(ready));
    }

    void event(std::int64_t step, const std::string& type, const std::string& message) {
        m_recorder->event(step, type, message);
    }
    void flush() {
        py::gil_scoped_release release;
        m_recorder->flush();
    }
    void close(const std::string& reason, bool finished) {
        m_pending = WatchedStep{};
        py::gil_scoped_release release;
        m_recorder->close(reason, finished);
    }
    std::uint64_t dropped() const { return m_recorder->droppedSteps(); }
    std::uint64_t recorded() const { return m_recorder->recordedSteps(); }
    std::size_t pendingTensors() const { return m_pending.tensors.size(); }

private:
    std::unique_ptr<WatchRecorder> m_recorder;
    WatchedStep m_pending;
};

} // namespace

void bindWatch(py::module_& m) {
    py::class_<Recorder>(m, "Recorder")
        .def(py::init<const std::string&, const std::vector<std::string>&,
                      const std::vector<std::string>&, int, std::size_t, unsigned,
                      const std::string&, bool>(),
             py::arg("dir"), py::arg("formats"), py::arg("stage_names"), py::arg("every"),
             py::arg("queue_steps"), py::arg("threads"), py::arg("description"),
             py::arg("overwrite"))
        .def_property_readonly("formats", &Recorder::formats)
        .def("capture", &Recorder::capture, py::arg("stage"), py::arg("role"), py::arg("values"),
             py::arg("row_length"), py::arg("multiplier"))
        .def("submit", &Recorder::submit, py::arg("step"), py::arg("loss"), py::arg("lr"),
             py::arg("scale"), py::arg("statistics"),
             py::arg("metrics") = std::map<std::string, double>())
        .def("event", &Recorder::event)
        .def("flush", &Recorder::flush)
        .def("close", &Recorder::close, py::arg("reason") = "completed", py::arg("finished") = true)
        .def_property_readonly("dropped_steps", &Recorder::dropped)
        .def_property_readonly("recorded_steps", &Recorder::recorded)
        .def_property_readonly("pending_tensors", &Recorder::pendingTensors);
}

} // namespace plab::python
