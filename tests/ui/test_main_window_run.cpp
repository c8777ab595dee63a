// The desktop app offscreen: the live run: steps, the slider, recipe edits, reset, the status line,
// the GPT.
#include "test_main_window.h"

// The loss plot's legend sits above the axis rect, where it covers no curve and no skipped-step
// mark (inside it covered the log2-scale curve at 2^10-2^12: issue 42 item 18).
void TestMainWindow::lossLegendCoversNoCurve() {
    TimeView view;
    view.resize(800, 300);
    StepScalars s;
    s.step = 1;
    s.loss = 2.3;
    s.scale = 4096.0;
    view.setHistory({s});
    view.plot()->replot();
    QCustomPlot* plot = view.plot();
    QVERIFY(plot->legend->visible());
    QVERIFY(plot->legend->layout() == plot->plotLayout());
    QVERIFY2(plot->legend->outerRect().bottom() <= plot->axisRect()->outerRect().top(),
             qPrintable(QStringLiteral("legend bottom %1, axis rect top %2")
                            .arg(plot->legend->outerRect().bottom())
                            .arg(plot->axisRect()->outerRect().top())));
    QVERIFY(plot->legend->outerRect().height() < 80); // its entries' rows, not half the plot
}

void TestMainWindow::stepsAndShowsGradients() {
    QTest::keyClick(m_window.get(), Qt::Key_S); // Step
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest() != nullptr, 10000);
    QCOMPARE(m_window->controller()->latest()->scalars.step, std::int64_t{1});
    QCOMPARE(m_window->gradientView()->stageBox()->count(), 3); // MLP 256-256: three layers
    QVERIFY(m_window->gradientView()->role() == TensorRole::ActivationGradients);
    const WhatIfFractions f = m_window->gradientView()->currentFractions();
    QVERIFY(f.normal > 0.0);
}

void TestMainWindow::sliderReshadesBeforeNextStep() {
    // Train until the classifier's loss gradients have become small enough to flush in FP16.
    m_window->controller()->train();
    QVERIFY(reachesStep(m_window->controller(), 80));
    m_window->controller()->pause();
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->state() == SessionState::Paused,
                             kWorkerWaitMs);
    m_window->controller()->poll();
    GradientView* view = m_window->gradientView();
    view->stageBox()->setCurrentIndex(2); // the classifier: its loss gradients are the smallest
    const std::int64_t step = m_window->controller()->latest()->scalars.step;
    const double flushedAt1 = view->currentFractions().flushed;
    QVERIFY2(flushedAt1 > 0.05, qPrintable(QString::number(flushedAt1)));
    const auto counters = [view] { return view->findChildren<QLabel*>().back()->text(); };
    QVERIFY2(counters().contains(QLatin1String(" dB")), qPrintable(counters()));
    // The numbers on show are the cast's counts, and "flushed" is QuantStats::flushedShare (of
    // the nonzero values), in the line, the all-layers row and the record alike.
    const TrainingSnapshot shown = *m_window->controller()->latest();
    const QuantStats& grads = shown.stages[2].role(TensorRole::ActivationGradients);
    const FormatSpec fp16 = parseFormat("fp16");
    QVERIFY2(counters().contains(QLatin1String("in <b>fp16</b>")), qPrintable(counters()));
    QCOMPARE(view->currentFractions().ofNonzero.flushed, grads.flushedShare());
    const auto percent = [](double share) {
        return QString::number(100.0 * share, 'f', 2) + QLatin1Char('%');
    };
    QVERIFY2(counters().contains(QLatin1String("flushed ") + percent(grads.flushedShare())),
             qPrintable(counters()));
    QTabWidget* tabs = m_window->detailTabs();
    const int tabBefore = tabs->currentIndex();
    tabs->setCurrentIndex(
        tabs->indexOf(m_window->stagesOverview()->parentWidget()->parentWidget()));
    QCOMPARE(m_window->stagesOverview()->rows().size(), std::size_t{3});
    const StagesOverview::Row row = m_window->stagesOverview()->rows()[2];
    tabs->setCurrentIndex(tabBefore);
    QVERIFY2(row.summary.contains(
                 QStringLiteral("flushed %1%").arg(100.0 * grads.flushedShare(), 0, 'g', 3)),
             qPrintable(row.summary));
    // The slider's preview is whatIf's, exactly: the histogram shifted by 2^12 over the scale
    // the step ran with.
    const auto expectPreview = [&](double log2Scale) {
        const WhatIfFractions expected =
            whatIf(grads, fp16, std::exp2(log2Scale) / shown.scalars.scale);
        const WhatIfFractions got = view->currentFractions();
        QCOMPARE(got.flushed, expected.flushed);
        QCOMPARE(got.subnormal, expected.subnormal);
        QCOMPARE(got.normal, expected.normal);
        QCOMPARE(got.overflow, expected.overflow);
        QCOMPARE(got.ofNonzero.flushed, expected.ofNonzero.flushed);
        QVERIFY2(
            counters().contains(QLatin1String("flushed ") + percent(expected.ofNonzero.flushed)),
            qPrintable(counters()));
    };

    QSlider* slider = m_window->scaleSlider()->slider();
    slider->setFocus();
    for (int i = 0; i < 12; ++i)
        QTest::keyClick(slider, Qt::Key_PageUp); // +12 binades
    QCOMPARE(m_window->scaleSlider()->log2Scale(), 12.0);
    expectPreview(12.0);
    // The preview does not carry the real cast's SQNR over to another scale (issue 42 item 24).
    QVERIFY2(!counters().contains(QLatin1String(" dB")) &&
                 counters().contains(QLatin1String("measured at the step's scale only")),
             qPrintable(counters()));
    const double flushedUp = view->currentFractions().flushed;
    QVERIFY2(flushedUp < flushedAt1,
             qPrintable(QStringLiteral("%1 -> %2").arg(flushedAt1).arg(flushedUp)));
    for (int i = 0; i < 20; ++i)
        QTest::keyClick(slider, Qt::Key_PageDown);
    const double flushedDown = view->currentFractions().flushed;
    QVERIFY(flushedDown > flushedAt1);
    expectPreview(-8.0);
    // Far up, FP16 overflows instead.
    m_window->scaleSlider()->setLog2Scale(32.0);
    QVERIFY(view->currentFractions().overflow > 0.0);
    expectPreview(32.0);
    m_window->controller()->poll();
    QCOMPARE(m_window->controller()->latest()->scalars.step, step); // no training happened
    m_window->scaleSlider()->setLog2Scale(0.0);
}

