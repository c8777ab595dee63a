// advise(): the core's recipe advisor (core/advise) on a run record, as plain rows that
// precision_lab.advise turns into DataFrames, and one export when asked for (export_advice).
#include "bindings.h"

#include "advise/advice_exports.h"
#include "advise/recipe_advice.h"
#include "record/run_record.h"

#include <pybind11/stl.h>

namespace plab::python {

void bindAdvise(py::module_& m) {
    m.def(
        "advise",
        [](const std::string& runDir, const std::vector<std::string>& ladder, double maxFlushed,
           double maxOverflow, double minSqnr, double maxFlushedBlocks, double maxSaturatedBlocks,
           double margin, const std::string& steps, const std::string& exportKind,
           bool fp4NoiseCheck) {
            AdviceCriteria c;
            c.ladder = ladder;
            c.maxFlushed = maxFlushed;
            c.maxOverflow = maxOverflow;
            c.minSqnrDb = minSqnr;
            c.maxFlushedBlocks = maxFlushedBlocks;
            c.maxSaturatedBlocks = maxSaturatedBlocks;
            c.margin = margin;
            c.fp4GradientNoise = fp4NoiseCheck;
            parseStepWindow(steps, c);
            RunAdvice a;
            {
                py::gil_scoped_release release;
                a = adviseRun(RunRecord(runDir), c);
            }
            py::list roles, gemms;
            for (const RoleAdvice& r : a.roles) {
                py::dict row;
                row["stage"] = r.stage;
                row["module"] = r.module;
                row["role"] = std::string(toString(r.role));
                row["format"] = r.chosen.empty() ? py::object(py::none()) : py::str(r.chosen);
                row["reason"] = r.summary;
                py::list verdicts;
                for (const FormatVerdict& v : r.verdicts) {
                    py::dict d;
                    d["format"] = v.format;
                    d["outcome"] = v.outcome == FormatVerdict::Outcome::Meets   ? "meets"
                                   : v.outcome == FormatVerdict::Outcome::Fails ? "fails"
                                                                                : "no data";
                    d["criterion"] = v.criterion;
                    d["value"] = v.value;
                    d["step"] = v.step;
                    d["reason"] = v.reason;
                    verdicts.append(d);
                }
                row["verdicts"] = verdicts;
                roles.append(row);
            }
            for (const GemmAdvice& g : a.gemms) {
                py::dict row;
                row["stage"] = g.stage;
                row["module"] = g.module;
                row["product"] = g.gemm;
                row["format"] = g.format;
                row["reason"] = g.reason;
                gemms.append(row);
            }
            py::dict out;
            out["roles"] = roles;
            out["gemms"] = gemms;
            out["first_step"] = a.firstStep;
            out["last_step"] = a.lastStep;
            out["statistics_steps"] = a.statisticsSteps;
            out["recorded_formats"] = a.recordedFormats;
            out["loss_scale"] = a.lossScale;
            // The export asked for, if any (ValueError when the advice cannot be that kind).
            if (!exportKind.empty())
                out["export"] = adviceExport(a, exportKind);
            return out;
        },
        py::arg("run_dir"), py::arg("ladder"), py::arg("max_flushed"), py::arg("max_overflow"),
        py::arg("min_sqnr"), py::arg("max_flushed_blocks"), py::arg("max_saturated_blocks"),
        py::arg("margin"), py::arg("steps"), py::arg("export_kind") = std::string(),
        py::arg("fp4_noise_check") = false);
}

} // namespace plab::python
