// Engine parity checks: the same inputs through CpuOps and the candidate, compared on the host.
#include "engine_parity.h"

#include "layer_cases.h"
#include "parity_helpers.h"

#include "engine/cpu_ops.h"
#include "gpt/gpt_model.h"
#include "nn/activation.h"
#include "nn/conv2d.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/max_pool2d.h"
#include "train/gpt_trainer.h"
#include "train/presets.h"
#include "train/run_data.h"
#include "train/trainer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <utility>

namespace plab::parity {

void Report::expect(bool ok, const std::string& what) {
    ++checks;
    if (!ok)
        failures.push_back(what);
}

double normalisedError(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size())
        return INFINITY;
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
        if (std::isnan(d) && !(std::isnan(a[i]) && std::isnan(b[i])))
            return INFINITY;
        if (!std::isnan(d))
            diff = std::max(diff, d);
        scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    }
    return scale == 0.0 ? diff : diff / scale;
}

int finish(const Report& report, const std::string& title) {
    for (const std::string& f : report.failures)
        std::printf("FAIL %s\n", f.c_str());
    std::printf("%s: %d checks, %zu failed\n", title.c_str(), report.checks,
                report.failures.size());
    return report.failures.empty() ? 0 : 1;
}

void layers(const OpsFactory& candidate, Report& report) {
    const Quantizer fp16(QuantConfig::forFormat(parseFormat("fp16")));
    const Quantizer bf16sr(QuantConfig::forFormat(parseFormat("bf16"), Rounding::Stochastic));
    const Quantizer e8m13(QuantConfig::forFormat(parseFormat("e8m13")));
    struct AccCase {
        std::string name;
        Accumulation acc;
        double bound;
    };
    const std::vector<AccCase> accumulations = {
        {"fp32 accumulation", {}, kFp32Bound},
        {"fp16 accumulator every 8", {&fp16, 8}, kAccumulatorBound},
        {"bf16 stochastic accumulator every 16", {&bf16sr, 16}, 4 * kAccumulatorBound},
        {"e8m13 promoted every 16", {&e8m13, 0, 16}, kAccumulatorBound},
        {"fp16 promoted every 8", {&fp16, 0, 8}, kAccumulatorBound},
    };
    for (const cases::LayerCase& c : cases::layerCases())
        for (const AccCase& a : accumulations) {
            if (a.acc.quantizer != nullptr && !c.accumulates)
                continue; // only products accumulate
            const std::vector<std::vector<float>> inputs = cases::caseInputs(c, 1);
            const std::vector<float> dout = randomValues(c.outputSize, 3);
            CpuOps cpu;
            const cases::CaseResult want = cases::runCase(cpu, c, inputs, dout, a.acc);
            const std::unique_ptr<TensorOps> ops = candidate();
            const cases::CaseResult got = cases::runCase(*ops, c, inputs, dout, a.acc);
            const std::string what = c.name + ", " + a.name;
            compare(report, what + ": forward", got.out, want.out, a.bound);
            for (std::size_t i = 0; i < want.grads.size(); ++i)
                compare(report,
                        what + (i == 0 ? ": input gradient"
                                       : ": gradient of parameter " + std::to_string(i)),
                        got.grads[i], want.grads[i], a.bound);
        }

    // A linear layer's weight gradient from operands kept transposed (the Hadamard path's):
    // the layer's own backward product, on both engines, under every accumulation (a batch of
    // 24: a partial chunk for the accumulators every 16).
    constexpr int kBatch = 24, kIn = 19, kOut = 7;
    const std::vector<float> dy = randomValues(kBatch * kOut, 21),
                             x = randomValues(kBatch * kIn, 22);
    auto transposed = [](const std::vector<float>& m, int rows, int cols) {
        std::vector<float> t(m.size());
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                t[static_cast<std::size_t>(c * rows + r)] =
                    m[static_cast<std::size_t>(r * cols + c)];
        return t;
    };
    const std::vector<float> dyT = transposed(dy, kBatch, kOut), xT = transposed(x, kBatch, kIn);
    Linear linear(kIn, kOut);
    for (const AccCase& a : accumulations) {
        CpuOps cpu;
        Mirror dyc(cpu, dy), xc(cpu, x), dw(cpu, std::vector<float>(kOut * kIn + kOut));
        cpu.backward(linear, nullptr, dw.t.data, dyc.t.data, xc.t.data, nullptr, nullptr, kBatch,
                     a.acc);
        std::vector<float> want = dw.read();
        want.resize(kOut * kIn); // the weights' part
        const std::unique_ptr<TensorOps> candidateOps = candidate();
        for (TensorOps* o : {static_cast<TensorOps*>(&cpu), candidateOps.get()}) {
            Mirror dyt(*o, dyT), xt(*o, xT), got(*o, std::vector<float>(kOut * kIn));
            o->addWeightGradientTransposed(got.t.data, dyt.t.data, xt.t.data, kOut, kIn, kBatch,
                                           a.acc);
            compare(report,
                    "linear weight gradient from transposed operands (" +
                        std::string(o == &cpu ? "cpu" : "candidate") + "), " + a.name,
                    got.read(), want, a.bound);
        }
    }
}

