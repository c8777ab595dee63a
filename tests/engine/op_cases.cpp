// Every TensorOps operation against a reference written here from its contract (ggml's
// test-backend-ops is the model): one row per virtual of engine/tensor_ops.h, each run on the
// engine under test with edge cases in its inputs (zeros, -0, Inf, NaN, subnormals, repeated and
// reversed indices, trailing partial groups). A row either checks the operation here or names the
// parity check that does (the layers' forward/backward pairs, the GPT's transformer ops, late
// statistics); a virtual without a row fails the table, so a new operation cannot go untested.
#include "op_cases.h"

#include "parity_helpers.h"

#include "numerics/block_scheme.h"
#include "numerics/codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

namespace plab::parity {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Values with every kind of special among them.
std::vector<float> edgeValues(std::size_t n, std::uint32_t seed, float sd = 1.0f) {
    std::vector<float> v = randomValues(n, seed, sd);
    const float specials[] = {0.0f, -0.0f, 1e-40f, -3e-42f, 65504.0f, 1e-8f, -7.5f};
    for (std::size_t i = 0; i < std::size(specials) && 3 * i < n; ++i)
        v[3 * i + 1] = specials[i];
    return v;
}

bool close(double got, double want, double relative) {
    return std::fabs(got - want) <= relative * std::max(1.0, std::fabs(want));
}

void memory(TensorOps& ops, Report& report) {
    const Tensor zeros = ops.allocate(1000);
    std::vector<float> host(1000, 1.0f);
    ops.download(host.data(), zeros);
    report.expect(zeros.size == 1000 &&
                      std::all_of(host.begin(), host.end(),
                                  [](float x) { return x == 0.0f && !std::signbit(x); }),
                  "allocate: not 1000 zero-filled floats");

    std::vector<float> v = edgeValues(777, 1);
    v[0] = kNaN;
    v[2] = -kInf;
    const Mirror m(ops, v);
    report.expect(bitIdentical(m.read(), v), "upload/download: bits changed on the way");

    const Mirror dst(ops, std::vector<float>(300, 9.0f));
    ops.copy(dst.t.slice(10, 100), m.t.slice(50, 100));
    std::vector<float> want(300, 9.0f);
    std::copy_n(v.begin() + 50, 100, want.begin() + 10);
    report.expect(bitIdentical(dst.read(), want), "copy: slice not copied, or outside it touched");
}

void gatheredRows(TensorOps& ops, Report& report) {
    constexpr std::size_t kRows = 7, kRowSize = 13;
    const std::vector<float> host = edgeValues(kRows * kRowSize, 2);
    const Tensor resident = ops.residentRows(host.data(), kRows, kRowSize);
    std::vector<float> back(resident.size);
    ops.download(back.data(), resident);
    report.expect(resident.size == kRows * kRowSize && bitIdentical(back, host),
                  "residentRows: not the data set's rows");
    const std::vector<std::uint32_t> indices = {6, 0, 3, 3, 6, 1};
    const Mirror batch(ops, std::vector<float>(indices.size() * kRowSize, -1.0f));
    ops.gatherRows(batch.t, resident, kRowSize, indices);
    std::vector<float> want;
    for (std::uint32_t i : indices)
        want.insert(want.end(), host.begin() + i * kRowSize, host.begin() + (i + 1) * kRowSize);
    report.expect(bitIdentical(batch.read(), want),
                  "gatherRows: row i is not rows[indices[i]] (repeats, reverse order)");
}

void fillAndScale(TensorOps& ops, Report& report) {
    std::vector<float> v = edgeValues(500, 3);
    v[7] = kInf;
    const Mirror a(ops, v);
    ops.fill(a.t.slice(100, 50), -2.5f);
    std::vector<float> want = v;
    std::fill_n(want.begin() + 100, 50, -2.5f);
    report.expect(bitIdentical(a.read(), want), "fill: slice not filled, or outside it touched");
    ops.scale(a.t, 0.37f);
    for (float& x : want)
        x *= 0.37f;
    report.expect(bitIdentical(a.read(), want),
                  "scale: not x * factor in float, element by element");
}

void reductions(TensorOps& ops, Report& report) {
    std::vector<float> v = edgeValues(10007, 4, 3.0f);
    const Mirror a(ops, v);
    const TensorMoments got = ops.moments(a.t);
    double sum = 0.0, maxAbs = 0.0;
    for (float x : v) {
        sum += x;
        maxAbs = std::max(maxAbs, static_cast<double>(std::fabs(x)));
    }
    const double mean = sum / static_cast<double>(v.size());
    double squares = 0.0;
    for (float x : v)
        squares += (x - mean) * (x - mean);
    const double sd = std::sqrt(squares / static_cast<double>(v.size()));
    // Float lanes summed in double (what a scale rounded to a power of two needs): 1e-5.
    report.expect(close(got.mean, mean, 1e-5) && close(got.stdDev, sd, 1e-5) &&
                      got.maxAbs == maxAbs,
                  "moments: mean, standard deviation (population) or max |x| differ");

    double sq = 0.0;
    for (float x : v)
        sq += static_cast<double>(x) * x;
    report.expect(close(ops.sumOfSquares(a.t), sq, 1e-12), "sumOfSquares: not the sum of x^2");
    report.expect(ops.allFinite(a.t), "allFinite: false on finite values");
    report.expect(ops.amax(a.t) == maxAbs, "amax: not the largest |x|");
    for (const std::size_t at : {std::size_t{0}, v.size() / 2, v.size() - 1})
        for (const float bad : {kInf, -kInf, kNaN}) {
            std::vector<float> w = v;
            w[at] = bad;
            double finiteMax = 0.0; // amax's contract: the largest finite |x|
            for (float x : w)
                if (std::isfinite(x))
                    finiteMax = std::max(finiteMax, static_cast<double>(std::fabs(x)));
            const Mirror b(ops, w);
            report.expect(!ops.allFinite(b.t),
                          "allFinite: true with an Inf or NaN at " + std::to_string(at));
            report.expect(ops.amax(b.t) == finiteMax,
                          "amax: an Inf or NaN at " + std::to_string(at) + " not skipped");
        }
}

// The format engine against the host's own definitions (numerics/): bits, counts, histograms.
void casts(TensorOps& ops, Report& report) {
    std::vector<float> v = edgeValues(4099, 5, 30.0f);
    v[11] = kInf;
    v[12] = kNaN;
    QuantizeOptions options;
    options.seed = 8;
    options.stream = 21;
    for (const char* name : {"fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "fp4-e2m1"})
        for (Rounding rounding : {Rounding::NearestEven, Rounding::Stochastic}) {
            const Quantizer q(QuantConfig::forFormat(parseFormat(name), rounding));
            const std::string what =
                std::string(name) + (rounding == Rounding::Stochastic ? " SR" : "");

            std::vector<float> want(v.size());
            QuantStats wantStats;
            QuantizeOptions measured = options;
            measured.measureError = true;
            q.quantize(v, want, &wantStats, measured);
            const Mirror in(ops, v), out(ops, std::vector<float>(v.size()));
            QuantStats gotStats;
            ops.quantize(q, in.t, out.t, &gotStats, measured);
            ops.finishStatistics();
            report.expect(sameBitsOrBothNaN(out.read(), want) && sameStats(gotStats, wantStats) &&
                              gotStats.error.count == wantStats.error.count &&
                              close(gotStats.error.errorSq, wantStats.error.errorSq, 1e-12),
                          "quantize " + what + ": values, counts, histogram or error differ");

            const QuantError errors = ops.errorMoments(in.t, out.t);
            const QuantError wantErrors = measureError(v, want);
            report.expect(errors.count == wantErrors.count &&
                              close(errors.signalSq, wantErrors.signalSq, 1e-12) &&
                              close(errors.errorSq, wantErrors.errorSq, 1e-12) &&
                              close(errors.outputSq, wantErrors.outputSq, 1e-12),
                          "errorMoments " + what + ": not measureError's sums");

            std::vector<float> scaled(v.size());
            QuantStats scaledStats, gotScaledStats;
            double wantAmax = 0.0, gotAmax = 0.0;
            quantizeScaled(q, v, scaled, 0.37, &scaledStats, options, &wantAmax);
            ops.quantizeScaled(q, in.t, out.t, 0.37, &gotScaledStats, options, &gotAmax);
            ops.finishStatistics();
            report.expect(sameBitsOrBothNaN(out.read(), scaled) &&
                              sameStats(gotScaledStats, scaledStats) && gotAmax == wantAmax,
                          "quantizeScaled " + what + ": values, counts or input amax differ");
        }

    // Block formats in rows and in tiles, against numerics/block_quantizer's quantizeBlocks.
    const std::vector<float> w(v.begin(), v.begin() + 4000);
    for (const BlockFormat& bf : blockFormats()) {
        const Quantizer element(QuantConfig::forFormat(bf.element));
        for (const BlockLayout layout : {BlockLayout{}, BlockLayout{40, 100, true}}) {
            std::vector<float> want(w.size());
            QuantStats wantStats;
            BlockStats wantBlocks;
            std::vector<BlockInfo> infos;
            const BlockQuantizeResult wantResult = quantizeBlocks(
                element, bf.scheme, w, want, layout, &wantStats, &wantBlocks, options, infos);
            const Mirror in(ops, w), out(ops, std::vector<float>(w.size()));
            QuantStats gotStats;
            BlockStats gotBlocks;
            const BlockQuantizeResult got = ops.quantizeBlocks(
                element, bf.scheme, in.t, out.t, layout, &gotStats, &gotBlocks, options);
            ops.finishStatistics();
            report.expect(sameBitsOrBothNaN(out.read(), want) && sameStats(gotStats, wantStats) &&
                              got.tensorScale == wantResult.tensorScale &&
                              gotBlocks.blocks == wantBlocks.blocks &&
                              gotBlocks.flushedBlocks == wantBlocks.flushedBlocks &&
                              gotBlocks.saturatedBlocks == wantBlocks.saturatedBlocks,
                          "quantizeBlocks " + bf.name + (layout.tiles ? " tiles" : " rows") +
                              ": values, counts, tensor scale or block counts differ");
        }
    }
}

void layouts(TensorOps& ops, Report& report) {
    // hadamard16: rows in groups of 16, (1/4) H16 D along the rows; a trailing partial group is
    // copied. 37 rows: two groups and 5 rows left.
    constexpr std::size_t kRows = 37, kCols = 3;
    constexpr std::uint32_t kSigns = 0xA5C3u;
    const std::vector<float> in = randomValues(kRows * kCols, 6);
    std::vector<float> want(in.size());
    for (std::size_t r = 0; r < kRows; ++r)
        for (std::size_t c = 0; c < kCols; ++c) {
            const std::size_t first = r - r % 16;
            if (first + 16 > kRows) {
                want[r * kCols + c] = in[r * kCols + c];
                continue;
            }
            double sum = 0.0;
            for (std::size_t k = 0; k < 16; ++k) {
                const int sylvester =
                    (std::popcount(static_cast<unsigned>((r % 16) & k)) & 1) ? -1 : 1;
                const int sign = ((kSigns >> k) & 1u) ? -1 : 1;
                sum += sylvester * sign * static_cast<double>(in[(first + k) * kCols + c]);
            }
            want[r * kCols + c] = static_cast<float>(sum / 4.0);
        }
    const Mirror a(ops, in), out(ops, std::vector<float>(in.size()));
    ops.hadamard16(out.t, a.t, kRows, kCols, kSigns);
    const std::vector<float> got = out.read();
    report.expect(normalisedError(got, want) <= kFp32Bound &&
                      std::equal(got.begin() + 32 * kCols, got.end(), want.begin() + 32 * kCols),
                  "hadamard16: not (1/4) H16 D per group of 16 rows, or the partial group changed");

    std::vector<float> transposed(in.size());
    for (std::size_t r = 0; r < kRows; ++r)
        for (std::size_t c = 0; c < kCols; ++c)
            transposed[c * kRows + r] = in[r * kCols + c];
    ops.transpose(out.t, a.t, kRows, kCols);
    report.expect(bitIdentical(out.read(), transposed), "transpose: out[c][r] != in[r][c]");
}

// The products a Linear layer's backward is made of, on their own.
void gradients(TensorOps& ops, Report& report) {
    constexpr int kRows = 33, kCols = 7;
    const std::vector<float> dy = randomValues(kRows * kCols, 7);
    const std::vector<float> db0 = randomValues(kCols, 8);
    std::vector<float> want = db0;
    for (int c = 0; c < kCols; ++c) {
        double sum = db0[static_cast<std::size_t>(c)];
        for (int r = 0; r < kRows; ++r)
            sum += dy[static_cast<std::size_t>(r * kCols + c)];
        want[static_cast<std::size_t>(c)] = static_cast<float>(sum);
    }
    const Mirror dyOn(ops, dy), db(ops, db0);
    ops.addColumnSums(db.t.data, dyOn.t.data, kRows, kCols);
    compare(report, "addColumnSums: db + column sums of dy", db.read(), want, kFp32Bound);

    constexpr int kOut = 5, kIn = 6, kBatch = 19;
    const std::vector<float> doutT = randomValues(kOut * kBatch, 9),
                             inT = randomValues(kIn * kBatch, 10);
    const std::vector<float> dw0 = randomValues(kOut * kIn, 11);
    std::vector<float> dwWant = dw0;
    for (int o = 0; o < kOut; ++o)
        for (int i = 0; i < kIn; ++i) {
            double sum = dw0[static_cast<std::size_t>(o * kIn + i)];
            for (int b = 0; b < kBatch; ++b)
                sum += static_cast<double>(doutT[static_cast<std::size_t>(o * kBatch + b)]) *
                       inT[static_cast<std::size_t>(i * kBatch + b)];
            dwWant[static_cast<std::size_t>(o * kIn + i)] = static_cast<float>(sum);
        }
    const Mirror dOut(ops, doutT), x(ops, inT), dw(ops, dw0);
    ops.addWeightGradientTransposed(dw.t.data, dOut.t.data, x.t.data, kOut, kIn, kBatch, {});
    compare(report, "addWeightGradientTransposed: dW + dyT xT^T", dw.read(), dwWant, kFp32Bound);
}

void loss(TensorOps& ops, Report& report) {
    constexpr int kBatch = 9, kClasses = 5;
    std::vector<float> logits = randomValues(kBatch * kClasses, 12, 3.0f);
    logits[0] = 80.0f; // a large logit: the reference subtracts the row's max too
    std::vector<std::uint8_t> labels(kBatch);
    for (int b = 0; b < kBatch; ++b)
        labels[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>((b * 3) % kClasses);
    const float gradScale = 256.0f;
    double lossSum = 0.0;
    int correct = 0;
    std::vector<float> want(logits.size());
    for (int b = 0; b < kBatch; ++b) {
        const float* z = &logits[static_cast<std::size_t>(b * kClasses)];
        const double zmax = *std::max_element(z, z + kClasses);
        double sum = 0.0;
        for (int c = 0; c < kClasses; ++c)
            sum += std::exp(z[c] - zmax);
        const int label = labels[static_cast<std::size_t>(b)];
        lossSum += std::log(sum) - (z[label] - zmax);
        correct += (std::max_element(z, z + kClasses) - z) == label ? 1 : 0;
        for (int c = 0; c < kClasses; ++c)
            want[static_cast<std::size_t>(b * kClasses + c)] = static_cast<float>(
                (std::exp(z[c] - zmax) / sum - (c == label ? 1.0 : 0.0)) * gradScale / kBatch);
    }
    const Mirror z(ops, logits), dz(ops, std::vector<float>(logits.size()));
    std::uint8_t* onEngine = ops.allocateLabels(labels.size());
    ops.uploadLabels(onEngine, labels.data(), labels.size());
    const LossResult got =
        ops.softmaxCrossEntropy(z.t.data, onEngine, kBatch, kClasses, dz.t.data, gradScale);
    report.expect(
        close(got.loss, lossSum / kBatch, 1e-9) && got.correct == correct,
        "softmaxCrossEntropy: mean loss or correct count differ (labels via uploadLabels)");
    compare(report, "softmaxCrossEntropy: dlogits = (softmax - onehot) * scale / batch", dz.read(),
            want, kFp32Bound);
}

// SGD (PyTorch's form) and Adam/AdamW as their papers write them, in double with the state in
// double: v = mu v + (g + wd w), u = lr v; m = b1 m + (1 - b1) g', v = b2 v + (1 - b2) g'^2,
// u = lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), g' = g + wd w for Adam, and AdamW's
// decoupled decay adding lr wd w.
void textbookUpdate(const OptimizerSettings& s, int step, const std::vector<float>& grad,
                    const std::vector<float>& master, std::vector<float>& update,
                    std::vector<double>& first, std::vector<double>& second, double lr) {
    const bool adamW = s.kind == OptimizerKind::AdamW;
    for (std::size_t i = 0; i < grad.size(); ++i) {
        const double w = master[i];
        const double g = grad[i] + (adamW ? 0.0 : s.weightDecay * w);
        if (s.kind == OptimizerKind::Sgd) {
            first[i] = s.momentum * first[i] + g;
            update[i] = static_cast<float>(lr * first[i]);
            continue;
        }
        first[i] = s.beta1 * first[i] + (1.0 - s.beta1) * g;
        second[i] = s.beta2 * second[i] + (1.0 - s.beta2) * g * g;
        const double mHat = first[i] / (1.0 - std::pow(s.beta1, step));
        const double vHat = second[i] / (1.0 - std::pow(s.beta2, step));
        update[i] = static_cast<float>(lr * mHat / (std::sqrt(vHat) + s.epsilon) +
                                       (adamW ? lr * s.weightDecay * w : 0.0));
    }
}

// The optimisers with zero gradients among the inputs: Adam without weight decay leaves those
// parameters' update exactly 0, and a zero update is not an update at all, so never a lost one
// (every GPT run has such rows: the embeddings of tokens a batch does not hold).
void optimisers(TensorOps& ops, Report& report) {
    constexpr std::size_t n = 4000;
    std::vector<float> grad = randomValues(n, 13, 1e-3f);
    for (std::size_t i = 0; i < n; i += 4)
        grad[i] = 0.0f;
    grad[1] = -0.0f;
    const std::vector<float> master = randomValues(n, 14);
    const Quantizer fp32(QuantConfig::forFormat(parseFormat("fp32")));
    const Quantizer fp16(QuantConfig::forFormat(parseFormat("fp16")));
    for (OptimizerKind kind : {OptimizerKind::Sgd, OptimizerKind::Adam, OptimizerKind::AdamW})
        for (double wd : {0.0, 1e-2}) {
            const OptimizerSettings settings{kind, 0.9, wd, 0.9, 0.999, 1e-8};
            const std::string what = std::string(kind == OptimizerKind::Sgd    ? "sgd"
                                                 : kind == OptimizerKind::Adam ? "adam"
                                                                               : "adamw") +
                                     (wd == 0.0 ? "" : " with decay");
            // The reference: the textbook update, then the master update and its counts from
            // their definition.
            std::vector<double> first(n), second(n);
            std::vector<float> update(n), wantMaster = master;
            const Mirror g(ops, grad), m(ops, master), u(ops, std::vector<float>(n)),
                scratch(ops, std::vector<float>(n));
            const OptimizerState state{ops.allocate(n),
                                       kind != OptimizerKind::Sgd ? ops.allocate(n) : Tensor{}};
            std::uint64_t wantUpdates = 0, wantLost = 0;
            TensorOps::UpdateCounts got;
            for (int step = 1; step <= 3; ++step) {
                textbookUpdate(settings, step, grad, wantMaster, update, first, second, 0.01);
                std::vector<float> next(n);
                for (std::size_t i = 0; i < n; ++i)
                    next[i] = wantMaster[i] - update[i];
                fp16.quantize(next, next, nullptr, {});
                wantUpdates = wantLost = 0;
                for (std::size_t i = 0; i < n; ++i) {
                    wantUpdates += update[i] != 0.0f ? 1 : 0;
                    wantLost += update[i] != 0.0f && next[i] == wantMaster[i] ? 1 : 0;
                }
                wantMaster = next;
                ops.optimizerUpdate(settings, state, step, g.t, m.t, u.t, 0.01, fp32, nullptr, {});
                const std::vector<float> gotUpdate = u.read();
                report.expect(
                    normalisedError(gotUpdate, update) <= kFp32Bound &&
                        std::equal(gotUpdate.begin(), gotUpdate.end(), update.begin(),
                                   [](float a, float b) { return (a == 0.0f) == (b == 0.0f); }),
                    what + ": optimizerUpdate differs from computeOptimizerUpdate (or its "
                           "zeros do)");
                ops.upload(u.t, update.data()); // the master update from the reference's update
                got = ops.applyMasterUpdate(m.t, u.t, scratch.t, fp16, nullptr, {}, true);
                ops.upload(m.t, wantMaster.data());
            }
            const bool someZero = wantUpdates < n;
            report.expect(got.updates == wantUpdates && got.lost == wantLost &&
                              (someZero || kind == OptimizerKind::Sgd || wd != 0.0),
                          what + ": applyMasterUpdate counted " + std::to_string(got.lost) + "/" +
                              std::to_string(got.updates) + " lost, the definition " +
                              std::to_string(wantLost) + "/" + std::to_string(wantUpdates));
        }

    // applyMasterUpdate's values: master <- Q(master - update), in fp16, with updates lost to its
    // rounding, kept, zero and -0.
    std::vector<float> update = randomValues(n, 15, 1e-2f);
    for (std::size_t i = 0; i < n; i += 3)
        update[i] *= 1e-4f; // below half an fp16 ulp of most masters: lost
    update[2] = 0.0f;
    update[5] = -0.0f;
    std::vector<float> start = master;
    fp16.quantize(start, start, nullptr, {});
    std::vector<float> next(n);
    std::uint64_t updates = 0, lost = 0;
    for (std::size_t i = 0; i < n; ++i)
        next[i] = start[i] - update[i];
    QuantStats wantStats;
    fp16.quantize(next, next, &wantStats, {});
    for (std::size_t i = 0; i < n; ++i) {
        updates += update[i] != 0.0f ? 1 : 0;
        lost += update[i] != 0.0f && next[i] == start[i] ? 1 : 0;
    }
    const Mirror m(ops, start), u(ops, update), scratch(ops, std::vector<float>(n));
    QuantStats gotStats;
    const TensorOps::UpdateCounts c =
        ops.applyMasterUpdate(m.t, u.t, scratch.t, fp16, &gotStats, {}, true);
    ops.finishStatistics();
    report.expect(bitIdentical(m.read(), next) && sameStats(gotStats, wantStats) &&
                      c.updates == updates && c.lost == lost && lost > n / 10,
                  "applyMasterUpdate: master, its counts or (lost) updates differ from "
                  "Q(master - update)");

    // sgdStepFloat32: momentum and master in float32, v = mu v + (g + wd w), w -= lr v.
    const OptimizerSettings sgd{OptimizerKind::Sgd, 0.9, 1e-4, 0.9, 0.999, 1e-8};
    std::vector<float> v = randomValues(n, 16, 1e-2f), w = master;
    std::uint64_t sgdUpdates = 0, sgdLost = 0;
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = 0.9f * v[i] + (grad[i] + 1e-4f * w[i]);
        const float step = 0.05f * v[i];
        const float moved = w[i] - step;
        sgdUpdates += step != 0.0f ? 1 : 0;
        sgdLost += step != 0.0f && moved == w[i] ? 1 : 0;
        w[i] = moved;
    }
    const Mirror vOn(ops, randomValues(n, 16, 1e-2f)), gOn(ops, grad), wOn(ops, master),
        uOn(ops, std::vector<float>(n)), sOn(ops, std::vector<float>(n));
    const TensorOps::UpdateCounts sc = ops.sgdStepFloat32(
        sgd, vOn.t, gOn.t, wOn.t, uOn.t, sOn.t, 0.05, {fp32, fp32, nullptr, nullptr, {}, {}, true});
    report.expect(normalisedError(wOn.read(), w) <= kFp32Bound &&
                      normalisedError(vOn.read(), v) <= kFp32Bound && sc.updates == sgdUpdates &&
                      sc.lost == sgdLost,
                  "sgdStepFloat32: momentum, master or counts differ from v = mu v + g + wd w, "
                  "w -= lr v");
}

struct OpRow {
    std::vector<std::string> virtuals;  // the operations of tensor_ops.h this row covers
    void (*check)(TensorOps&, Report&); // null: coveredBy says which parity check does
    const char* coveredBy;
};

const std::vector<OpRow>& opRows() {
    static const std::vector<OpRow> table = {
        {{"allocate", "upload", "download", "copy"}, memory, nullptr},
        {{"residentRows", "gatherRows"}, gatheredRows, nullptr},
        {{"fill", "scale"}, fillAndScale, nullptr},
        {{"moments", "allFinite", "sumOfSquares", "amax"}, reductions, nullptr},
        {{"quantize", "quantizeScaled", "quantizeBlocks", "errorMoments"}, casts, nullptr},
        {{"hadamard16", "transpose"}, layouts, nullptr},
        {{"addColumnSums", "addWeightGradientTransposed"}, gradients, nullptr},
        {{"softmaxCrossEntropy", "allocateLabels", "uploadLabels"}, loss, nullptr},
        {{"optimizerUpdate", "applyMasterUpdate", "sgdStepFloat32"}, optimisers, nullptr},
        {{"forward", "backward"}, nullptr, "layers() (every layer of layer_cases.h)"},
        {{"transformer"}, nullptr, "gptModel() (the GPT's ops, forward and backward)"},
        {{"sendStatistics", "receiveStatistics"}, nullptr, "lateStatistics()"},
        {{"name"}, nullptr, "the reports' titles"},
    };
    return table;
}

// The virtuals tensor_ops.h declares (its destructor aside).
std::set<std::string> declaredVirtuals() {
    std::ifstream header(PLAB_TENSOR_OPS_HEADER);
    std::stringstream text;
    text << header.rdbuf();
    const std::string source = text.str();
    const std::regex declaration(R"(virtual\s+[^;{]*?\b(\w+)\s*\()");
    std::set<std::string> names;
    for (auto it = std::sregex_iterator(source.begin(), source.end(), declaration);
         it != std::sregex_iterator(); ++it)
        if ((*it)[1].str() != "TensorOps") // the destructor
            names.insert((*it)[1].str());
    return names;
}

} // namespace

void opTable(const OpsFactory& candidate, Report& report) {
    std::set<std::string> covered;
    for (const OpRow& row : opRows()) {
        covered.insert(row.virtuals.begin(), row.virtuals.end());
        if (row.check != nullptr) {
            const std::unique_ptr<TensorOps> ops = candidate();
            row.check(*ops, report);
        }
    }
    const std::set<std::string> declared = declaredVirtuals();
    report.expect(declared.size() > 25, std::string("op table: read ") +
                                            std::to_string(declared.size()) + " virtuals from " +
                                            PLAB_TENSOR_OPS_HEADER);
    for (const std::string& name : declared)
        report.expect(covered.count(name) == 1,
                      "op table: TensorOps::" + name + " has no row (tests/engine/op_cases.cpp)");
}

} // namespace plab::parity
