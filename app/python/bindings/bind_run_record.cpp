// read_run() and read_histograms(): a run record through the core's RunRecord, as columns the
// package turns into pandas DataFrames (precision_lab.open_run).
#include "bindings.h"

#include "record/run_record.h"

#include <pybind11/stl.h>

namespace plab::python {
namespace {

py::object fromJson(const nlohmann::json& j) {
    if (j.is_null())
        return py::none();
    return py::module_::import("json").attr("loads")(j.dump());
}

// NaN as the record's "not measured" (a NULL column reads as NaN).
py::dict stepColumns(const std::vector<StepScalars>& steps) {
    std::vector<std::int64_t> step, epoch, skipped;
    std::vector<double> loss, accuracy, scale, samples, lr, testLoss, testAccuracy;
    for (const StepScalars& s : steps) {
        step.push_back(s.step);
        epoch.push_back(s.epoch);
        loss.push_back(s.loss);
        accuracy.push_back(s.accuracy);
        scale.push_back(s.scale);
        skipped.push_back(s.skipped ? 1 : 0);
        samples.push_back(s.samplesPerSecond);
        lr.push_back(s.learningRate);
        testLoss.push_back(s.testLoss);
        testAccuracy.push_back(s.testAccuracy);
    }
    py::dict d;
    d["step"] = step;
    d["epoch"] = epoch;
    d["loss"] = loss;
    d["accuracy"] = accuracy;
    d["scale"] = scale;
    d["skipped"] = skipped;
    d["samples_per_s"] = samples;
    d["lr"] = lr;
    d["test_loss"] = testLoss;
    d["test_accuracy"] = testAccuracy;
    return d;
}

struct StatColumns {
    std::vector<std::int64_t> step, stage;
    std::vector<std::string> stageName, role, format, scaling;
    std::vector<std::uint64_t> total, zero, flushed, subnormal, normal, overflow, nan, updates,
        lostUpdates, blocks, saturatedBlocks;
    std::vector<double> amax, flushedShare, gradScale, tensorScale, mse, sqnrDb, normRelError;

    void add(const StatsRow& row, const std::vector<std::string>& names) {
        step.push_back(row.step);
        stage.push_back(static_cast<std::int64_t>(row.stage));
        stageName.push_back(row.stage < names.size() ? names[row.stage] : "?");
        role.emplace_back(toString(row.role));
        format.push_back(row.format);
        std::uint64_t n = 0;
        for (std::uint64_t c : row.counts)
            n += c;
        total.push_back(n);
        zero.push_back(row.counts[static_cast<std::size_t>(QuantClass::Zero)]);
        flushed.push_back(row.counts[static_cast<std::size_t>(QuantClass::Underflow)]);
        subnormal.push_back(row.counts[static_cast<std::size_t>(QuantClass::Subnormal)]);
        normal.push_back(row.counts[static_cast<std::size_t>(QuantClass::Normal)]);
        overflow.push_back(row.counts[static_cast<std::size_t>(QuantClass::Overflow)]);
        nan.push_back(row.counts[static_cast<std::size_t>(QuantClass::NaN)]);
        amax.push_back(row.amax);
        flushedShare.push_back(row.flushedShare());
        updates.push_back(row.updates);
        lostUpdates.push_back(row.lostUpdates);
        gradScale.push_back(row.gradientScale);
        tensorScale.push_back(row.tensorScale);
        scaling.push_back(row.scaling);
        blocks.push_back(row.blocks);
        saturatedBlocks.push_back(row.saturatedBlocks);
        const bool measured = row.error.measured();
        mse.push_back(measured ? row.error.mse() : std::nan(""));
        sqnrDb.push_back(measured ? row.error.sqnrDb() : std::nan(""));
        normRelError.push_back(measured ? row.error.normRelativeError() : std::nan(""));
    }

