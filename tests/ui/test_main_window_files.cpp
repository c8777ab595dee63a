// The desktop app offscreen: files and other runs: export, errors as messages, the report, Compare,
// a past run opened.
#include "test_main_window.h"

void TestMainWindow::exportWritesFiles() {
    QTemporaryDir dir;
    QCOMPARE(m_window->exportPlots(dir.path()), QString());
    for (const char* name : {"gradients", "training"}) {
        const QString base = dir.path() + QLatin1Char('/') + QLatin1String(name);
        QImage png(base + QStringLiteral(".png"));
        QVERIFY(!png.isNull());
        QVERIFY(png.width() >= 800);
        QFile pdf(base + QStringLiteral(".pdf"));
        QVERIFY(pdf.open(QIODevice::ReadOnly));
        QVERIFY(pdf.read(5) == "%PDF-");
        QFile svg(base + QStringLiteral(".svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QVERIFY(svg.readAll().contains("<svg"));
    }
    QVERIFY(!m_window->exportPlots(QStringLiteral("/proc/no-such-place/plots")).isEmpty());

    // Each figure names its run and what it shows (issue 52 item 24: gradients.svg named no
    // run, layer, tensor, format, scale or step); the window's plots stay without the title.
    TrainingController* c = m_window->controller();
    const std::int64_t stepBefore = c->latest() ? c->latest()->scalars.step : 0;
    c->step();
    QTRY_VERIFY_WITH_TIMEOUT(c->latest() && c->latest()->scalars.step > stepBefore, kWorkerWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(!m_window->gradientView()->caption().isEmpty(), kWorkerWaitMs);
    QCOMPARE(m_window->exportPlots(dir.path()), QString());
    const QString caption = m_window->gradientView()->caption();
    QVERIFY2(caption.contains(QLatin1String(" in fp16")) &&
                 caption.contains(QLatin1String("step ")) &&
                 caption.contains(QLatin1String("layer ")),
             qPrintable(caption));
    const auto svgText = [&](const char* name) {
        QFile f(dir.path() + QLatin1Char('/') + QLatin1String(name) + QStringLiteral(".svg"));
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    };
    const QString run = QFileInfo(m_window->controller()->runDir()).fileName();
    QVERIFY(!run.isEmpty());
    for (const char* name : {"gradients", "training", "flushed_per_layer"})
        QVERIFY2(svgText(name).contains(QStringLiteral("run ") + run), name);
    // The whole title in the SVG's <title> and the PDF's Title (issue 65 item 32: empty; the
    // figure's own text is wrapped to its width), the shares line's space kept ("in fp16at").
    QVERIFY(svgText("gradients").contains(QStringLiteral("<title>run ") + run));
    QVERIFY(svgText("gradients").contains(caption.toHtmlEscaped()));
    QVERIFY2(caption.contains(QLatin1String(" in fp16 at loss scale 2^")), qPrintable(caption));
    {
        QFile pdf(dir.path() + QStringLiteral("/gradients.pdf"));
        QVERIFY(pdf.open(QIODevice::ReadOnly));
        QByteArray title("/Title (\xfe\xff", 10); // Qt writes it in UTF-16, big-endian
        for (QChar ch : QStringLiteral("run ") + run) {
            title.append(static_cast<char>(ch.unicode() >> 8));
            title.append(static_cast<char>(ch.unicode() & 0xff));
        }
        QVERIFY(pdf.readAll().contains(title));
    }
    const QFont font;
    const QString wrapped = wrappedTitle(QStringLiteral("run a (b): ") + caption, font, 300);
    QVERIFY(wrapped.count(QLatin1Char('\n')) >= 1);
    for (const QString& line : wrapped.split(QLatin1Char('\n')))
        QVERIFY2(QFontMetrics(font).horizontalAdvance(line) <= 300 ||
                     !line.contains(QLatin1Char(' ')),
                 qPrintable(line));
    QCOMPARE(QString(wrapped).replace(QLatin1Char('\n'), QLatin1Char(' ')),
             QStringLiteral("run a (b): ") + caption);
    QCOMPARE(m_window->gradientView()->plot()->plotLayout()->rowCount(), 1);
    // The heat map on a log colour scale: 1.8% no longer looks like 0; the shares read the same.
    FlushHeatmapView* heatmap = m_window->heatmapView();
    const double cell = heatmap->valueAt(1, 0);
    heatmap->logScaleBox()->setChecked(true);
    QVERIFY(heatmap->logScale());
    QCOMPARE(heatmap->valueAt(1, 0), cell);
    QCOMPARE(m_window->exportPlots(dir.path()), QString());
    QVERIFY(svgText("flushed_per_layer").contains(QLatin1String("(log colour scale)")));
    heatmap->logScaleBox()->setChecked(false);
    QVERIFY(!heatmap->logScale());

    // A disk that fills up (a file-size limit plays it, as in the CLI's tests): the error names
    // the file and the system's reason, and no file is left cut short or empty (issue 42 item
    // 17: training.svg was left at 0 bytes without a word).
    QTemporaryDir full;
    const QString error = underFileSizeLimit([&] { return m_window->exportPlots(full.path()); });
    QVERIFY2(error.contains(QLatin1String("cannot write (")) &&
                 error.contains(QLatin1String("File too large")),
             qPrintable(error));
    for (const QFileInfo& f : QDir(full.path()).entryInfoList(QDir::Files | QDir::Hidden))
        QVERIFY2(f.size() > 0, qPrintable(f.fileName()));
}

void TestMainWindow::errorsBecomeMessages() {
    TrainConfig bad = m_window->controller()->config();
    bad.dataSource = "/nonexistent/fashion";
    const QString error = m_window->controller()->configure(bad);
    QVERIFY2(error.contains(QLatin1String("/nonexistent/fashion")), qPrintable(error));
    QVERIFY(m_window->controller()->hasSession()); // the previous run survives
}

void TestMainWindow::reportAndHeatmap() {
    // The loaded session started a fresh run: take a few steps first.
    for (int i = 0; i < 3; ++i)
        m_window->controller()->step();
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest() &&
                                 m_window->controller()->latest()->scalars.step == 3,
                             kWorkerWaitMs);
    QTRY_VERIFY_WITH_TIMEOUT(!m_window->controller()->flushHistory().empty(),
                             kWorkerWaitMs); // sampled at <= 30 Hz
    QTemporaryDir dir;
    QCOMPARE(m_window->exportReport(dir.path()), QString());
    for (const char* name : {"gradients.png", "training.svg", "flushed_per_layer.pdf",
                             "config.json", "state_at_export.json"})
        QVERIFY2(
            QFileInfo(dir.path() + QLatin1Char('/') + QLatin1String(name)).size() > 100,
            qPrintable(
                QStringLiteral("%1: %2 bytes")
                    .arg(QLatin1String(name))
                    .arg(QFileInfo(dir.path() + QLatin1Char('/') + QLatin1String(name)).size())));
    // The run's record, and its CSV exports in the report as far as the run has gone.
    QVERIFY(QFileInfo::exists(m_window->controller()->runDir() + QStringLiteral("/run.sqlite")));
    // The heat map's x axis is the step, also for columns that are not evenly spaced.
    FlushHeatmapView map;
    map.setColumns({{1, {0.0}}, {2, {0.25}}, {3, {0.5}}, {100, {1.0}}}, {"L0"});
    QCOMPARE(map.valueAt(2, 0), 0.25);
    QCOMPARE(map.valueAt(50, 0), 0.5); // step 3's column holds until step 100's
    QCOMPARE(map.valueAt(100, 0), 1.0);
    // Every row whole: the axis runs half a row past the first and last (issue 42 item 28).
    map.setColumns({{1, {0.0, 0.5, 1.0}}, {2, {0.1, 0.6, 0.9}}}, {"L0", "L1", "L2"});
    QCOMPARE(map.plot()->yAxis->range().lower, -0.5);
    QCOMPARE(map.plot()->yAxis->range().upper, 2.5);
    QFile metrics(dir.path() + QStringLiteral("/metrics.csv"));
    QVERIFY(metrics.open(QIODevice::ReadOnly));
    QCOMPARE(metrics.readAll().count('\n'), 1 + 3);
    // A report that cannot be written says which file and why.
    const QString error = m_window->exportReport(QStringLiteral("/proc/self/report"));
    QVERIFY2(error.contains(QLatin1String("/proc/self/report")) && error.contains(QLatin1Char('(')),
             qPrintable(error));
}

// Stopping a Compare leaves the stopped runs to do, not failed: their summaries say stopped, no
// .failed marker, and the CLI's resume would run them (issue 42 item 16).
void TestMainWindow::compareStopLeavesRunsToDo() {
    const TrainConfig base = smallCompareBase();
    QTemporaryDir runs;
    CompareDialog dialog(base, nullptr, runs.path());
    QSignalSpy ended(&dialog, &CompareDialog::comparisonEnded);
    dialog.run({QStringLiteral("fp32"), QStringLiteral("fp16-noscale")}, 1000000, 1);
    const QString first = dialog.compareDir() + QStringLiteral("/fp32/seed-1/summary.json");
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(first), 30000);
    // The flushed-share curves draw while the runs go, on the loss curves' steps (issue 52 item
    // 15: empty until Stop, on the previous comparison's x range).
    const auto flushedPoints = [&](int graph) {
        QCustomPlot* plot = dialog.flushedPlot();
        return plot->graphCount() > graph ? plot->graph(graph)->data()->size() : 0;
    };
    QTRY_VERIFY_WITH_TIMEOUT(flushedPoints(0) >= 2 && flushedPoints(1) >= 2, 30000);
    QVERIFY(dialog.isRunning());
    QCOMPARE(dialog.flushedPlot()->xAxis->range().upper, dialog.lossPlot()->xAxis->range().upper);
    dialog.stop();
    QVERIFY(ended.wait(30000));
    QVERIFY2(dialog.progressText().startsWith(QLatin1String("Stopped after")),
             qPrintable(dialog.progressText()));
    for (const char* run : {"/fp32/seed-1", "/fp16-noscale/seed-1"}) {
        const std::string dir = (dialog.compareDir() + QLatin1String(run)).toStdString();
        QVERIFY2(!QFileInfo::exists(QString::fromStdString(failedMarker(dir))), run);
        QVERIFY2(sweepRunState(dir, nlohmann::json::object()) == SweepRunState::ToRun, run);
    }
    // Opened again, the stopped sweep shows its runs' curves so far and says how Run resumes
    // it; Run resumes it in that folder (issue 52 item 20: "0 of 2 runs done" with empty
    // curves, and Run started a new folder).
    CompareDialog reader(base, nullptr, runs.path());
    QSignalSpy read(&reader, &CompareDialog::comparisonEnded);
    const QString folder = dialog.compareDir();
    QCOMPARE(reader.openSweep(folder), QString());
    QVERIFY(read.wait(30000));
    QVERIFY2(reader.progressText().contains(QLatin1String("0 of 2 runs done")) &&
                 reader.progressText().contains(QLatin1String("stopped before their end: fp32/")) &&
                 reader.progressText().contains(QLatin1String("Run resumes the sweep here")),
             qPrintable(reader.progressText()));
    QVERIFY(reader.lossPlot()->graphCount() >= 2 &&
            reader.lossPlot()->graph(0)->data()->size() > 0);
    // The stopped runs go on from their checkpoints: each step once in the record, the first
    // new one right after the step each stopped at.
    std::map<std::string, std::int64_t> stoppedAt;
    for (const char* run : {"/fp32/seed-1", "/fp16-noscale/seed-1"}) {
        const std::string dir = (folder + QLatin1String(run)).toStdString();
        QVERIFY2(QFileInfo::exists(QString::fromStdString(dir + "/" + kCheckpointFile)), run);
        stoppedAt[dir] = RunRecord(dir).steps().back().step;
    }
    reader.run({QStringLiteral("fp32"), QStringLiteral("fp16-noscale")}, 1000000, 1);
    QCOMPARE(reader.compareDir(), folder);
    QTRY_VERIFY_WITH_TIMEOUT(std::all_of(stoppedAt.begin(), stoppedAt.end(),
                                         [](const auto& run) {
                                             return RunRecord(run.first).steps().back().step >
                                                    run.second + 2;
                                         }),
                             30000);
    reader.stop();
    QVERIFY(read.wait(30000));
    for (const auto& [dir, step] : stoppedAt) {
        const std::vector<StepScalars> steps = RunRecord(dir).steps();
        for (std::size_t i = 0; i < steps.size(); ++i)
            QCOMPARE(steps[i].step, static_cast<std::int64_t>(i + 1));
        std::ifstream events(dir + "/events.jsonl");
        const std::string eventsText{std::istreambuf_iterator<char>(events), {}};
        QVERIFY2(eventsText.find("resumed from the checkpoint of step " + std::to_string(step)) !=
                     std::string::npos,
                 dir.c_str());
    }
}

// Two presets x two seeds: four runs, each with its own record in the sweep layout beside a
// sweep.json; the curves are the means over seeds with a band, the table and the error bars give
// each preset's interval and the verdict against fp32; a second dialog opens the folder and shows
// the same table; a folder without a sweep.json is refused naming the file.
void TestMainWindow::compareOverlaysCurves() {
    const TrainConfig base = smallCompareBase();
    QTemporaryDir runs;
    CompareDialog dialog(base, nullptr, runs.path());
    QSignalSpy ended(&dialog, &CompareDialog::comparisonEnded);
    dialog.run({QStringLiteral("fp32"), QStringLiteral("fp16-noscale")}, 20, 2);
    QVERIFY(ended.wait(60000)); // the last refresh has drawn the final curves
    QVERIFY(!dialog.isRunning());
    QVERIFY2(dialog.progressText().startsWith(QLatin1String("Done: 4 runs of 20 steps")),
             qPrintable(dialog.progressText()));
    for (const char* run :
         {"/fp32/seed-1/run.sqlite", "/fp32/seed-2/run.sqlite", "/fp16-noscale/seed-1/run.sqlite",
          "/fp16-noscale/seed-2/run.sqlite", "/sweep.json"})
        QVERIFY2(QFileInfo::exists(dialog.compareDir() + QLatin1String(run)), run);
    // The runs are the ones the CLI's sweep plans for this sweep.json (the one planner): each
    // trained exactly its planned config.
    const std::string compareDir = dialog.compareDir().toStdString();
    for (const SweepRun& r : planSweepRuns(readSweepFile(compareDir + "/sweep.json"), compareDir)) {
        std::ifstream in(r.dir + "/config.json");
        QVERIFY2(nlohmann::json::parse(in, nullptr, false) == configFromJson(r.config).toJson(),
                 r.relative.c_str());
    }
    // Two means (graph 0 and 1), each with a band's two edges behind it.
    QCOMPARE(dialog.lossPlot()->graphCount(), 2 + 2 * 2);
    QCOMPARE(dialog.lossPlot()->graph(0)->name(), QStringLiteral("fp32"));
    QCOMPARE(dialog.lossPlot()->graph(0)->data()->size(), 20);
    QCOMPARE(dialog.lossPlot()->graph(1)->data()->size(), 20);
    QCOMPARE(dialog.flushedPlot()->graph(1)->data()->size(), 20);
    // The flushed plot in percent, as the table, its lines named in a legend (an exported
    // flushed.png had none), and fp32's zero line above the axis, not hidden in it (issue 65
    // item 32).
    QCOMPARE(dialog.flushedPlot()->graph(0)->name(), QStringLiteral("fp32"));
    QVERIFY(dialog.flushedPlot()->legend->visible());
    QVERIFY(dialog.flushedPlot()->yAxis->label().contains(QLatin1Char('%')));
    QVERIFY(dialog.flushedPlot()->yAxis->range().lower < 0.0);
    double mostFlushed = 0.0; // fp16-noscale: about 15% of the nonzero, as a share 0.15
    for (int i = 0; i < 20; ++i)
        mostFlushed = std::max(mostFlushed, dialog.flushedPlot()->graph(1)->data()->at(i)->value);
    QVERIFY2(mostFlushed > 1.0, qPrintable(QString::number(mostFlushed)));
    // A member opened in the window names its point (issue 65 item 32: "run: seed-1").
    QCOMPARE(m_window->openRun(dialog.compareDir() + QStringLiteral("/fp16-noscale/seed-1")),
             QString());
    QCOMPARE(m_window->presetBox()->currentText(), QStringLiteral("run: fp16-noscale/seed-1"));
    m_window->presetBox()->setCurrentText(QStringLiteral("fp16-noscale"));
    QCOMPARE(m_window->applySettings(), QString()); // the app's own run again
    QVERIFY(dialog.lossPlot()->graph(2)->channelFillGraph() == dialog.lossPlot()->graph(3));
    // Seeds differ, so the band has width: its upper edge lies above the mean somewhere.
    bool wide = false;
    for (int i = 0; i < 20; ++i)
        wide = wide || dialog.lossPlot()->graph(2)->data()->at(i)->value >
                           dialog.lossPlot()->graph(0)->data()->at(i)->value + 1e-6;
    QVERIFY(wide);
    QTableWidget* table = dialog.resultsTable();
    QCOMPARE(table->rowCount(), 2);
    for (int c = 0; c < table->columnCount(); ++c) { // headers whole (issue 42 item 28)
        const QString header = table->horizontalHeaderItem(c)->text();
        QVERIFY2(table->horizontalHeader()->sectionSize(c) >=
                     table->horizontalHeader()->fontMetrics().horizontalAdvance(header),
                 qPrintable(header));
    }
    QCOMPARE(table->item(0, 0)->text(), QStringLiteral("fp32"));
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("2"));
    QVERIFY2(table->item(0, 2)->text().contains(QStringLiteral(" ± ")),
             qPrintable(table->item(0, 2)->text()));
    const int verdictColumn = table->columnCount() - 1;
    QCOMPARE(table->item(0, verdictColumn)->text(), QStringLiteral("baseline"));
    const QString verdict = table->item(1, verdictColumn)->text();
    QVERIFY2(verdict.contains(QLatin1String("at n = 2")) || verdict.contains(QLatin1String(" by ")),
             qPrintable(verdict));
    // Per preset a point and its error bars (the interval's half-width, n = 2).
    QCOMPARE(dialog.metricsPlot()->plottableCount(), 2 * 2);
    auto* bars = qobject_cast<QCPErrorBars*>(dialog.metricsPlot()->plottable(1));
    QVERIFY(bars != nullptr);
    QCOMPARE(bars->dataCount(), 1);
    QVERIFY(bars->data()->at(0).errorPlus > 0.0);
    dialog.show();
    QCoreApplication::processEvents();
    QVERIFY(dialog.grab().save(QCoreApplication::applicationDirPath() +
                               QStringLiteral("/compare_seeds.png")));
    // Run and Stop stay where they are whatever the progress text's length (they moved ~28 px
    // as it reflowed, issue 52 item 25): beside a fresh dialog's one-line text, the same place.
    {
        CompareDialog fresh(base, nullptr, runs.path());
        fresh.resize(dialog.size());
        fresh.show();
        QCoreApplication::processEvents();
        QVERIFY(dialog.progressText().size() > 80);
        QCOMPARE(fresh.runButton()->geometry(), dialog.runButton()->geometry());
        fresh.close();
    }
    dialog.close(); // the main window takes the keyboard again for the tests after this one
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
    QTemporaryDir dir;
    QCOMPARE(dialog.exportPlots(dir.path()), QString());
    for (const char* png : {"/loss.png", "/flushed.png", "/test_accuracy.png"})
        QVERIFY2(!QImage(dir.path() + QLatin1String(png)).isNull(), png);
    for (const char* vector : {"/loss.pdf", "/loss.svg", "/test_accuracy.svg"})
        QVERIFY2(QFileInfo(dir.path() + QLatin1String(vector)).size() > 1000, vector);
    QVERIFY(QFileInfo(dir.path() + QStringLiteral("/results.csv")).size() > 100);
    // On a full disk (a file-size limit plays it) the error names the file and the reason, and
    // no empty file is left (it said "loss.png: cannot write" over a 0-byte loss.png); with
    // nothing drawn, nothing is written (three empty PNGs were) (issue 52 item 21).
    QTemporaryDir full;
    const QString fullError = underFileSizeLimit([&] { return dialog.exportPlots(full.path()); });
    QVERIFY2(fullError.contains(QLatin1String("File too large")), qPrintable(fullError));
    for (const QFileInfo& f : QDir(full.path()).entryInfoList(QDir::Files | QDir::Hidden))
        QVERIFY2(f.size() > 0, qPrintable(f.fileName()));
    CompareDialog empty(base, nullptr, runs.path());
    QVERIFY(!empty.lossPlot()->legend->visible()); // no empty legend before any run
    QTemporaryDir nothing;
    QVERIFY2(empty.exportPlots(nothing.path()).startsWith(QLatin1String("Nothing to export")),
             qPrintable(empty.exportPlots(nothing.path())));
    QVERIFY(QDir(nothing.path()).isEmpty());

    CompareDialog reader(base, nullptr, runs.path());
    QSignalSpy read(&reader, &CompareDialog::comparisonEnded);
    QCOMPARE(reader.openSweep(dialog.compareDir()), QString());
    QCOMPARE(reader.seedsBox()->value(), 2); // the sweep's seeds, not 1
    QVERIFY(read.wait(30000));
    QCOMPARE(reader.resultsTable()->rowCount(), 2);
    for (int column = 0; column < table->columnCount(); ++column)
        QCOMPARE(reader.resultsTable()->item(1, column)->text(), table->item(1, column)->text());
    QCOMPARE(reader.lossPlot()->graph(1)->data()->size(), 20);
    const QString refused = reader.openSweep(runs.path());
    QVERIFY2(refused.contains(runs.path() + QStringLiteral("/sweep.json")), qPrintable(refused));
}

