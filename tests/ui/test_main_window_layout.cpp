// The desktop app offscreen: the window's layout at small sizes, the format inspector, the README's
// first session, a screenshot.
#include "test_main_window.h"

void TestMainWindow::formatInspectorShowsEveryFormat() {
    FormatInspector* inspector = m_window->formatInspector();
    inspector->setValueText(QStringLiteral("464"));
    QTableWidget* table = inspector->table();
    QCOMPARE(table->rowCount(), static_cast<int>(namedFormats().size()));
    bool sawE4m3 = false;
    for (int r = 0; r < table->rowCount(); ++r)
        if (table->item(r, 0)->text() == QLatin1String("fp8-e4m3")) {
            sawE4m3 = true;
            QCOMPARE(table->item(r, 1)->text(), QStringLiteral("448"));
            QCOMPARE(table->item(r, 2)->text(), QStringLiteral("0x7e"));
            QCOMPARE(table->item(r, 5)->text(), QStringLiteral("416")); // next below
            QCOMPARE(table->item(r, 6)->text(), QStringLiteral("-"));   // 448 is the max
        }
    QVERIFY(sawE4m3);

    // Neighbours follow value order across zero (codes wrap there): below 0 is -min subnormal.
    inspector->setValueText(QStringLiteral("1e-9"));
    for (int r = 0; r < table->rowCount(); ++r) {
        const QString name = table->item(r, 0)->text();
        if (name == QLatin1String("fp8-e4m3fnuz") || name == QLatin1String("fp6-e3m2")) {
            const double minPositive = parseFormat(name.toStdString()).minPositive();
            QCOMPARE(table->item(r, 1)->text(), QStringLiteral("0"));
            QCOMPARE(table->item(r, 5)->text().toDouble(), -minPositive);
            QCOMPARE(table->item(r, 6)->text().toDouble(), minPositive);
        }
    }
}