    // layers.csv's columns, in its order (kLayersCsvHeader; test_watch.py's
    // test_open_run_reads_a_cli_run checks them against the file).
    py::dict columns() const {
        py::dict d;
        d["step"] = step;
        d["stage"] = stage;
        d["stage_name"] = stageName;
        d["role"] = role;
        d["format"] = format;
        d["total"] = total;
        d["zero"] = zero;
        d["flushed"] = flushed;
        d["subnormal"] = subnormal;
        d["normal"] = normal;
        d["overflow"] = overflow;
        d["nan"] = nan;
        d["amax"] = amax;
        d["flushed_share"] = flushedShare;
        d["updates"] = updates;
        d["lost_updates"] = lostUpdates;
        d["grad_scale"] = gradScale;
        d["tensor_scale"] = tensorScale;
        d["blocks"] = blocks;
        d["saturated_blocks"] = saturatedBlocks;
        d["mse"] = mse;
        d["sqnr_db"] = sqnrDb;
        d["norm_rel_error"] = normRelError;
        d["scaling"] = scaling;
        return d;
    }
};

py::dict readRun(const std::string& dir) {
    const RunRecord record(dir);
    py::dict d;
    d["dir"] = dir;
    d["stage_names"] = record.stageNames();
    d["config"] = fromJson(record.config());
    d["source"] = fromJson(record.meta("source"));
    d["watch"] = fromJson(record.meta("watch"));
    d["formats"] = record.judgedFormats();
    d["steps"] = stepColumns(record.steps());
    StatColumns stats;
    // A watched run's rows a format at a time (each format's rows in the order written).
    std::vector<std::string> formats = record.judgedFormats();
    if (formats.empty())
        formats.emplace_back(); // a trained run: all its rows
    for (const std::string& f : formats)
        for (const StatsRow& row : record.statsRows(f))
            stats.add(row, record.stageNames());
    d["stats"] = stats.columns();
    std::vector<std::int64_t> dStep, dStage, live, zeroScale;
    std::vector<std::string> dName, dRole, dFormat;
    std::vector<double> kurtosis, spread;
    for (const DiagnosticsRow& r : record.diagnosticsRows()) {
        dStep.push_back(r.step);
        dStage.push_back(static_cast<std::int64_t>(r.stage));
        dName.push_back(record.stageNames()[r.stage]);
        dRole.push_back(std::string(toString(r.role)));
        dFormat.push_back(r.format);
        kurtosis.push_back(r.kurtosis);
        spread.push_back(r.scaleLog2StdDev);
        live.push_back(static_cast<std::int64_t>(r.liveBlocks));
        zeroScale.push_back(static_cast<std::int64_t>(r.zeroScaleBlocks));
    }
    py::dict diagnostics;
    diagnostics["step"] = dStep;
    diagnostics["stage"] = dStage;
    diagnostics["stage_name"] = dName;
    diagnostics["role"] = dRole;
    diagnostics["format"] = dFormat;
    diagnostics["kurtosis"] = kurtosis;
    diagnostics["block_scale_log2_std"] = spread;
    diagnostics["live_blocks"] = live;
    diagnostics["zero_scale_blocks"] = zeroScale;
    d["diagnostics"] = diagnostics;
    py::list events;
    for (const RecordedEvent& e : record.events()) {
        py::dict row;
        row["step"] = e.step;
        row["type"] = e.type;
        row["message"] = e.message;
        row["change"] = fromJson(e.change);
        events.append(row);
    }
    d["events"] = events;
    d["summary"] = fromJson(toJson(record.summary()));
    d["live"] = record.isBeingWritten();
    return d;
}

py::list readHistograms(const std::string& dir, std::optional<std::int64_t> onlyStep) {
    const RunRecord record(dir);
    py::list rows;
    const std::vector<std::int64_t> steps =
        onlyStep ? std::vector<std::int64_t>{*onlyStep} : record.histogramSteps();
    for (std::int64_t step : steps) {
        const std::optional<RecordedStatistics> st = record.histogramsAt(step);
        if (!st)
            continue;
        for (std::size_t s = 0; s < st->stages.size(); ++s)
            for (TensorRole r : kAllRoles) {
                const auto& h = st->stages[s].role(r).histogram;
                std::uint64_t n = 0;
                for (std::uint64_t c : h)
                    n += c;
                if (n == 0)
                    continue; // not recorded
                py::array_t<std::uint64_t> bins(static_cast<py::ssize_t>(h.size()));
                std::copy(h.begin(), h.end(), bins.mutable_data());
                py::dict row;
                row["step"] = step;
                row["stage"] = s;
                row["stage_name"] = s < record.stageNames().size() ? record.stageNames()[s] : "?";
                row["role"] = std::string(toString(r));
                row["bins"] = bins;
                rows.append(row);
            }
    }
    return rows;
}

} // namespace

void bindRunRecord(py::module_& m) {
    m.def("read_run", &readRun, py::arg("dir"));
    m.def("read_histograms", &readHistograms, py::arg("dir"), py::arg("step") = py::none());
}

} // namespace plab::python