void gptModel(const OpsFactory& candidate, Report& report) {
    const transformer::GptSpec spec{256, 16, 32, 2, 2};
    CpuOps cpu;
    const std::unique_ptr<TensorOps> ops = candidate();
    transformer::GptModel ref(spec, cpu), cand(spec, *ops);
    // The peer's initialisation plus noise, so that biases and norms are not at 0 and 1.
    std::vector<float> params(ref.parameterCount());
    ref.initParameters(params.data(), 5);
    const std::vector<float> noise = randomValues(params.size(), 6, 0.02f);
    for (std::size_t i = 0; i < params.size(); ++i)
        params[i] += noise[i];
    std::mt19937 rng(9);
    for (const int time : {16, 11}) { // the whole context, and fewer positions
        const int batch = 3;
        std::vector<std::uint8_t> tokens(static_cast<std::size_t>(batch * time)), targets;
        for (std::uint8_t& t : tokens)
            t = static_cast<std::uint8_t>(rng() % 256);
        targets.assign(tokens.begin() + 1, tokens.end());
        targets.push_back(7);
        for (const float lossScale : {1.0f, 1024.0f}) {
            Mirror pRef(cpu, params), pCand(*ops, params);
            Mirror gRef(cpu, std::vector<float>(params.size())),
                gCand(*ops, std::vector<float>(params.size()));
            const double want = ref.forward(pRef.t, tokens.data(), targets.data(), batch, time);
            const double got = cand.forward(pCand.t, tokens.data(), targets.data(), batch, time);
            ref.backward(pRef.t, gRef.t, lossScale);
            cand.backward(pCand.t, gCand.t, lossScale);
            const std::string what = "gpt T " + std::to_string(time) + ", loss scale " +
                                     std::to_string(static_cast<int>(lossScale));
            report.expect(std::fabs(got - want) <= kFp32Bound * want,
                          describe(what + ": loss", std::fabs(got - want) / want, kFp32Bound));
            report.expect(cand.correctPredictions() == ref.correctPredictions(),
                          what + ": correct predictions " +
                              std::to_string(cand.correctPredictions()) + " vs " +
                              std::to_string(ref.correctPredictions()));
            const std::vector<float> gw = gRef.read(), gg = gCand.read();
            for (const transformer::GptTensor& t : ref.tensors()) {
                const auto at = static_cast<std::ptrdiff_t>(t.offset),
                           end = static_cast<std::ptrdiff_t>(t.offset + t.size());
                compare(report, what + ": gradient of " + t.name,
                        std::vector<float>(gg.begin() + at, gg.begin() + end),
                        std::vector<float>(gw.begin() + at, gw.begin() + end), kGptBound);
            }
            for (int stage = 0; stage < ref.stageCount(); ++stage)
                compare(report, what + ": channel amax of " + ref.stageName(stage),
                        cand.channelAmax(stage), ref.channelAmax(stage), kFp32Bound);
        }
    }
}