// Input it cannot read empties the table (never the previous value's results) and says why;
// overflow to Inf and 0 -> nonzero have an infinite relative error, not 0.
void TestMainWindow::formatInspectorRefusesAndReportsHonestly() {
    FormatInspector* inspector = m_window->formatInspector();
    QTableWidget* table = inspector->table();
    const auto cell = [&](const char* format, int column) {
        for (int r = 0; r < table->rowCount(); ++r)
            if (table->item(r, 0)->text() == QLatin1String(format))
                return table->item(r, column)->text();
        return QString();
    };
    for (const char* bad : {"1e39", "1e-50", "abc", "xinf", "inff", "--1"}) {
        inspector->setValueText(QStringLiteral("1.5"));
        QVERIFY(table->rowCount() > 0);
        inspector->setValueText(QString::fromLatin1(bad));
        QVERIFY2(table->rowCount() == 0, bad);
        QVERIFY2(inspector->valueError().contains(QLatin1String(bad)), bad);
    }
    // The reason is shown in words, not only as a red border (issue 42 item 22).
    inspector->setValueText(QStringLiteral("1e39"));
    QVERIFY(!inspector->messageLabel()->isHidden());
    QVERIFY2(inspector->messageLabel()->text().contains(QLatin1String("beyond float32's range")),
             qPrintable(inspector->messageLabel()->text()));
    inspector->setValueText(QString(500, QLatin1Char('9')));
    QCOMPARE(table->rowCount(), 0);
    QVERIFY(inspector->valueError().size() < 200);
    QVERIFY2(inspector->valueError().contains(QLatin1String("beyond float32's range")) &&
                 inspector->valueError().contains(QLatin1String("500 characters")),
             qPrintable(inspector->valueError()));
    inspector->setValueText(QStringLiteral("1.5"));
    QVERIFY(inspector->messageLabel()->isHidden());
    // Issue 65 item 35: neighbours of a wide format (no table of its values) and of an overflow.
    inspector->setValueText(QStringLiteral("1"));
    // (nine digits read back to the float they print)
    QCOMPARE(cell("fp32", 5).toFloat(), 1.0f - std::ldexp(1.0f, -24)); // below a power of two
    QCOMPARE(cell("fp32", 6).toFloat(), 1.0f + std::ldexp(1.0f, -23));
    QCOMPARE(cell("tf32", 5).toFloat(), 1.0f - std::ldexp(1.0f, -11));
    QCOMPARE(cell("tf32", 6).toFloat(), 1.0f + std::ldexp(1.0f, -10));
    inspector->setValueText(QStringLiteral("65520"));
    QCOMPARE(cell("fp16", 1), QStringLiteral("inf"));
    QCOMPARE(cell("fp16", 5), QStringLiteral("65504"));
    QCOMPARE(cell("fp16", 6), QStringLiteral("-"));
    // -0 keeps its sign where the format has a negative zero (FNUZ has none).
    inspector->setValueText(QStringLiteral("-0"));
    QCOMPARE(cell("fp16", 1), QStringLiteral("-0"));
    QCOMPARE(cell("fp16", 2), QStringLiteral("0x8000"));
    QCOMPARE(cell("fp8-e4m3fnuz", 1), QStringLiteral("0"));
    // Custom formats join the table; a bad spec is named with its reason.
    inspector->setCustomFormatsText(QStringLiteral("e5m2:bias=16:nosub, e3m4"));
    QVERIFY2(inspector->customFormatsError().isEmpty(),
             qPrintable(inspector->customFormatsError()));
    inspector->setValueText(QStringLiteral("0.1"));
    QCOMPARE(table->rowCount(), static_cast<int>(namedFormats().size()) + 2);
    QCOMPARE(table->item(table->rowCount() - 1, 1)->text(),
             QString::number(static_cast<double>(quantizeReference(
                                 QuantConfig::forFormat(parseFormat("e3m4")), 0.1f, 0, nullptr)),
                             'g', 9));
    inspector->setCustomFormatsText(QStringLiteral("e9m2"));
    QVERIFY2(inspector->customFormatsError().contains(QLatin1String("e9m2")),
             qPrintable(inspector->customFormatsError()));
    QVERIFY(!inspector->messageLabel()->isHidden());
    QCOMPARE(table->rowCount(), static_cast<int>(namedFormats().size()));
    // Every bad entry is named and the good ones after a bad one stay (issue 52 item 25: only
    // the first was reported, the valid ones after it dropped).
    inspector->setCustomFormatsText(QStringLiteral("e9m2, e3m4, e0m1"));
    QVERIFY2(inspector->customFormatsError().contains(QLatin1String("\"e9m2\"")) &&
                 inspector->customFormatsError().contains(QLatin1String("\"e0m1\"")),
             qPrintable(inspector->customFormatsError()));
    QCOMPARE(table->rowCount(), static_cast<int>(namedFormats().size()) + 1);
    inspector->setCustomFormatsText(QString());
    for (const char* good : {"inf", "-Infinity", "NaN", "+inf", "3.4028235e38", "1.4e-45"}) {
        inspector->setValueText(QString::fromLatin1(good));
        QVERIFY2(inspector->valueError().isEmpty(), qPrintable(inspector->valueError()));
    }
    inspector->setValueText(QStringLiteral("65504"));
    QCOMPARE(cell("fp8-e5m2", 4), QStringLiteral("inf")); // 65504 -> Inf in E5M2
    inspector->setValueText(QStringLiteral("65520"));
    QCOMPARE(cell("fp16", 4), QStringLiteral("inf"));
    inspector->setValueText(QStringLiteral("0"));
    QCOMPARE(cell("e8m0", 4), QStringLiteral("inf")); // 0 -> 2^-127: E8M0 has no zero
    QCOMPARE(cell("fp16", 4), QString::number(0.0, 'e', 3));
    inspector->setValueText(QStringLiteral("nan"));
    QCOMPARE(cell("fp16", 4), QStringLiteral("-"));
}