void TestMainWindow::recipeEditsApplyAtNextStep() {
    QComboBox* box = m_window->recipeEditor()->formatBox(TensorRole::ActivationGradients);
    box->setEditText(QStringLiteral("e9m2")); // impossible: marked, not applied
    QMetaObject::invokeMethod(box->lineEdit(), "editingFinished");
    QVERIFY(m_window->recipeEditor()->lastError().contains(QLatin1String("exponent bits")));
    box->setEditText(QStringLiteral("bf16"));
    QMetaObject::invokeMethod(box->lineEdit(), "editingFinished");
    QVERIFY(m_window->recipeEditor()->lastError().isEmpty());
    QVERIFY(m_window->controller()->config().recipe.roles[2].format.name == "bf16");
    const std::int64_t step = m_window->controller()->latest()->scalars.step;
    m_window->controller()->step();
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest()->scalars.step == step + 1,
                             kWorkerWaitMs);
    // BF16's range reaches 2^-133: nothing of the classifier's gradient flushes any more.
    m_window->gradientView()->stageBox()->setCurrentIndex(2);
    QCOMPARE(m_window->gradientView()->currentFractions().flushed, 0.0);
    box->setEditText(QStringLiteral("fp16"));
    QMetaObject::invokeMethod(box->lineEdit(), "editingFinished");
    // A refused entry's marker clears with the next valid one, also when that is the format in
    // use (no change to apply), and with a recipe set from elsewhere (issue 42 item 21).
    RecipeEditor* editor = m_window->recipeEditor();
    box->setEditText(QStringLiteral("e9m2"));
    QMetaObject::invokeMethod(box->lineEdit(), "editingFinished");
    QVERIFY(!editor->formatBoxStyle(TensorRole::ActivationGradients).isEmpty());
    box->setEditText(QStringLiteral("fp16"));
    QMetaObject::invokeMethod(box->lineEdit(), "editingFinished");
    QVERIFY(editor->formatBoxStyle(TensorRole::ActivationGradients).isEmpty());
    QVERIFY(editor->lastError().isEmpty());
    box->setEditText(QStringLiteral("e9m2"));
    QMetaObject::invokeMethod(box->lineEdit(), "editingFinished");
    editor->setRecipe(editor->recipe());
    QVERIFY(editor->formatBoxStyle(TensorRole::ActivationGradients).isEmpty());
    // A preset's per-layer exceptions are listed under the rows (issue 42 item 26).
    QCOMPARE(editor->exceptionsText(), QString()); // the demo recipe has none
    RecipeEditor other;
    other.setRecipe(configFromJson(findPreset("fp8-e5m2-mellempudi").json).recipe);
    QVERIFY2(other.exceptionsText().contains(QLatin1String("first layer")) &&
                 other.exceptionsText().contains(QLatin1String("last layer")) &&
                 other.exceptionsText().contains(QLatin1String("fp16")),
             qPrintable(other.exceptionsText()));
}

