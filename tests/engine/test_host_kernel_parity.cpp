// The GPU engine's kernels, run on the host (KernelOps with the host policy), against the CPU
// engine (and both engines, operation by operation, against references written from the
// contract: op_cases.h): every layer's forward and backward (tests/engine/layer_cases.h), the whole
// GPT's, the loss and reductions, the scaled and MX quantisers (bit for bit), the optimisers,
// training runs of every preset on the MLP and on the GPT (compared on several seeds: see
// engine_parity.h), and statistics that arrive a step late as a GPU's do. The CUDA build runs the
// same checks on a device (tests/gpu/test_gpu_engine.cpp); this one runs everywhere, so the
// kernels' arithmetic and indexing are tested on every CI run.
//
// Usage: test_host_kernel_parity [kernels | presets K/N | gpt K/N] [--sanitizer]: everything;
// the kernel checks and the CNN's training runs; or part K of N of the presets' training runs on
// the MLP, or on the GPT (CTest runs the parts in parallel). --sanitizer: the training runs as
// the sanitizer builds run them, a few steps on one seed each (engine_parity.h: memoryCheckPlan);
// in full they took 7 minutes of the ASan stage.
#include "engine/cpu_ops.h"
#include "engine/host_kernel_ops.h"
#include "engine_parity.h"
#include "op_cases.h"

#include <cstdio>
#include <memory>
#include <string>

int main(int argc, char** argv) {
    using namespace plab;
    const bool sanitizer = argc > 1 && std::string(argv[argc - 1]) == "--sanitizer";
    argc -= sanitizer ? 1 : 0;
    const std::string what = argc > 1 ? argv[1] : "all";
    // 150 steps of every preset on 3 seeds, on a narrower MLP and fewer CNN steps than the GPU
    // test so that the serial emulation takes seconds; the GPT's 200 steps at batch 4.
    parity::TrainingRuns plan{150, 32, {64, 64}, 30, 16, 200, 4};
    const bool parted = what == "presets" || what == "gpt";
    if (parted && (argc < 3 || std::sscanf(argv[2], "%d/%d", &plan.part, &plan.parts) != 2 ||
                   plan.parts < 1 || plan.part < 1 || plan.part > plan.parts)) {
        std::fprintf(stderr, "%s: expected a part K/N with 1 <= K <= N\n", what.c_str());
        return 2;
    }
    if (what != "all" && what != "kernels" && !parted) {
        std::fprintf(stderr, "%s: expected kernels, presets K/N or gpt K/N\n", what.c_str());
        return 2;
    }
    plan.part = parted ? plan.part - 1 : 0; // 0-based from here
    plan.presetRuns = what == "all" || what == "presets";
    plan.gptRuns = what == "all" || what == "gpt";
    plan.cnnRun = what == "all" || what == "kernels";
    if (sanitizer)
        plan = parity::memoryCheckPlan(plan);
    parity::Report report;
    const parity::OpsFactory hostKernels = [] { return makeHostKernelOps(); };
    if (!parted) {
        // Every operation against its reference, on both engines.
        parity::opTable(hostKernels, report);
        parity::opTable([] { return std::make_unique<CpuOps>(); }, report);
        parity::layers(hostKernels, report);
        parity::gptModel(hostKernels, report);
        parity::lossAndReductions(hostKernels, report);
        parity::quantisers(hostKernels, report);
        parity::optimisers(hostKernels, report);
        parity::lateStatistics([] { return makeHostKernelOps(HostStatistics::Late); }, hostKernels,
                               report);
        parity::replays(hostKernels, report);
        parity::replays([] { return std::make_unique<CpuOps>(); }, report); // the CPU's too
    }
    parity::training(hostKernels, plan, report);
    return parity::finish(report, "host emulation of the GPU engine vs the CPU engine");
}