void lossAndReductions(const OpsFactory& candidate, Report& report) {
    const int batch = 37, classes = 10;
    std::vector<float> logits = randomValues(static_cast<std::size_t>(batch) * classes, 7, 3.0f);
    std::vector<std::uint8_t> labels(batch);
    for (int b = 0; b < batch; ++b)
        labels[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>((b * 7) % classes);
    CpuOps cpu;
    const std::unique_ptr<TensorOps> ops = candidate();
    auto run = [&](TensorOps& o, std::vector<float>& grad) {
        Mirror z(o, logits), dz(o, std::vector<float>(logits.size()));
        std::uint8_t* l = o.allocateLabels(labels.size());
        o.uploadLabels(l, labels.data(), labels.size());
        const LossResult r = o.softmaxCrossEntropy(z.t.data, l, batch, classes, dz.t.data, 1024.0f);
        grad = dz.read();
        return r;
    };
    std::vector<float> wantGrad, gotGrad;
    const LossResult want = run(cpu, wantGrad), got = run(*ops, gotGrad);
    report.expect(std::fabs(got.loss - want.loss) <= 1e-9 * std::fabs(want.loss),
                  "softmax cross-entropy loss " + std::to_string(got.loss) + " vs " +
                      std::to_string(want.loss));
    report.expect(got.correct == want.correct, "softmax cross-entropy: correct count differs");
    compare(report, "softmax cross-entropy gradient", gotGrad, wantGrad, kFp32Bound);

    std::vector<float> v = randomValues(100003, 8, 0.01f);
    v[17] = 3.5f;
    Mirror a(cpu, v), b(*ops, v);
    const TensorMoments mw = cpu.moments(a.t), mg = ops->moments(b.t);
    report.expect(std::fabs(mg.mean - mw.mean) <= 1e-9 &&
                      std::fabs(mg.stdDev - mw.stdDev) <= 1e-9 && mg.maxAbs == mw.maxAbs,
                  "moments differ");
    report.expect(ops->amax(b.t) == cpu.amax(a.t), "amax differs");
    report.expect(std::fabs(ops->sumOfSquares(b.t) - cpu.sumOfSquares(a.t)) <=
                      1e-9 * cpu.sumOfSquares(a.t),
                  "sum of squares differs");
    report.expect(ops->allFinite(b.t) && cpu.allFinite(a.t), "allFinite: false on finite data");
    for (const float bad : {-INFINITY, NAN, -NAN}) { // one at the end: the vector loop's tail
        std::vector<float> w = v;
        w.back() = bad;
        Mirror onCpu(cpu, w), onCandidate(*ops, w);
        report.expect(!cpu.allFinite(onCpu.t) && !ops->allFinite(onCandidate.t),
                      "allFinite: true with an Inf or NaN last");
    }
    v[99999] = INFINITY;
    Mirror c(*ops, v);
    report.expect(!ops->allFinite(c.t), "allFinite: true with an Inf");
    report.expect(ops->amax(c.t) == 3.5, "amax: Inf not skipped");
}

void quantisers(const OpsFactory& candidate, Report& report) {
    std::vector<float> v = randomValues(4099, 9, 30.0f);
    v[5] = 1e-30f;
    v[6] = 0.0f;
    for (const char* name : {"e4m3", "e5m2", "fp16", "e2m1"})
        for (Rounding rounding : {Rounding::NearestEven, Rounding::Stochastic}) {
            QuantConfig qc = QuantConfig::forFormat(parseFormat(name), rounding);
            qc.overflow = Overflow::Saturate;
            const Quantizer q(qc);
            QuantizeOptions o;
            o.seed = 5;
            o.stream = 77;
            const std::string what =
                std::string(name) + (rounding == Rounding::Stochastic ? " SR" : " RNE");
            // Sums in another order: equal to rounding.
            auto close = [](double x, double y) {
                return std::fabs(x - y) <= 1e-9 * std::max(std::fabs(x), std::fabs(y));
            };
            CpuOps cpu;
            const std::unique_ptr<TensorOps> ops = candidate();
            {
                Mirror a(cpu, v), b(*ops, v), ao(cpu, v), bo(*ops, v);
                QuantStats sw, sg;
                double amaxW = 0, amaxG = 0;
                cpu.quantizeScaled(q, a.t, ao.t, 0.37, &sw, o, &amaxW);
                ops->quantizeScaled(q, b.t, bo.t, 0.37, &sg, o, &amaxG);
                ops->finishStatistics();
                report.expect(bitIdentical(bo.read(), ao.read()) && sameStats(sg, sw) &&
                                  amaxG == amaxW,
                              what + ": scaled quantise not bit-identical");
            }
            for (const BlockFormat& bf : blockFormats()) {
                // Every block rule on this element format, in rows and in tiles, with 4/6.
                BlockScheme scheme = bf.scheme;
                scheme.fourOverSix = scheme.kind == BlockScaleKind::Nvfp4;
                scheme.scaleRounding =
                    bf.name == "mxfp8-e4m3" ? ScaleRounding::Ceil : ScaleRounding::Floor;
                const std::vector<float> w(v.begin(), v.begin() + 4000);
                for (const BlockLayout layout : {BlockLayout{}, BlockLayout{40, 100, true}}) {
                    Mirror a(cpu, w), b(*ops, w), ao(cpu, w), bo(*ops, w);
                    QuantStats sw, sg;
                    BlockStats bw, bg;
                    const BlockQuantizeResult rw =
                        cpu.quantizeBlocks(q, scheme, a.t, ao.t, layout, &sw, &bw, o);
                    const BlockQuantizeResult rg =
                        ops->quantizeBlocks(q, scheme, b.t, bo.t, layout, &sg, &bg, o);
                    ops->finishStatistics();
                    report.expect(bitIdentical(bo.read(), ao.read()) && sameStats(sg, sw) &&
                                      rg.tensorScale == rw.tensorScale && bg.blocks == bw.blocks &&
                                      bg.flushedBlocks == bw.flushedBlocks &&
                                      bg.saturatedBlocks == bw.saturatedBlocks &&
                                      bg.scaleHistogram == bw.scaleHistogram &&
                                      bg.rangeHistogram == bw.rangeHistogram,
                                  what + ": " + bf.name + " block cast not bit-identical" +
                                      (layout.tiles ? " (tiles)" : ""));
                }
            }
            {
                // The Hadamard transform (the same body on both) and the transpose: exact.
                const std::vector<float> w(v.begin(), v.begin() + 40 * 100);
                Mirror a(cpu, w), b(*ops, w), ah(cpu, w), bh(*ops, w), at(cpu, w), bt(*ops, w);
                cpu.hadamard16(ah.t, a.t, 40, 100, 0xB00Fu);
                ops->hadamard16(bh.t, b.t, 40, 100, 0xB00Fu);
                cpu.transpose(at.t, ah.t, 40, 100);
                ops->transpose(bt.t, bh.t, 40, 100);
                report.expect(bitIdentical(bh.read(), ah.read()) &&
                                  bitIdentical(bt.read(), at.read()),
                              what + ": Hadamard transform or transpose differ");
                // Shapes with ragged edges on either side of the CPU's 8 x 8 tiles.
                for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{37, 53},
                                                 {8, 3},
                                                 {3, 8},
                                                 {1, 17},
                                                 {16, 24}}) {
                    const std::vector<float> m(v.begin(), v.begin() + rows * cols);
                    Mirror from(cpu, m), fromGpu(*ops, m), to(cpu, m), toGpu(*ops, m);
                    cpu.transpose(to.t, from.t, rows, cols);
                    ops->transpose(toGpu.t, fromGpu.t, rows, cols);
                    report.expect(bitIdentical(toGpu.read(), to.read()),
                                  what + ": transpose of " + std::to_string(rows) + " x " +
                                      std::to_string(cols) + " differs");
                }
            }
            {
                // A cast in place that measures its own error (the CPU in the cast's pass, the
                // kernels from a copy of the input): the same values and counts, and the same
                // sums to rounding.
                Mirror a(cpu, v), b(*ops, v);
                QuantStats sw, sg;
                QuantizeOptions measuring = o;
                measuring.measureError = true;
                cpu.quantize(q, a.t, a.t, &sw, measuring);
                ops->quantize(q, b.t, b.t, &sg, measuring);
                ops->finishStatistics();
                const QuantError want = measureError(v, a.read());
                report.expect(bitIdentical(b.read(), a.read()) && sameStats(sg, sw) &&
                                  sw.error.count == want.count && sg.error.count == want.count &&
                                  want.errorSq > 0.0 && sw.error.signalSq == want.signalSq &&
                                  sw.error.errorSq == want.errorSq &&
                                  sw.error.outputSq == want.outputSq &&
                                  close(sg.error.signalSq, want.signalSq) &&
                                  close(sg.error.errorSq, want.errorSq) &&
                                  close(sg.error.outputSq, want.outputSq),
                              what + ": a cast measuring its error differs");
            }
            {
                Mirror a(cpu, v), b(*ops, v);
                const std::vector<float> half = randomValues(v.size(), 77, 0.5f);
                Mirror ah(cpu, half), bh(*ops, half);
                const QuantError ew = cpu.errorMoments(a.t, ah.t);
                const QuantError eg = ops->errorMoments(b.t, bh.t);
                report.expect(eg.count == ew.count && close(eg.signalSq, ew.signalSq) &&
                                  close(eg.errorSq, ew.errorSq) && close(eg.outputSq, ew.outputSq),
                              what + ": error moments differ");
            }
        }
}