// Issue 65 item 31: one slider drag on a paused run is one edit (one "scale" event; it wrote one
// for each position the handle passed), and a learning rate typed and entered is one
// learning_rate event (it wrote one per key that made a valid number); the timeline holds both
// as one entry at their step.
void TestMainWindow::oneDragOrEntryIsOneEdit() {
    TrainConfig start = m_window->controller()->config();
    start.timeline.clear();
    start.lossScale = 1.0;
    start.learningRate = 0.05;
    QTemporaryDir runs;
    QCOMPARE(m_window->controller()->configure(start, runs.path() + QStringLiteral("/run")),
             QString());
    stepAndCollectLosses(*m_window, 2);
    QSlider* handle = m_window->scaleSlider()->slider();
    handle->setSliderDown(true);
    for (double k : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0})
        m_window->scaleSlider()->setLog2Scale(k);              // the positions a drag passes
    QCOMPARE(m_window->controller()->config().lossScale, 1.0); // held: only a preview
    handle->setSliderDown(false);
    QCOMPARE(m_window->controller()->config().lossScale, 64.0);
    auto* lr = m_window->findChild<QDoubleSpinBox*>();
    QVERIFY(lr != nullptr);
    lr->setFocus();
    lr->selectAll();
    QTest::keyClicks(lr, QStringLiteral("0.12"));
    QTest::keyClick(lr, Qt::Key_Return);
    QCOMPARE(m_window->controller()->config().learningRate, 0.12);
    stepAndCollectLosses(*m_window, 1);
    const TrainConfig replay = m_window->controller()->replayConfig();
    QCOMPARE(replay.timeline.size(), std::size_t{1});
    QCOMPARE(replay.timeline[0].step, std::int64_t{2});
    QCOMPARE(replay.timeline[0].set.dump(),
             std::string(R"({"scaling":{"scale":64.0},"train":{"lr":0.12}})"));
    int scaleEvents = 0, lrEvents = 0;
    for (const RecordedEvent& e :
         RunRecord(m_window->controller()->runDir().toStdString()).events()) {
        scaleEvents += e.type == "scale" ? 1 : 0;
        lrEvents += e.type == "learning_rate" ? 1 : 0;
    }
    QCOMPARE(scaleEvents, 1);
    QCOMPARE(lrEvents, 1);
    lr->setValue(0.05);
    QCOMPARE(m_window->controller()->configure(start), QString()); // its record's folder goes
}

// Space (Train) on a finished run must not turn the button into "Pause" while nothing trains.
void TestMainWindow::spaceOnAnEndedRunDoesNothing() {
    TrainingController* c = m_window->controller();
    const TrainConfig tiny = configFromJson({{"data", {{"train_size", 200}, {"test_size", 50}}},
                                             {"model", {{"hidden", {8}}}},
                                             {"train", {{"steps", 3}, {"batch_size", 16}}}});
    QCOMPARE(c->configure(tiny), QString());
    c->train();
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == SessionState::Finished, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(!c->wantsRunning(), kWorkerWaitMs);
    QTest::keyClick(m_window.get(), Qt::Key_Space);
    QVERIFY(!c->wantsRunning());
    QCOMPARE(c->state(), SessionState::Finished);
}

