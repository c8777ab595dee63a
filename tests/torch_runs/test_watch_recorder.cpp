// WatchRecorder, the record of a run another program trains: each captured tensor judged in
// every format with the counts TensorCast gives, or as a framework recipe casts it (a recipe
// candidate), one histogram per stage and role, gradients at
// the step's scale, statistics dropped with an event when the queue is full (never the steps),
// the summary and the lock at close, formats checked at the start. Runs under ThreadSanitizer
// (the hand-over and the counting thread).
#include <QTemporaryDir>
#include <QTest>

#include "numerics/amax_scaling.h"
#include "numerics/format_spec.h"
#include "numerics/tensor_cast.h"
#include "record/record_file.h"
#include "record/run_record.h"
#include "torch_runs/watch_recorder.h"

#include <algorithm>
#include <optional>
#include <random>
#include <tuple>

using namespace plab;

class TestWatchRecorder : public QObject {
    Q_OBJECT
private slots:
    void countsAreTheCastsOfEachFormat();
    void candidatesCastAsTheirFrameworkRecipes();
    void aFullQueueDropsStatisticsNotSteps();
    void badSettingsAreRefused();
};

namespace {

std::vector<float> gradientLike(std::size_t n, unsigned seed) {
    std::mt19937 random(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> binade(-30.0f, 2.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(random) * std::exp2(binade(random));
    v[0] = 0.0f;
    return v;
}

CapturedTensor captured(std::size_t stage, TensorRole role, std::vector<float> values,
                        float multiplier = 1.0f) {
    CapturedTensor t;
    t.stage = stage;
    t.role = role;
    t.values = std::move(values);
    t.rowLength = 64;
    t.multiplier = multiplier;
    return t;
}

} // namespace

void TestWatchRecorder::countsAreTheCastsOfEachFormat() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    WatchSettings settings;
    settings.formats = {"fp16", "fp8-e4m3", "mxfp4"};
    settings.stageNames = {"fc1", "fc2"};
    settings.every = 2;
    const std::vector<float> weights = gradientLike(64 * 32, 1);
    const std::vector<float> grads = gradientLike(64 * 16, 2);
    {
        WatchRecorder recorder(run, settings);
        QVERIFY(runDirectoryLocked(run));
        for (int step = 1; step <= 3; ++step) {
            WatchedStep s;
            s.step = step;
            s.loss = 1.0 / step;
            s.scale = 256.0;
            s.statistics = step != 2;
            if (s.statistics) {
                s.tensors.push_back(captured(0, TensorRole::Weights, weights));
                s.tensors.push_back(captured(1, TensorRole::WeightGradients, grads, 256.0f));
            }
            QVERIFY(recorder.submit(std::move(s)));
        }
        recorder.close();
        QVERIFY(!runDirectoryLocked(run)); // released at close, not at destruction
    }
    const RunRecord record(run);
    QCOMPARE(record.judgedFormats(), (std::vector<std::string>{"fp16", "fp8-e4m3", "mxfp4"}));
    QCOMPARE(record.steps().size(), std::size_t{3});
    QCOMPARE(record.summary().stopReason, std::string("completed"));
    QVERIFY(record.summary().finished);
    QCOMPARE(record.histogramSteps(), (std::vector<std::int64_t>{1, 3}));
    for (const std::string& format : record.judgedFormats()) {
        const std::vector<RecordedStatistics> stats = record.statistics(format);
        // The flat rows say what statistics() says, and read on from where a reader stopped.
        const std::vector<StatsRow> rows = record.statsRows(format);
        QCOMPARE(rows.size(), std::size_t{4}); // 2 statistics steps x 2 captured tensors
        for (const StatsRow& row : rows) {
            QCOMPARE(row.format, format);
            const RecordedStatistics& st = row.step == 1 ? stats.front() : stats.back();
            QCOMPARE(row.counts, st.stages[row.stage].role(row.role).counts);
            QCOMPARE(row.flushedShare(), st.stages[row.stage].role(row.role).flushedShare());
        }
        const std::vector<StatsRow> later = record.statsRows(format, std::nullopt, rows[1].seq);
        QCOMPARE(later.size(), std::size_t{2});
        QCOMPARE(later.front().seq, rows[2].seq);
        const std::vector<StatsRow> gradients =
            record.statsRows(format, TensorRole::WeightGradients);
        QCOMPARE(gradients.size(), std::size_t{2});
        QCOMPARE(gradients.back().stage, std::size_t{1});
        QCOMPARE(stats.size(), std::size_t{2});
        const TensorCast cast(TensorCastSpec{.format = format});
        std::vector<float> out(grads.size());
        TensorCastResult expected;
        cast.cast(grads, out, 64, 256.0f, {}, &expected);
        const StageStats& fc2 = stats.back().stages[1];
        QCOMPARE(fc2.role(TensorRole::WeightGradients).counts, expected.stats.counts);
        QCOMPARE(fc2.role(TensorRole::WeightGradients).amax, expected.stats.amax);
        QCOMPARE(fc2.gradientScale, 256.0); // the scale the gradients were judged at
        QCOMPARE(fc2.blocks[static_cast<std::size_t>(TensorRole::WeightGradients)].blocks,
                 expected.blocks.blocks);
        QCOMPARE(stats.back().formats[1][static_cast<std::size_t>(TensorRole::WeightGradients)],
                 format);
        QCOMPARE(stats.back().formats[0][static_cast<std::size_t>(TensorRole::Activations)],
                 std::string()); // not captured: no row
        // The histogram is of the scaled inputs, as every element format counts it (a block
        // format counts its block-scaled values), whichever format's rows are read.
        const auto h = record.histogramsAt(3, format);
        QVERIFY(h.has_value());
        TensorCastResult fp16;
        TensorCast(TensorCastSpec{.format = "fp16"}).cast(grads, out, 64, 256.0f, {}, &fp16);
        QCOMPARE(h->stages[1].role(TensorRole::WeightGradients).histogram, fp16.stats.histogram);
    }
    // One tensor at one step in every judged format (the app's Formats what-if of a watched
    // run): a row per format, in the judged order, each the counts and error of its own cast.
    const std::vector<StatsRow> tensor = record.tensorRows(3, 1, TensorRole::WeightGradients);
    QCOMPARE(tensor.size(), std::size_t{3});
    std::vector<float> out(grads.size());
    for (std::size_t f = 0; f < tensor.size(); ++f) {
        const StatsRow& row = tensor[f];
        QCOMPARE(row.format, settings.formats[f]);
        QCOMPARE(row.step, std::int64_t{3});
        QCOMPARE(row.stage, std::size_t{1});
        QVERIFY(row.role == TensorRole::WeightGradients);
        QuantizeOptions measured;
        measured.measureError = true;
        TensorCastResult expected;
        TensorCast(TensorCastSpec{.format = row.format})
            .cast(grads, out, 64, 256.0f, measured, &expected);
        QCOMPARE(row.counts, expected.stats.counts);
        QVERIFY(row.error.measured());
        QCOMPARE(row.error.count, expected.stats.error.count);
        QCOMPARE(row.error.errorSq, expected.stats.error.errorSq);
        QCOMPARE(row.error.signalSq, expected.stats.error.signalSq);
        QCOMPARE(row.blocks, expected.blocks.blocks);
    }
    QVERIFY(record.tensorRows(2, 1, TensorRole::WeightGradients).empty()); // no statistics
    QVERIFY(record.tensorRows(3, 0, TensorRole::WeightGradients).empty()); // not captured
    QCOMPARE(record.tensorRows(1, 0, TensorRole::Weights).size(), std::size_t{3});
}

// A recipe candidate judges a tensor as a run under that framework recipe casts it: scaled to its
// own amax (fp8-current: E4M3 forward, E5M2 gradients), from an amax history (fp8-delayed), or in
// NVFP4's blocks with weights in 16x16 tiles and gradients rounded stochastically; a weight
// gradient (a product's output) is not judged; the row names the scaling that cast it.
void TestWatchRecorder::candidatesCastAsTheirFrameworkRecipes() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    WatchSettings settings;
    settings.formats = {"fp8-current", "fp8-delayed", "nvfp4"};
    settings.stageNames = {"fc"};
    settings.every = 1;
    std::vector<float> weights = gradientLike(64 * 64, 4);
    std::vector<float> grads = gradientLike(64 * 64, 5);
    {
        WatchRecorder recorder(run, settings);
        for (int step = 1; step <= 2; ++step) {
            WatchedStep s;
            s.step = step;
            s.scale = 1.0;
            s.statistics = true;
            // Step 2's weights are half step 1's: a delayed scale still comes from step 1's.
            std::vector<float> w = weights;
            if (step == 2)
                for (float& x : w)
                    x *= 0.5f;
            s.tensors.push_back(captured(0, TensorRole::Weights, w));
            s.tensors.push_back(captured(0, TensorRole::ActivationGradients, grads));
            s.tensors.push_back(captured(0, TensorRole::WeightGradients, grads));
            QVERIFY(recorder.submit(std::move(s)));
        }
        recorder.close();
    }
    const RunRecord record(run);
    QCOMPARE(record.judgedFormats(), settings.formats);
    auto rowOf = [&](const std::string& format, std::int64_t step, TensorRole role) {
        const std::vector<StatsRow> rows = record.statsRows(format, role);
        const auto it = std::find_if(rows.begin(), rows.end(),
                                     [&](const StatsRow& r) { return r.step == step; });
        return it == rows.end() ? std::optional<StatsRow>() : std::optional<StatsRow>(*it);
    };
    // fp8-current: each tensor in its own format, scaled by (format max / its amax), saturating.
    std::vector<float> out(weights.size());
    for (const auto& [role, values, format] :
         {std::tuple{TensorRole::Weights, weights, "fp8-e4m3"},
          std::tuple{TensorRole::ActivationGradients, grads, "fp8-e5m2"}}) {
        const std::optional<StatsRow> row = rowOf("fp8-current", 1, role);
        QVERIFY(row.has_value());
        QCOMPARE(row->scaling, std::string("amax-current"));
        const FormatSpec spec = parseFormat(format);
        QuantConfig q = QuantConfig::forFormat(spec);
        q.overflow = Overflow::Saturate;
        const double scale = amaxScale(amaxOf(values), spec, 0);
        QuantStats expected;
        quantizeScaled(Quantizer(q), values, out, scale, &expected, {});
        QCOMPARE(row->counts, expected.counts);
        QCOMPARE(row->tensorScale, scale);
    }
    for (const std::string& f : settings.formats) // a product's output: not a candidate's cast
        QVERIFY(record.statsRows(f, TensorRole::WeightGradients).empty());
    // fp8-delayed: step 1 at scale 1, as TE's DelayedScaling starts with an empty history;
    // step 2's scale from the history's max, step 1's amax (what current scaling took at step
    // 1); current scaling follows the halved weights.
    QCOMPARE(rowOf("fp8-delayed", 1, TensorRole::Weights)->tensorScale, 1.0);
    QCOMPARE(rowOf("fp8-delayed", 2, TensorRole::Weights)->tensorScale,
             rowOf("fp8-current", 1, TensorRole::Weights)->tensorScale);
    QCOMPARE(rowOf("fp8-delayed", 2, TensorRole::Weights)->scaling, std::string("amax-delayed"));
    QCOMPARE(rowOf("fp8-current", 2, TensorRole::Weights)->tensorScale,
             2.0 * rowOf("fp8-current", 1, TensorRole::Weights)->tensorScale);
    // nvfp4: the 64x64 weights in sixteen 16x16 tiles (in rows they would be 256 blocks); the
    // gradients in 1x16 blocks, rounded stochastically: not the nearest-even cast's error.
    const std::optional<StatsRow> w = rowOf("nvfp4", 1, TensorRole::Weights);
    QCOMPARE(w->blocks, std::uint64_t{16});
    QCOMPARE(w->scaling, std::string("nvfp4"));
    std::uint64_t liveTiles = 0; // its block-scale diagnostics: of the same sixteen tiles
    for (const DiagnosticsRow& d : record.diagnosticsRows())
        if (d.step == 1 && d.role == TensorRole::Weights && d.format == "nvfp4")
            liveTiles += d.liveBlocks;
    QCOMPARE(liveTiles, std::uint64_t{16});
    const std::optional<StatsRow> g = rowOf("nvfp4", 1, TensorRole::ActivationGradients);
    QCOMPARE(g->blocks, std::uint64_t{256});
    QuantizeOptions measured;
    measured.measureError = true;
    TensorCastResult nearest;
    TensorCast(TensorCastSpec{.format = "nvfp4"}).cast(grads, out, 64, 1.0f, measured, &nearest);
    QVERIFY(g->error.measured());
    QCOMPARE(g->error.signalSq, nearest.stats.error.signalSq);
    QVERIFY(g->error.errorSq != nearest.stats.error.errorSq);
}