void optimisers(const OpsFactory& candidate, Report& report) {
    const std::size_t n = 5000;
    std::vector<float> grad = randomValues(n, 10, 1e-3f);
    const std::vector<float> master = randomValues(n, 11);
    for (std::size_t i = 0; i < n; i += 5) // zero updates (Adam without decay): never counted
        grad[i] = 0.0f;
    for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adam, OptimizerKind::AdamW})
        for (const char* state : {"fp32", "bf16"}) {
            const OptimizerSettings settings{kind, 0.9, 1e-4, 0.9, 0.999, 1e-8};
            const Quantizer stateFormat(
                QuantConfig::forFormat(parseFormat(state), Rounding::Stochastic));
            const Quantizer masterFormat(QuantConfig::forFormat(parseFormat("fp16")));
            auto run = [&](TensorOps& o, TensorOps::UpdateCounts& counts) {
                Mirror g(o, grad), m(o, master), u(o, std::vector<float>(n)),
                    s(o, std::vector<float>(n));
                OptimizerState st{o.allocate(n),
                                  kind != OptimizerKind::Sgd ? o.allocate(n) : Tensor{}};
                QuantizeOptions opts;
                opts.seed = 3;
                for (int step = 1; step <= 3; ++step) {
                    opts.stream = static_cast<std::uint64_t>(step);
                    o.optimizerUpdate(settings, st, step, g.t, m.t, u.t, 0.01, stateFormat, nullptr,
                                      opts);
                    counts = o.applyMasterUpdate(m.t, u.t, s.t, masterFormat, nullptr, opts, true);
                }
                return m.read();
            };
            CpuOps cpu;
            const std::unique_ptr<TensorOps> ops = candidate();
            TensorOps::UpdateCounts cw, cg;
            const std::vector<float> want = run(cpu, cw), got = run(*ops, cg);
            const std::string what = std::string(kind == OptimizerKind::Sgd    ? "sgd"
                                                 : kind == OptimizerKind::Adam ? "adam"
                                                                               : "adamw") +
                                     " with " + state + " state";
            compare(report, what + ": master weights", got, want, kFp32Bound);
            report.expect(cg.updates == cw.updates && cg.lost == cw.lost,
                          what + ": update counts " + std::to_string(cg.lost) + "/" +
                              std::to_string(cg.updates) + " lost vs " + std::to_string(cw.lost) +
                              "/" + std::to_string(cw.updates));
        }

    // SGD with float32 momentum and master: sgdStepFloat32 (CpuOps fuses the passes) gives the
    // two passes' momentum and master bit for bit, with weight decay and a few specials; with
    // statistics, the same counts, histograms and (lost) updates.
    const Quantizer float32(QuantConfig::forFormat(parseFormat("fp32")));
    const OptimizerSettings sgd{OptimizerKind::Sgd, 0.9, 1e-4, 0.9, 0.999, 1e-8};
    std::vector<float> specialGrad = grad;
    specialGrad[7] = std::numeric_limits<float>::infinity();
    specialGrad[8] = std::numeric_limits<float>::quiet_NaN();
    specialGrad[9] = -0.0f;
    struct SgdResult {
        std::vector<float> values; // master, then momentum
        QuantStats state, master;
        TensorOps::UpdateCounts counts;
    };
    auto sgdSteps = [&](TensorOps& o, bool fused, bool counting) {
        Mirror g(o, specialGrad), m(o, master), v(o, randomValues(n, 12, 1e-2f)),
            u(o, std::vector<float>(n)), s(o, std::vector<float>(n));
        SgdResult r;
        for (int step = 1; step <= 3; ++step) {
            o.upload(g.t, specialGrad.data()); // the two passes spend the gradient as scratch
            QuantizeOptions opts;
            opts.stream = static_cast<std::uint64_t>(step);
            QuantStats* stateStats = counting ? &r.state : nullptr;
            QuantStats* masterStats = counting ? &r.master : nullptr;
            TensorOps::UpdateCounts c;
            if (fused) {
                c = o.sgdStepFloat32(
                    sgd, v.t, g.t, m.t, u.t, s.t, 0.05,
                    {float32, float32, stateStats, masterStats, opts, opts, counting});
            } else {
                o.optimizerUpdate(sgd, {v.t, {}}, step, g.t, m.t, u.t, 0.05, float32, stateStats,
                                  opts);
                c = o.applyMasterUpdate(m.t, u.t, g.t, float32, masterStats, opts, counting);
            }
            r.counts.updates += c.updates;
            r.counts.lost += c.lost;
        }
        o.finishStatistics(); // a GPU's counts arrive after its work
        r.values = m.read();
        const std::vector<float> momentum = v.read();
        r.values.insert(r.values.end(), momentum.begin(), momentum.end());
        return r;
    };
    CpuOps cpu;
    const std::unique_ptr<TensorOps> ops = candidate();
    for (const bool counting : {false, true}) {
        const SgdResult want = sgdSteps(cpu, false, counting);
        for (const auto& [engine, got] : {std::pair{"cpu", sgdSteps(cpu, true, counting)},
                                          std::pair{"candidate", sgdSteps(*ops, true, counting)}}) {
            const std::string what = std::string("sgd with fp32 state, one pass (") + engine +
                                     (counting ? ", counted" : "") + "): ";
            report.expect(sameBitsOrBothNaN(got.values, want.values),
                          what + "master and momentum differ from the two passes' bit for bit");
            report.expect(got.state.counts == want.state.counts &&
                              got.state.histogram == want.state.histogram &&
                              got.master.counts == want.master.counts &&
                              got.master.histogram == want.master.histogram,
                          what + "the state's or master's counts differ from the two passes'");
            report.expect(
                got.counts.updates == want.counts.updates && got.counts.lost == want.counts.lost,
                what + "update counts " + std::to_string(got.counts.lost) + "/" +
                    std::to_string(got.counts.updates) + " lost vs " +
                    std::to_string(want.counts.lost) + "/" + std::to_string(want.counts.updates));
        }
    }
}