// Reset after edits: a new run folder whose config holds the edits, the old folder ended with
// its summary and left as it was; each folder holds one attempt (issue 42 item 14).
void TestMainWindow::resetStartsANewRunWithTheEdits() {
    TrainingController* c = m_window->controller();
    QCOMPARE(m_window->applySettings(), QString());
    c->step();
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 2, kWorkerWaitMs);
    c->setLearningRate(0.0125);
    const QString first = c->runDir();
    QCOMPARE(m_window->resetRun(), QString());
    const QString second = c->runDir();
    QVERIFY(second != first);
    QCOMPARE(c->config().learningRate, 0.0125);
    QVERIFY(!c->latest());
    // Nothing of the old run stays on show: no histogram, and the record size is the new run's.
    QCOMPARE(m_window->gradientView()->currentFractions().flushed, 0.0);
    bool newRecordShown = false;
    for (QLabel* label : m_window->findChildren<QLabel*>())
        newRecordShown = newRecordShown || (label->text().startsWith(QLatin1String("record ")) &&
                                            label->toolTip().contains(second));
    QVERIFY(newRecordShown);
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 1, kWorkerWaitMs);
    QCOMPARE(c->latest()->scalars.learningRate, 0.0125);
    // The first folder: its two steps, ended, not touched by the new run.
    RunRecord old(first.toStdString());
    QCOMPARE(old.steps().size(), std::size_t{2});
    QVERIFY(old.summary().stopReason != "running");
    QCOMPARE(old.summary().steps, 2);
    QCOMPARE(m_window->applySettings(), QString());
}

// A run that has finished: the lr typed and the recipe set after its end are what Reset starts
// from (they were dropped: the ended session took no more edits). A window of its own: the
// session it loads would stay in the shared window's toolbar.
void TestMainWindow::resetAfterTheEndKeepsTheEdits() {
    QString error;
    MainWindow w;
    w.setErrorSink(&error);
    TrainingController* c = w.controller();
    QTemporaryDir sessions;
    const QString session = sessions.filePath(QStringLiteral("two-steps.json"));
    {
        QFile f(session);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"train": {"steps": 2, "lr": 0.05}})");
    }
    QCOMPARE(w.loadSession(session), QString());
    c->train();
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == SessionState::Finished, kWorkerWaitMs);
    c->setLearningRate(0.02);
    PrecisionRecipe bf16 = c->config().recipe;
    bf16.roles[static_cast<std::size_t>(TensorRole::Weights)] =
        QuantConfig::forFormat(parseFormat("bf16"));
    QCOMPARE(c->setRecipe(bf16), QString());
    QCOMPARE(w.resetRun(), QString());
    QCOMPARE(c->effectiveConfig().learningRate, 0.02);
    QCOMPARE(c->effectiveConfig()
                 .recipe.roles[static_cast<std::size_t>(TensorRole::Weights)]
                 .format.name,
             std::string("bf16"));
    QVERIFY2(error.isEmpty(), qPrintable(error));
}

// The status bar's samples/s is what the run gets over wall time: paced at 5 steps/s of 64
// samples, at most about 320, not the engine's rate while it steps (thousands; issue 42 item 19).
void TestMainWindow::statusShowsTheRealThroughput() {
    TrainingController* c = m_window->controller();
    QCOMPARE(m_window->applySettings(), QString());
    const double batch = c->config().batchSize;
    c->setPace(5.0);
    c->train();
    const auto shown = [&] {
        for (QLabel* label : m_window->statusBar()->findChildren<QLabel*>())
            if (const qsizetype at = label->text().indexOf(QLatin1String(" samples/s")); at > 0) {
                const QString before = label->text().left(at);
                return before.mid(before.lastIndexOf(QLatin1Char(' ')) + 1).toDouble();
            }
        return -1.0;
    };
    QTRY_VERIFY_WITH_TIMEOUT(shown() > 0.0, 20000);
    const double rate = shown();
    c->pause();
    c->setPace(0.0);
    QVERIFY2(rate <= 2.0 * 5.0 * batch, qPrintable(QString::number(rate)));
    QCOMPARE(m_window->applySettings(), QString());
}