void TestWatchRecorder::aFullQueueDropsStatisticsNotSteps() {
    QTemporaryDir dir;
    const std::string run = dir.path().toStdString() + "/run";
    WatchSettings settings;
    settings.formats = {"fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "nvfp4", "mxfp8-e4m3"};
    settings.stageNames = {"big"};
    settings.every = 1;
    settings.queueSteps = 1;
    settings.threads = 2;
    const std::vector<float> values = gradientLike(1 << 20, 3);
    std::uint64_t refused = 0;
    WatchRecorder recorder(run, settings);
    for (int step = 1; step <= 20; ++step) {
        WatchedStep s;
        s.step = step;
        s.statistics = true;
        s.tensors.push_back(captured(0, TensorRole::Activations, values));
        refused += recorder.submit(std::move(s)) ? 0 : 1;
    }
    recorder.flush();
    QVERIFY(refused > 0); // 20 hand-overs of 4 MiB each outpace 6 casts of 1M values
    QCOMPARE(recorder.droppedSteps(), refused);
    QCOMPARE(recorder.recordedSteps(), std::uint64_t{20});
    recorder.close("stopped", false);
    const RunRecord record(run);
    QCOMPARE(record.steps().size(), std::size_t{20});
    QCOMPARE(record.statistics().size(), std::size_t{20 - refused});
    std::uint64_t events = 0;
    for (const RecordedEvent& e : record.events())
        events += e.type == "statistics_dropped" ? 1 : 0;
    QCOMPARE(events, refused);
    QVERIFY(!record.summary().finished);
    QCOMPARE(record.summary().stopReason, std::string("stopped"));
}

void TestWatchRecorder::badSettingsAreRefused() {
    QTemporaryDir dir;
    WatchSettings settings;
    settings.stageNames = {"a"};
    settings.formats = {"fp9"};
    QVERIFY_THROWS_EXCEPTION(FormatError, WatchRecorder(dir.path().toStdString() + "/x", settings));
    settings.formats = {};
    QVERIFY_THROWS_EXCEPTION(FormatError, WatchRecorder(dir.path().toStdString() + "/y", settings));
    settings.formats = {"fp16"};
    settings.every = 0;
    QVERIFY_THROWS_EXCEPTION(FormatError, WatchRecorder(dir.path().toStdString() + "/z", settings));
    settings.every = 1;
    WatchRecorder first(dir.path().toStdString() + "/held", settings);
    QVERIFY_THROWS_EXCEPTION(RecordError,
                             WatchRecorder(dir.path().toStdString() + "/held", settings));
    WatchedStep s;
    s.step = 1;
    s.statistics = true;
    s.tensors.push_back(captured(5, TensorRole::Weights, {1.0f})); // no stage 5
    first.submit(std::move(s));
    QVERIFY_THROWS_EXCEPTION(RecordError, first.flush());
    QVERIFY_THROWS_EXCEPTION(RecordError, first.close());
}

QTEST_APPLESS_MAIN(TestWatchRecorder)
#include "test_watch_recorder.moc"