void training(const OpsFactory& candidate, const TrainingRuns& plan, Report& report) {
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(42, 2048, 256));
    struct Run {
        std::string name;
        nlohmann::json patch;
        int steps, batch;
    };
    std::vector<Run> runs;
    for (std::size_t i = 0; i < presets().size(); ++i) {
        if (static_cast<int>(i % static_cast<std::size_t>(plan.parts)) != plan.part)
            continue;
        const Preset& p = presets()[i];
        nlohmann::json patch = p.json;
        if (plan.presetRuns) {
            patch["model"]["hidden"] = plan.hidden;
            runs.push_back({p.name, patch, plan.steps, plan.batch});
        }
        if (plan.gptRuns) {
            patch = p.json;
            patch["model"] = {
                {"type", "gpt"}, {"context", 16}, {"width", 32}, {"heads", 2}, {"blocks", 1}};
            runs.push_back({"gpt " + p.name, patch, plan.gptSteps, plan.gptBatch});
        }
    }
    if (plan.cnnRun) {
        nlohmann::json cnn = findPreset("fp16-static").json;
        cnn["model"] = {{"type", "cnn"}};
        runs.push_back({"cnn fp16-static", cnn, plan.cnnSteps, plan.cnnBatch});
    }
    for (const auto& [name, patch, steps, batch] : runs) {
        // Two engines sum in different orders (and OpenBLAS's order depends on the CPU), so
        // after a few steps their trajectories part like two seeds of one run: the first step,
        // from the same weights, is compared closely on every seed; the end of training as two
        // samples of kParitySeeds runs each.
        double first = 0.0, early = 0.0;
        bool finite = true;
        std::vector<double> tailRef, tailCand;
        const int tail = std::min(50, steps);
        const int seeds = plan.memoryCheckOnly ? 1 : kParitySeeds;
        for (int seed = 0; seed < seeds; ++seed) {
            nlohmann::json j = {{"train", {{"steps", steps}, {"batch_size", batch}}},
                                {"seed", 7 + seed}};
            j.merge_patch(patch);
            const TrainConfig config = configFromJson(j);
            const bool gpt = config.model.type == "gpt";
            const std::shared_ptr<const DataSplit> runData = gpt ? loadRunData(config) : data;
            std::unique_ptr<TrainingRun> ref, cand;
            if (gpt) {
                ref = std::make_unique<GptTrainer>(config, runData, std::make_unique<CpuOps>());
                cand = std::make_unique<GptTrainer>(config, runData, candidate());
            } else {
                ref = std::make_unique<Trainer>(config, runData, std::make_unique<CpuOps>());
                cand = std::make_unique<Trainer>(config, runData, candidate());
            }
            double r = 0.0, c = 0.0;
            for (int s = 0; s < steps; ++s) {
                const StepResult a = ref->step(), b = cand->step();
                finite = finite && std::isfinite(a.scalars.loss) && std::isfinite(b.scalars.loss);
                if (s == 0)
                    first = std::max(first, std::fabs(a.scalars.loss - b.scalars.loss));
                if (s < kEarlySteps)
                    early = std::max(early, std::fabs(a.scalars.loss - b.scalars.loss));
                if (s >= steps - tail) {
                    r += a.scalars.loss / tail;
                    c += b.scalars.loss / tail;
                }
            }
            tailRef.push_back(r);
            tailCand.push_back(c);
        }
        char line[400];
        if (plan.memoryCheckOnly) {
            std::snprintf(line, sizeof line,
                          "training %s, %d steps, 1 seed (sanitizer set): first step |loss "
                          "difference| <= %.2g (bound %.0g)",
                          name.c_str(), steps, first, kFirstLossBound);
            report.expect(finite && first <= kFirstLossBound, line);
            std::printf("%s\n", line);
            continue;
        }
        const SampleSummary ref = summarise(tailRef), cand = summarise(tailCand);
        const double bound = tailLossBound(ref, cand);
        const double diff = std::fabs(cand.mean - ref.mean);
        std::snprintf(line, sizeof line,
                      "training %s, %d steps, %d seeds: first step |loss difference| <= %.2g "
                      "(bound %.0g), first %d steps <= %.2g (bound %.0g); mean loss of the last "
                      "%d %.4f (sd %.4f) vs %.4f (sd %.4f), difference %.4f (bound %.4f)",
                      name.c_str(), steps, kParitySeeds, first, kFirstLossBound, kEarlySteps, early,
                      kEarlyLossBound, tail, cand.mean, cand.sd, ref.mean, ref.sd, diff, bound);
        report.expect(
            finite && first <= kFirstLossBound && early <= kEarlyLossBound && diff <= bound, line);
        std::printf("%s\n", line);
    }
}