// With NVFP4 the Blocks tab shows the chosen tensor's block scales and counts, the what-if tab
// every format on its sample with NVFP4 (in use) in bold, and the shares line the cast's SQNR;
// with FP32 the Blocks tab says why there are no blocks.
void TestMainWindow::blocksAndFormatWhatIfFollowTheView() {
    TrainingController* c = m_window->controller();
    QComboBox* preset = boxOffering(m_window.get(), QStringLiteral("fp8-blockwise"));
    QVERIFY(preset != nullptr && preset->findText(QStringLiteral("nvfp4")) >= 0);
    preset->setCurrentText(QStringLiteral("nvfp4"));
    QCOMPARE(m_window->applySettings(), QString());
    QVERIFY(c->config().scalingPolicy == ScalingPolicy::Nvfp4);
    c->step();
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 2, kWorkerWaitMs);
    GradientView* view = m_window->gradientView();
    view->stageBox()->setCurrentIndex(0);
    showRole(view, TensorRole::Activations);
    m_window->detailTabs()->setCurrentWidget(m_window->blocksView());
    const QString counts = m_window->blocksView()->countsText();
    QVERIFY2(counts.contains(QLatin1String("fp4-e2m1 in blocks of 16 (scale e4m3")),
             qPrintable(counts));
    QVERIFY2(counts.contains(QLatin1String("step 2")), qPrintable(counts));
    QVERIFY(m_window->blocksView()->scalePlot()->plottableCount() > 0);
    QVERIFY(!static_cast<QCPBars*>(m_window->blocksView()->scalePlot()->plottable(0))
                 ->data()
                 ->isEmpty());
    // The shares line carries the measured error of the cast.
    const QString shares = view->findChildren<QLabel*>().back()->text();
    QVERIFY2(shares.contains(QLatin1String("SQNR")), qPrintable(shares));
    // NVFP4 scales activation gradients to their own amax: the slider's preview leaves them where
    // they are (a loss scale would not move them) and the shares line says what scaled them.
    showRole(view, TensorRole::ActivationGradients);
    const WhatIfFractions before = view->currentFractions();
    QVERIFY(before.flushed > 0.0);
    m_window->scaleSlider()->setLog2Scale(10.0);
    QCOMPARE(view->currentFractions().flushed, before.flushed);
    QCOMPARE(view->currentFractions().overflow, before.overflow);
    const QString scaled = view->findChildren<QLabel*>().back()->text();
    QVERIFY2(scaled.contains(QLatin1String("scaled by the nvfp4 policy")), qPrintable(scaled));
    m_window->scaleSlider()->setLog2Scale(0.0);

    m_window->detailTabs()->setCurrentWidget(m_window->formatWhatIf());
    QTableWidget* table = m_window->formatWhatIf()->table();
    QCOMPARE(table->rowCount(), 7 + 6 + static_cast<int>(blockFormats().size()));
    int bold = boldRow(table);
    QVERIFY(bold >= 0);
    QCOMPARE(table->item(bold, 0)->text(), QStringLiteral("nvfp4"));
    QVERIFY2(m_window->formatWhatIf()->caption().contains(QLatin1String("In use: nvfp4")),
             qPrintable(m_window->formatWhatIf()->caption()));
    // The row in use says what the shares line says: the step's exact counts over the whole
    // tensor, not the sample's estimate (issue 52 item 14); the other rows say they are a sample.
    const WhatIfFractions::OfNonzero shown = view->currentFractions().ofNonzero;
    QCOMPARE(table->item(bold, 1)->text(), percentText(shown.flushed));
    QCOMPARE(table->item(bold, 2)->text(), percentText(shown.subnormal));
    QCOMPARE(table->item(bold, 3)->text(), percentText(shown.overflow));
    QVERIFY2(m_window->formatWhatIf()->caption().contains(QLatin1String("a sample of 4096 values")),
             qPrintable(m_window->formatWhatIf()->caption()));

    // Under an amax policy the row in use is the format under its tensor scale.
    preset->setCurrentText(QStringLiteral("fp8-hybrid-current"));
    QCOMPARE(m_window->applySettings(), QString());
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 1, kWorkerWaitMs);
    showRole(view, TensorRole::Activations);
    bold = boldRow(table);
    QVERIFY(bold >= 0);
    QCOMPARE(table->item(bold, 0)->text(), QStringLiteral("fp8-e4m3, tensor amax"));

    preset->setCurrentText(QStringLiteral("fp32"));
    QCOMPARE(m_window->applySettings(), QString());
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 1, kWorkerWaitMs);
    m_window->detailTabs()->setCurrentWidget(m_window->blocksView());
    QVERIFY2(m_window->blocksView()->countsText().contains(QLatin1String("Not block-scaled")),
             qPrintable(m_window->blocksView()->countsText()));
    preset->setCurrentText(QStringLiteral("fp16-noscale"));
    m_window->detailTabs()->setCurrentIndex(0);
    QCOMPARE(m_window->applySettings(), QString());
}