// Open run shows a past run from its record (here the window's own run, which it ends first):
// its losses step for step, its layers, the last recorded histograms and the heat map; a folder
// without a record is refused with the reason, and the current run goes on.
void TestMainWindow::openRunShowsAPastRun() {
    TrainingController* c = m_window->controller();
    QCOMPARE(m_window->applySettings(), QString());
    const std::vector<double> losses = stepAndCollectLosses(*m_window, 4);
    const QString run = c->runDir();
    const std::vector<std::string> names = c->stageNames();

    QTemporaryDir empty;
    const QString refused = m_window->openRun(empty.path());
    QVERIFY2(refused.contains(QLatin1String("no run record here")), qPrintable(refused));
    QVERIFY(c->hasSession());

    QCOMPARE(m_window->openRun(run), QString());
    QVERIFY(!c->hasSession());
    QCOMPARE(m_window->viewedRun(), run);
    const auto trainLoss = m_window->timeView()->plot()->graph(0)->data(); // the first graph
    QCOMPARE(static_cast<std::size_t>(trainLoss->size()), losses.size());
    for (int i = 0; i < trainLoss->size(); ++i)
        QCOMPARE(trainLoss->at(i)->value, losses[static_cast<std::size_t>(i)]);
    QComboBox* layers = m_window->gradientView()->stageBox();
    QCOMPARE(layers->count(), static_cast<int>(names.size()));
    QCOMPARE(layers->itemText(0).toStdString(), names[0]);
    QVERIFY(m_window->gradientView()->currentFractions().normal > 0.0); // step 1's histograms
    QVERIFY(m_window->heatmapView()->valueAt(4, 0) >= 0.0);
    QCOMPARE(m_window->applySettings(), QString()); // a new run from its settings
    QVERIFY(c->hasSession());
    QVERIFY(m_window->viewedRun().isEmpty());
    QVERIFY(!m_window->scrubSlider()->isVisible());

    // A run that recorded histograms at every statistics step: the scrub slider walks them.
    QTemporaryDir runs;
    const std::string recorded = runs.path().toStdString() + "/every";
    {
        TrainConfig config = configFromJson(
            {{"data", {{"train_size", 200}, {"test_size", 50}}},
             {"model", {{"hidden", {8}}}},
             {"train", {{"steps", 5}, {"batch_size", 16}, {"histograms_every", 1}}},
             // switched to dynamic after step 2 (the probe's run did at step 2033)
             {"timeline", {{{"step", 2}, {"set", {{"scaling", {{"policy", "dynamic"}}}}}}}}});
        TrainingSession session(config, c->data(), recorded);
        session.start();
        session.waitUntilDone();
        QCOMPARE(session.state(), SessionState::Finished);
    }
    QCOMPARE(m_window->openRun(QString::fromStdString(recorded)), QString());
    // An exported figure of an opened run names its recipe, not the preset box's "run: every"
    // (issue 65 item 32: "run every (run: every)").
    {
        QCOMPARE(m_window->presetBox()->currentText(), QStringLiteral("run: every"));
        QTemporaryDir plots;
        QCOMPARE(m_window->exportPlots(plots.path()), QString());
        QFile svg(plots.path() + QStringLiteral("/training.svg"));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(svg.readAll());
        QVERIFY2(text.contains(QLatin1String("run every (")) &&
                     text.contains(QLatin1String(" scaling)")) &&
                     !text.contains(QLatin1String("(run: ")),
                 qPrintable(text.left(2000)));
    }
    QSlider* scrub = m_window->scrubSlider();
    QVERIFY(scrub->isVisible());
    QCOMPARE(scrub->maximum(), 4); // steps 1..5
    QCOMPARE(m_window->viewedStep(), std::int64_t{5});
    // Each step's policy as it ran: dynamic from step 3, static before.
    QCOMPARE(m_window->policyBox()->currentText(), QStringLiteral("dynamic"));
    scrub->setValue(1);
    QCOMPARE(m_window->viewedStep(), std::int64_t{2});
    QCOMPARE(m_window->policyBox()->currentText(), QStringLiteral("static"));
    scrub->setValue(2);
    QCOMPARE(m_window->policyBox()->currentText(), QStringLiteral("dynamic"));
    scrub->setValue(1);
    QVERIFY(m_window->gradientView()->currentFractions().normal > 0.0);
    // An Apply that fails (a data folder that does not exist) leaves the recorded run on show
    // as it was: its scrubber, its step, the status (issue 52 item 18: the scrubber went, the
    // status still said "Viewing run", Step did nothing without a word).
    QComboBox* data = m_window->dataBox();
    const int dataBefore = data->currentIndex();
    m_window->setPathPicker([] { return QStringLiteral("/nonexistent/fashion"); });
    data->setCurrentIndex(data->findData(QStringLiteral("dir")));
    emit data->activated(data->currentIndex());
    m_window->setPathPicker({});
    QVERIFY(m_window->applySettings().contains(QLatin1String("/nonexistent/fashion")));
    QCOMPARE(m_window->viewedRun(), QString::fromStdString(recorded));
    QVERIFY(scrub->isVisible());
    QCOMPARE(m_window->viewedStep(), std::int64_t{2});
    QVERIFY(!c->hasSession());
    data->setCurrentIndex(dataBefore);
    // Another network chosen over an opened run's settings takes what that network needs (issue
    // 52 item 19: "GPT on text" was refused, "the gpt model trains with adamw", until a preset
    // was picked); the MLP again takes the MLP's.
    QComboBox* model = m_window->modelBox();
    model->setCurrentIndex(model->findData(QStringLiteral("gpt")));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(c->config().model.type, std::string("gpt"));
    QVERIFY(c->config().optimizer == OptimizerKind::AdamW);
    model->setCurrentIndex(model->findData(QStringLiteral("mlp")));
    QCOMPARE(m_window->applySettings(), QString());
    QCOMPARE(c->config().model.type, std::string("mlp"));
    QVERIFY(c->config().optimizer == OptimizerKind::Sgd);
}