TrainingRuns memoryCheckPlan(TrainingRuns plan) {
    plan.memoryCheckOnly = true;
    plan.steps = plan.cnnSteps = plan.gptSteps = 30; // past the first scale updates and histories
    return plan;
}

namespace {

bool sameCounts(const std::vector<StageStats>& a, const std::vector<StageStats>& b) {
    if (a.size() != b.size())
        return false;
    for (std::size_t s = 0; s < a.size(); ++s)
        for (std::size_t r = 0; r < a[s].roles.size(); ++r)
            // The samples' tensor amax too: a plain cast's is one of the late counters, so it
            // must be read once they have landed, not right after the cast.
            if (!sameStats(a[s].roles[r], b[s].roles[r]) ||
                a[s].samples[r].tensorAmax != b[s].samples[r].tensorAmax)
                return false;
    return true;
}

} // namespace

void replays(const OpsFactory& candidate, Report& report) {
    const std::vector<float> values = randomValues(1 << 20, 11, 3.0f);
    std::vector<std::uint64_t> first;
    for (int engine = 0; engine < 2; ++engine) {
        const std::unique_ptr<TensorOps> ops = candidate();
        const Tensor t = ops->allocate(values.size());
        ops->upload(t, values.data());
        for (int repeat = 0; repeat < 3; ++repeat) {
            const TensorMoments m = ops->moments(t);
            const std::vector<std::uint64_t> bits = {
                std::bit_cast<std::uint64_t>(m.mean), std::bit_cast<std::uint64_t>(m.stdDev),
                std::bit_cast<std::uint64_t>(m.maxAbs),
                std::bit_cast<std::uint64_t>(ops->sumOfSquares(t))};
            if (first.empty())
                first = bits;
            report.expect(bits == first, "replay: the moments or the sum of squares of 2^20 "
                                         "values differ between two evaluations");
        }
    }
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(42, 1024, 64));
    nlohmann::json mlp = findPreset("fp16-zhao").json;
    mlp.merge_patch({{"train", {{"steps", 12}, {"batch_size", 64}, {"clip_norm", 0.5}}},
                     {"model", {{"hidden", {64, 64}}}}});
    nlohmann::json gpt = findPreset("fp8-hybrid-delayed").json;
    gpt.merge_patch(
        {{"train", {{"steps", 6}, {"batch_size", 4}}},
         {"model",
          {{"type", "gpt"}, {"context", 16}, {"width", 32}, {"heads", 2}, {"blocks", 1}}}});
    for (const auto& [name, json] : {std::pair{"mlp fp16-zhao", mlp}, std::pair{"gpt", gpt}}) {
        const TrainConfig config = configFromJson(json);
        const bool isGpt = config.model.type == "gpt";
        const std::shared_ptr<const DataSplit> runData = isGpt ? loadRunData(config) : data;
        std::vector<std::uint64_t> losses[2];
        for (auto& run : losses) {
            std::unique_ptr<TrainingRun> t;
            if (isGpt)
                t = std::make_unique<GptTrainer>(config, runData, candidate());
            else
                t = std::make_unique<Trainer>(config, runData, candidate());
            for (std::int64_t s = 0; s < config.steps; ++s)
                run.push_back(std::bit_cast<std::uint64_t>(t->step().scalars.loss));
        }
        const bool same = losses[0] == losses[1];
        std::printf("replay %s: %lld steps twice, losses %s\n", name,
                    static_cast<long long>(config.steps), same ? "bit-identical" : "DIFFER");
        report.expect(same, std::string("replay ") + name +
                                ": two runs of one config on fresh engines differ in their losses");
    }
}