// Per-layer scaling picks each layer's factors from its own gradients at every step: the slider
// cannot preview them, so the shares stay the measured ones and the line says what scaled the
// values and that the slider applies from the next step.
void TestMainWindow::perLayerSliderWaitsForTheNextStep() {
    TrainingController* c = m_window->controller();
    QComboBox* preset = boxOffering(m_window.get(), QStringLiteral("fp16-zhao"));
    QVERIFY(preset != nullptr);
    preset->setCurrentText(QStringLiteral("fp16-zhao"));
    QCOMPARE(m_window->applySettings(), QString());
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 1, kWorkerWaitMs);
    GradientView* view = m_window->gradientView();
    view->stageBox()->setCurrentIndex(0);
    showRole(view, TensorRole::ActivationGradients);
    const WhatIfFractions before = view->currentFractions();
    m_window->scaleSlider()->setLog2Scale(12.0);
    QCOMPARE(view->currentFractions().flushed, before.flushed);
    QCOMPARE(view->currentFractions().normal, before.normal);
    const QString line = view->findChildren<QLabel*>().back()->text();
    QVERIFY2(line.contains(QLatin1String("per-layer factors 2^")) &&
                 line.contains(QLatin1String("the slider's 2^12 from the next step")),
             qPrintable(line));
    m_window->scaleSlider()->setLog2Scale(0.0);
    preset->setCurrentText(QStringLiteral("fp16-noscale"));
    QCOMPARE(m_window->applySettings(), QString());
}

// An overflow that a static scale cannot recover from ends the run with advice on the scale.
void TestMainWindow::divergenceAdvisesOnTheScale() {
    TrainingController* c = m_window->controller();
    QCOMPARE(m_window->applySettings(), QString()); // a fresh fp16-noscale run (static policy)
    QVERIFY(c->config().scalingPolicy == ScalingPolicy::Static);
    m_error.clear();
    m_window->scaleSlider()->setLog2Scale(32.0); // FP16's max is about 2^16
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == SessionState::Diverged, kWorkerWaitMs);
    c->poll();
    QVERIFY2(m_error.contains(QLatin1String("Lower the loss scale")), qPrintable(m_error));
    m_window->scaleSlider()->setLog2Scale(0.0);
    // A run whose record cannot be written (its folder removed) fails without that advice.
    QCOMPARE(m_window->applySettings(), QString());
    QVERIFY(!c->runDir().isEmpty());
    std::filesystem::remove_all(c->runDir().toStdString());
    m_error.clear();
    c->train();
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == SessionState::Failed, 30000);
    c->poll();
    QVERIFY2(m_error.contains(QLatin1String("could not be written")) &&
                 !m_error.contains(QLatin1String("loss scale")),
             qPrintable(m_error));
    QCOMPARE(m_window->applySettings(), QString());
}

// Policy `none` trains at a loss scale of 1; choosing a scale on the slider makes the run static
// (the policy box, the controller's config and the next step's scale agree).
void TestMainWindow::sliderUnderPolicyNoneMakesTheRunStatic() {
    TrainingController* c = m_window->controller();
    QCOMPARE(m_window->applySettings(), QString());
    c->setScalingPolicy(ScalingPolicy::None, 1.0);
    m_window->scaleSlider()->setLog2Scale(6.0);
    QVERIFY(c->config().scalingPolicy == ScalingPolicy::Static);
    QCOMPARE(c->config().lossScale, 64.0);
    QComboBox* policy = boxOffering(m_window.get(), QStringLiteral("amax-delayed"));
    QVERIFY(policy != nullptr && policy->findText(QStringLiteral("none")) >= 0);
    QCOMPARE(policy->currentText(), QStringLiteral("static"));
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 1, kWorkerWaitMs);
    QCOMPARE(c->latest()->scalars.scale, 64.0);
    m_window->scaleSlider()->setLog2Scale(0.0);
    QCOMPARE(m_window->applySettings(), QString());
}