// At 800 x 600 the settings a new run takes stay in view (issue 52 item 25: lr, steps, device,
// pace and Apply hid behind the toolbar's "»") and the recipe dock leaves the views room (it
// took ~40% of the width).
void TestMainWindow::narrowWindowKeepsTheSettingsInView() {
    const QSize before = m_window->size();
    m_window->resize(800, 600);
    QTest::qWait(50);
    auto* settings = m_window->findChild<QToolBar*>(QStringLiteral("settingsToolbar"));
    QVERIFY(settings != nullptr);
    QWidget* apply = settings->widgetForAction(m_window->applyAction());
    QVERIFY(apply != nullptr);
    QTRY_VERIFY(apply->isVisible());
    QVERIFY(m_window->rect().contains(apply->mapTo(m_window.get(), apply->rect().bottomRight())));
    QVERIFY(m_window->deviceBox()->isVisible() && m_window->paceBox()->isVisible());
    auto* dock = m_window->findChild<QDockWidget*>(QStringLiteral("recipeDock"));
    QVERIFY(dock != nullptr);
    QTRY_VERIFY2(dock->width() <= m_window->width() / 3 + 8,
                 qPrintable(QStringLiteral("%1 of %2").arg(dock->width()).arg(m_window->width())));
    // The loss-scale slider keeps a usable width and its labels whole (issue 65 item 28: 2.4 px
    // a binade, "Loss scal" and the value cut off at 800 x 600).
    QSlider* handle = m_window->scaleSlider()->slider();
    QVERIFY(handle->isVisible());
    QVERIFY2(handle->width() >= LossScaleSlider::kMinimumSliderWidth,
             qPrintable(QString::number(handle->width())));
    for (QLabel* label : m_window->scaleSlider()->findChildren<QLabel*>())
        QVERIFY2(label->width() >= label->sizeHint().width(), qPrintable(label->text()));
    m_window->resize(before);
    // A wheel notch moves it a quarter binade (QSlider's own: three quarters).
    LossScaleSlider alone;
    alone.setLog2Scale(2.0);
    QWheelEvent notch(QPointF(5, 5), QPointF(5, 5), QPoint(), QPoint(0, 120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(alone.slider(), &notch);
    QCOMPARE(alone.log2Scale(), 2.25);
}

void TestMainWindow::screenshotAfterTraining() {
    if (m_window->controller()->latest() == nullptr) { // run alone: take a first step
        QTest::keyClick(m_window.get(), Qt::Key_S);
        QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->latest() != nullptr, 10000);
    }
    const std::int64_t before = m_window->controller()->latest()->scalars.step;
    QTest::keyClick(m_window.get(), Qt::Key_Space); // Train
    QCOMPARE(m_window->trainAction()->text(), QStringLiteral("Pause"));
    QVERIFY(reachesStep(m_window->controller(), before + 40));
    QTest::keyClick(m_window.get(), Qt::Key_Space); // Pause
    QTRY_VERIFY_WITH_TIMEOUT(m_window->controller()->state() == SessionState::Paused,
                             kWorkerWaitMs);
    QTRY_COMPARE_WITH_TIMEOUT(m_window->trainAction()->text(), QStringLiteral("Train"),
                              kWorkerWaitMs); // the window noticed
    m_window->gradientView()->stageBox()->setCurrentIndex(2);
    QCoreApplication::processEvents(); // the queued replot
    const QString path =
        QCoreApplication::applicationDirPath() + QStringLiteral("/main_window.png");
    QVERIFY(m_window->grab().save(path));
    QVERIFY(QFile(path).size() > 10000);
}

// README "A first session", step by step on a fresh window, with the numbers it promises.
void TestMainWindow::readmeFirstSessionHoldsAsWritten() {
    QString error;
    MainWindow w;
    w.setErrorSink(&error);
    w.resize(1280, 820);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    TrainingController* c = w.controller();
    // 1. The demo: an MLP 784-256-256-10 on built-in data, FP16 without loss scaling, paced.
    QCOMPARE(c->config().model.type, std::string("mlp"));
    QCOMPARE(c->config().model.hidden, (std::vector<int>{256, 256}));
    QCOMPARE(c->config().dataSource, std::string("synthetic"));
    QCOMPARE(c->config()
                 .recipe.roles[static_cast<std::size_t>(TensorRole::ActivationGradients)]
                 .format.name,
             std::string("fp16"));
    QCOMPARE(c->config().lossScale, 1.0);
    QCOMPARE(w.paceBox()->currentData().toDouble(), MainWindow::kDefaultPace);
    // 2. Train (Space); a person watching pauses after a few seconds (here: past step 150).
    QTest::keyClick(&w, Qt::Key_Space);
    QVERIFY(reachesStep(c, 150));
    QTest::keyClick(&w, Qt::Key_Space);
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == SessionState::Paused, kWorkerWaitMs);
    c->poll(); // the snapshot of the step it paused after
    QTRY_VERIFY_WITH_TIMEOUT(c->latest()->statsStep == c->latest()->scalars.step, kWorkerWaitMs);
    GradientView* view = w.gradientView();
    QVERIFY(view->role() == TensorRole::ActivationGradients);
    view->stageBox()->setCurrentIndex(view->stageBox()->count() - 1); // the last layer
    const double lastBefore = view->currentFractions().flushed;
    // "two fifths or more" (0.40-0.43 here; the probe saw 0.56-0.58 later in a run)
    QVERIFY2(lastBefore > 0.35, qPrintable(QString::number(lastBefore)));
    view->stageBox()->setCurrentIndex(0);
    const double firstBefore = view->currentFractions().flushed;
    // "well under 1%" (README; 0.06-0.6% over steps 100-300 measured with the CLI's fp16-noscale)
    QVERIFY2(firstBefore > 0.0 && firstBefore < 0.01, qPrintable(QString::number(firstBefore)));
    // 3. The slider to 2^10 re-shades the paused run at once: the first layer's flushed share
    //    goes to 0, the last layer's falls by a third or more.
    w.scaleSlider()->setLog2Scale(10.0);
    QCOMPARE(view->currentFractions().flushed, 0.0);
    view->stageBox()->setCurrentIndex(view->stageBox()->count() - 1);
    const double lastAfter = view->currentFractions().flushed;
    QVERIFY2(lastAfter < lastBefore * (2.0 / 3.0),
             qPrintable(QStringLiteral("%1 -> %2").arg(lastBefore).arg(lastAfter)));
    // Train on: the next steps use the new scale.
    const std::int64_t paused = c->latest()->scalars.step;
    QTest::keyClick(&w, Qt::Key_Space);
    QTRY_VERIFY_WITH_TIMEOUT(c->latest()->scalars.step >= paused + 5, 30000);
    QTest::keyClick(&w, Qt::Key_Space);
    QTRY_VERIFY_WITH_TIMEOUT(c->state() == SessionState::Paused, kWorkerWaitMs);
    c->poll(); // the snapshot of the step it paused after
    QCOMPARE(c->latest()->scalars.scale, 1024.0);
    // 4. Policy dynamic: it starts from the slider's scale.
    w.policyBox()->setCurrentText(QStringLiteral("dynamic"));
    emit w.policyBox()->activated(w.policyBox()->currentIndex());
    const std::int64_t before = c->latest()->scalars.step;
    c->step();
    QTRY_COMPARE_WITH_TIMEOUT(c->latest()->scalars.step, before + 1, kWorkerWaitMs);
    QVERIFY(c->config().scalingPolicy == ScalingPolicy::Dynamic);
    QCOMPARE(c->latest()->scalars.scale, 1024.0);
    // 5. Compare presets offers fp32, fp16-noscale and fp16-amp, ticked.
    CompareDialog compare(c->config());
    QCOMPARE(compare.checkedPresets(),
             (QStringList{QStringLiteral("fp32"), QStringLiteral("fp16-noscale"),
                          QStringLiteral("fp16-amp")}));
    // 6. Export report and Save session; the session holds the start and the two edits.
    QTemporaryDir dir;
    QCOMPARE(w.exportReport(dir.path()), QString());
    for (const char* name :
         {"gradients.png", "training.pdf", "config.json", "state_at_export.json", "metrics.csv"})
        QVERIFY2(QFileInfo::exists(dir.filePath(QLatin1String(name))), name);
    QCOMPARE(w.saveSession(dir.filePath(QStringLiteral("session.json"))), QString());
    QFile f(dir.filePath(QStringLiteral("session.json")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const TrainConfig session = configFromJson(nlohmann::json::parse(f.readAll().toStdString()));
    QCOMPARE(session.lossScale, 1.0);
    QCOMPARE(session.timeline.size(), std::size_t{2}); // the scale, then the policy
    QCOMPARE(session.timeline[0].step, paused);
    QVERIFY(error.isEmpty());
}

// At 800x600 the layer and tensor boxes show their entries whole and the shares line sits below
// the histogram, not over it (issue 42 item 28).
void TestMainWindow::smallWindowKeepsItsControlsReadable() {
    const QSize before = m_window->size();
    m_window->resize(800, 600);
    QTRY_VERIFY2(m_window->size() == QSize(800, 600),
                 qPrintable(QStringLiteral("%1x%2, minimum %3x%4")
                                .arg(m_window->width())
                                .arg(m_window->height())
                                .arg(m_window->minimumSizeHint().width())
                                .arg(m_window->minimumSizeHint().height())));
    QCoreApplication::processEvents();
    QVERIFY(m_window->grab().save(QCoreApplication::applicationDirPath() +
                                  QStringLiteral("/main_window_800x600.png")));
    GradientView* view = m_window->gradientView();
    for (QComboBox* box : {view->stageBox(), view->roleBox()}) {
        const int needed = box->fontMetrics().horizontalAdvance(box->currentText());
        QVERIFY2(box->width() > needed, qPrintable(QStringLiteral("%1: %2 px for \"%3\" (%4 px)")
                                                       .arg(box->objectName())
                                                       .arg(box->width())
                                                       .arg(box->currentText())
                                                       .arg(needed)));
    }
    const QWidget* counters = view->findChild<QLabel*>(QStringLiteral("sharesLine"));
    QVERIFY(counters != nullptr);
    const QWidget* plot = view->findChild<QCustomPlot*>();
    QVERIFY2(counters->geometry().top() >= plot->geometry().bottom(),
             qPrintable(QStringLiteral("shares line at %1, histogram ends at %2; minimum heights: "
                                       "gradient view %3, detail tabs %4")
                            .arg(counters->geometry().top())
                            .arg(plot->geometry().bottom())
                            .arg(view->minimumSizeHint().height())
                            .arg(m_window->detailTabs()->minimumSizeHint().height())));
    m_window->resize(before);
}