SampleSummary summarise(const std::vector<double>& values) {
    SampleSummary s;
    const auto n = static_cast<double>(values.size());
    for (double v : values)
        s.mean += v / n;
    for (double v : values)
        s.sd += values.size() > 1 ? (v - s.mean) * (v - s.mean) / (n - 1) : 0.0;
    s.sd = std::sqrt(s.sd);
    s.n = static_cast<int>(values.size());
    return s;
}

double tailLossBound(const SampleSummary& ref, const SampleSummary& cand) {
    return kTailLossBound * ref.mean +
           2.0 * std::sqrt(ref.sd * ref.sd / ref.n + cand.sd * cand.sd / cand.n);
}

void lateStatistics(const OpsFactory& candidate, const OpsFactory& sameArithmetic, Report& report) {
    const auto data = std::make_shared<const DataSplit>(makeSyntheticData(42, 512, 64));
    nlohmann::json j = findPreset("fp16-static").json;
    j.merge_patch({{"train", {{"steps", 6}, {"batch_size", 32}, {"stats_every", 1}}},
                   {"model", {{"hidden", {64, 64}}}}});
    const TrainConfig config = configFromJson(j);
    // The reference: the same kernels with statistics merged at once where there are such
    // (then each report must equal it bit for bit), else the CPU engine (order and count only).
    const bool exactCounts = static_cast<bool>(sameArithmetic);
    Trainer ref(config, data, exactCounts ? sameArithmetic() : std::make_unique<CpuOps>());
    Trainer cand(config, data, candidate());
    std::map<std::int64_t, std::vector<StageStats>> refStats;
    std::int64_t last = 0;
    int late = 0;
    bool ordered = true, equal = true;
    for (int i = 0; i < 6; ++i) {
        const StepResult a = ref.step();
        refStats[a.scalars.step] = ref.completedStats();
        const StepResult b = cand.step();
        if (!b.statsCollected)
            continue;
        ordered = ordered && b.statsStep > last && b.statsStep <= b.scalars.step;
        late += b.statsStep < b.scalars.step ? 1 : 0;
        last = b.statsStep;
        equal = equal && sameCounts(cand.completedStats(), refStats[b.statsStep]);
    }
    const std::vector<StageStats>& final = cand.stageStats(); // waits for what is on its way
    report.expect(ordered, "late statistics: a report out of order or ahead of its step");
    report.expect(cand.statsStep() == 6, "late statistics: after the run, the statistics are of "
                                         "step " +
                                             std::to_string(cand.statsStep()) + ", not 6");
    if (exactCounts) {
        report.expect(equal && sameCounts(final, refStats[6]),
                      "late statistics differ from the same kernels' immediate statistics of the "
                      "same step");
        report.expect(late > 0, "late statistics: none arrived late");
    }
}

} // namespace plab::parity