// The model box offers the GPT with its text sources, and Apply starts it. A small GPT (one
// block: 3 stages; a few steps stay fast under the sanitizers) trains under the FP8 hybrid
// recipe: the all-layers overview shows each stage against its format's bands (outlier channels
// for activations), a click opens a stage in the gradient view, and the last step's evaluation
// writes a text sample.
void TestMainWindow::gptTrainsWithAllLayersOverviewAndSample() {
    TrainingController* c = m_window->controller();
    QComboBox *model = nullptr, *data = nullptr, *preset = nullptr;
    for (QComboBox* box : m_window->findChildren<QComboBox*>()) {
        if (box->findData(QStringLiteral("gpt")) >= 0)
            model = box;
        if (box->findText(QStringLiteral("fp8-hybrid-delayed")) >= 0)
            preset = box;
    }
    QVERIFY(model != nullptr && preset != nullptr);
    model->setCurrentIndex(model->findData(QStringLiteral("gpt")));
    for (QComboBox* box : m_window->findChildren<QComboBox*>())
        if (box->findData(QStringLiteral("fortunes")) >= 0)
            data = box;
    QVERIFY2(data != nullptr, "the data box offers text sources for the GPT");
    QCOMPARE(data->findData(QStringLiteral("fashion-mnist")), -1);
    QCOMPARE(data->currentData().toString(), QStringLiteral("synthetic"));
    preset->setCurrentText(QStringLiteral("fp8-hybrid-delayed"));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(c->config().model.type, std::string("gpt"));
    QCOMPARE(c->config().model.width, 128); // the default GPT from the controls

    nlohmann::json small = findPreset("fp8-hybrid-delayed").json;
    small["model"] = {{"type", "gpt"}, {"context", 16}, {"width", 32}, {"heads", 2}, {"blocks", 1}};
    small["train"] = {{"steps", 2}, {"batch_size", 8}}; // the last step evaluates and samples
    QTemporaryDir runDir;
    QCOMPARE(c->configure(configFromJson(small), runDir.path()), QString());
    c->step();
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step == 2, 60000);
    GradientView* view = m_window->gradientView();
    QTRY_COMPARE_WITH_TIMEOUT(view->stageBox()->count(), 3, kWorkerWaitMs); // attention, MLP, head
    showRole(view, TensorRole::Activations);
    m_window->detailTabs()->setCurrentIndex(m_window->detailTabs()->indexOf(
        m_window->stagesOverview()->parentWidget()->parentWidget()));
    const auto& rows = m_window->stagesOverview()->rows();
    QCOMPARE(rows.size(), std::size_t{3});
    QCOMPARE(rows[0].name, QStringLiteral("block0.attention"));
    QVERIFY2(rows[0].summary.contains(QLatin1String("fp8-e4m3")), qPrintable(rows[0].summary));
    QVERIFY2(rows[0].summary.contains(QLatin1String("outliers")), qPrintable(rows[0].summary));
    QVERIFY(*std::max_element(rows[2].height.begin(), rows[2].height.end()) == 1.0f);
    // E4M3's bands: flushed below 2^-10, subnormal up to 2^-6, overflow past 448.
    QCOMPARE(rows[0].flushBelow, -10.0);
    QCOMPARE(rows[0].normalFrom, -6.0);
    QVERIFY(std::fabs(rows[0].overflowFrom - std::log2(448.0)) < 1e-9);
    // A click on the third row opens the head above.
    int y = 0;
    while (y < 1000 && m_window->stagesOverview()->rowAt(y) != 2)
        ++y;
    QCOMPARE(m_window->stagesOverview()->rowAt(y + 4), 2);
    QTest::mouseClick(m_window->stagesOverview(), Qt::LeftButton, {}, QPoint(300, y + 4));
    QCOMPARE(view->stage(), 2);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_window->textSample()->toPlainText().contains(QLatin1String("After step 2")), 20000);
    QCoreApplication::processEvents();
    QVERIFY(m_window->grab().save(QCoreApplication::applicationDirPath() +
                                  QStringLiteral("/gpt_all_layers.png")));

    model->setCurrentIndex(model->findData(QStringLiteral("mlp")));
    preset->setCurrentText(QStringLiteral("fp16-noscale"));
    m_window->detailTabs()->setCurrentIndex(0);
    QCOMPARE(m_window->applySettings(), QString());
}
