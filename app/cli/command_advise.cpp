// `advise RUN`: which format each module's roles and products can take, from the run's recorded
// statistics (core/advise), as a table; --export writes it as a recipe, Transformer Engine YAML or
// a torchao filter.
#include "cli_commands.h"

#include "advise/advice_exports.h"
#include "advise/recipe_advice.h"
#include "record/record_error.h"
#include "record/record_file.h"
#include "record/run_record.h"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace plab::cli {

Command addAdviseCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "advise", "Which format each layer's tensors and products can take, from a run's record");
    struct Options {
        std::string run, maxFlushed = "1%", maxOverflow = "0", steps = "last:200",
                         flushedBlocks = "0.1%", saturatedBlocks = "100%", margin = "0.5",
                         exportKind, out;
        std::vector<std::string> ladder;
        double minSqnr = 20.0;
        bool fp4Noise = false;
    };
    auto o = std::make_shared<Options>();
    cmd->add_option("run", o->run, "Run folder (holds run.sqlite)")->required();
    cmd->add_option("--ladder", o->ladder,
                    "Formats and framework recipes to try, narrowest first (default: those of "
                    "nvfp4,mxfp8,fp8-block,fp8-delayed,fp8-current,bf16 the run recorded, else "
                    "every format it recorded; then fp32)")
        ->delimiter(',');
    cmd->add_option("--max-flushed", o->maxFlushed,
                    "Largest share of nonzero values flushed to zero at any step (default 1%)");
    cmd->add_option(
        "--max-overflow", o->maxOverflow,
        "Largest share of nonzero values past the format's max at any step (default 0)");
    cmd->add_option("--min-sqnr", o->minSqnr,
                    "Smallest signal-to-quantisation-noise ratio at any step, dB (default 20)");
    cmd->add_option("--max-flushed-blocks", o->flushedBlocks,
                    "Block formats: largest share of live blocks flushed whole (default 0.1%)");
    cmd->add_option("--max-saturated-blocks", o->saturatedBlocks,
                    "Block formats: largest share of blocks with a clipped element (default 100%)");
    cmd->add_option("--margin", o->margin,
                    "Advise only where the worst step is within this share of each limit "
                    "(default 0.5: half; 1: at the limits)");
    cmd->add_flag("--fp4-noise-check", o->fp4Noise,
                  "FP4 all the way (arXiv 2505.19115): judge 4-bit formats on gradients by "
                  "their norm against sqrt(3) times the quantisation noise, not --min-sqnr");
    cmd->add_option("--steps", o->steps, "Window: all, last:N or A:B (default last:200)");
    cmd->add_option("--export", o->exportKind,
                    "Write the advice as recipe, te-yaml (te-yaml-fp8: TE 2.4-2.12's names), "
                    "megatron or torchao");
    cmd->add_option("--out", o->out, "File for --export (default: standard output)");
    return {cmd, [o] {
                AdviceCriteria c;
                if (!o->ladder.empty())
                    c.ladder = o->ladder;
                c.maxFlushed = parseShare(o->maxFlushed, "--max-flushed");
                c.maxOverflow = parseShare(o->maxOverflow, "--max-overflow");
                c.maxFlushedBlocks = parseShare(o->flushedBlocks, "--max-flushed-blocks");
                c.maxSaturatedBlocks = parseShare(o->saturatedBlocks, "--max-saturated-blocks");
                c.minSqnrDb = o->minSqnr;
                c.margin = parseShare(o->margin, "--margin");
                c.fp4GradientNoise = o->fp4Noise;
                parseStepWindow(o->steps, c);
                checkCriteria(c);
                if (!o->out.empty() && o->exportKind.empty())
                    throw std::invalid_argument(
                        "--out: give --export recipe|te-yaml|te-yaml-fp8|megatron|torchao too");
                if (!o->exportKind.empty()) // before the record is read (a large one takes time)
                    checkAdviceExportKind(o->exportKind);
                std::unique_ptr<RunRecord> record;
                try {
                    record = std::make_unique<RunRecord>(o->run);
                } catch (const RecordError& e) {
                    throw std::invalid_argument(e.what());
                }
                const RunAdvice advice = adviseRun(*record, c);
                std::string exported;
                if (!o->exportKind.empty())
                    exported = adviceExport(advice, o->exportKind); // refused before any output
                if (!o->exportKind.empty() && o->out.empty()) {
                    if (std::fputs(exported.c_str(), stdout) < 0 || std::fflush(stdout) != 0)
                        throw OutputError("standard output: cannot be written");
                    return 0;
                }
                std::printf("advice for %s: statistics steps %lld..%lld (%zu steps), loss scale "
                            "%g%s\n",
                            o->run.c_str(), static_cast<long long>(advice.firstStep),
                            static_cast<long long>(advice.lastStep), advice.statisticsSteps,
                            advice.lossScale, advice.scaleVaried ? " (varied)" : "");
                int width = 6; // the longest module name sets the first column
                for (const RoleAdvice& r : advice.roles)
                    width = std::max(width, static_cast<int>(r.module.size()));
                std::printf("%-*s %-21s %-10s %s\n", width, "module", "role", "format",
                            "what decided it");
                for (const RoleAdvice& r : advice.roles)
                    std::printf("%-*s %-21s %-10s %s\n", width, r.module.c_str(),
                                std::string(toString(r.role)).c_str(),
                                r.chosen.empty() ? "-" : r.chosen.c_str(), r.summary.c_str());
                std::printf("\n%-*s %-16s %-10s %s\n", width, "module", "product", "format", "why");
                for (const GemmAdvice& g : advice.gemms)
                    std::printf("%-*s %-16s %-10s %s\n", width, g.module.c_str(), g.gemm.c_str(),
                                g.format.c_str(), g.reason.c_str());
                if (!o->out.empty()) {
                    try {
                        writeFileAtomically(o->out, exported);
                    } catch (const RecordError& e) {
                        std::fprintf(stderr, "precision-lab-cli: %s\n", e.what());
                        return kExitRecordFailed;
                    }
                    std::printf("\nwrote the advice as %s to %s\n", o->exportKind.c_str(),
                                o->out.c_str());
                }
                if (std::fflush(stdout) != 0)
                    throw OutputError("standard output: cannot be written");
                return 0;
            }};
}

} // namespace plab::cli
