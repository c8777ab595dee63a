// MainWindow: run controls, the loss-scale slider, the gradient view and the time view around
// one TrainingController.
#pragma once

#include "live_run_source.h"
#include "record_run_source.h"
#include "stats/training_snapshot.h"
#include "train/train_config.h"
#include "training_controller.h"

#include <QElapsedTimer>
#include <QMainWindow>

#include <functional>
#include <memory>
#include <string>

class QAction;
class QMenu;
class QComboBox;
class QPlainTextEdit;
class QScrollArea;
class QSlider;
class QDoubleSpinBox;
class QLabel;
class QToolBar;
class QDockWidget;
class QProgressBar;
class QSpinBox;
class QTimer;

namespace plab {

class AdvisePanel;
class CompareDialog;
class BlocksView;
class DiagnosticsView;
class FlushHeatmapView;
class FormatWhatIfTable;
class StagesOverview;
class FormatInspector;
class GradientView;
class LossScaleSlider;
class RecipeEditor;
class RunRecord;
class RunSteering;
class TimeView;
struct RecordedEvent;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    TrainingController* controller() const { return m_controller; }
    GradientView* gradientView() const { return m_gradientView; }
    LossScaleSlider* scaleSlider() const { return m_slider; }
    TimeView* timeView() const { return m_timeView; }
    QAction* trainAction() const { return m_trainAction; }
    QAction* stepAction() const { return m_stepAction; }
    QComboBox* policyBox() const { return m_policy; }
    QComboBox* deviceBox() const { return m_device; }
    QComboBox* paceBox() const { return m_pace; }
    QComboBox* presetBox() const { return m_preset; }
    QAction* applyAction() const { return m_applyAction; }
    static constexpr double kDefaultPace = 50.0; // steps per second, for watching live
    QLabel* backendLabel() const { return m_backend; }
    QString deviceNotice() const { return m_deviceNotice; }

    // Builds the config from the controls and starts a fresh, paused session. Returns the error
    // shown to the user, or an empty string.
    QString applySettings();
    // Reset: a fresh model in a new run folder, carrying the edits made so far (empty: done).
    QString resetRun();
    // Exports the plots as PNG, PDF and SVG into dir; returns the error, or an empty string.
    QString exportPlots(const QString& dir);
    // Plots, config.json (start + timeline of edits), summary.json and the run record's
    // CSV/JSONL exports of the current run, into one folder. Errors name the file and reason.
    QString exportReport(const QString& dir);
    // The session file is the CLI's JSON config with the run's timeline of edits: a GUI run
    // replays headless (`precision-lab-cli train --config`), edits included.
    QString saveSession(const QString& path);
    QString loadSession(const QString& path);
    // Shows a run from its record (DIR/run.sqlite): loss curves, the heat map, the last
    // recorded histograms, its settings in the controls (Apply starts a new run from them). The
    // current run ends first. A run that another process still writes (a watched PyTorch run, a
    // CLI train, a sweep's run) is followed: new steps appear as they are committed (polled
    // every RecordRunSource::kFollowMs), the gradient view stays on the newest step unless scrubbed
    // back, and the status bar says live or ended. Returns the error (not a record, unreadable
    // config), or empty.
    QString openRun(const QString& dir);
    QString viewedRun() const { return m_viewed ? m_viewed->folder() : QString(); }
    // The run on show is being written by another process.
    bool viewedRunIsLive() const { return m_viewed && m_viewed->live(); }
    // The steps of the run on show, as read at the last poll.
    const std::vector<StepScalars>& viewedHistory() const;
    // A watched PyTorch run judges every tensor in several formats: the one on show.
    QComboBox* watchedFormatBox() const { return m_watchedFormat; }
    // While a past run is on show: the slider over the steps whose histograms it recorded, and
    // the step the gradient view shows.
    QSlider* scrubSlider() const { return m_scrub; }
    std::int64_t viewedStep() const { return m_viewedStep; }
    RecipeEditor* recipeEditor() const { return m_recipeEditor; }
    FlushHeatmapView* heatmapView() const { return m_heatmap; }
    DiagnosticsView* diagnosticsView() const { return m_diagnostics; }
    BlocksView* blocksView() const { return m_blocks; }
    FormatWhatIfTable* formatWhatIf() const { return m_formatWhatIf; }
    StagesOverview* stagesOverview() const { return m_overview; }
    QPlainTextEdit* textSample() const { return m_textSample; }
    QTabWidget* detailTabs() const { return m_detailTabs; }
    FormatInspector* formatInspector();
    // Tools > Compare presets: a new dialog on this window's model and data (not yet shown;
    // deleted when closed) whose double-clicked points open their run here. runsRoot: where its
    // comparisons go (empty: the app's runs folder).
    CompareDialog* openCompare(const QString& runsRoot = {});
    // Help > About's text, with the application's version.
    QString aboutText() const;
    // Tools > Advise (ui/main_window_advise.cpp): the recipe advisor on the run in the window
    // (the one on show, else the app's own); the error or empty. Apply in it starts a new own
    // run under the advice, or sends the recipe to an emulated script that still runs.
    QString openAdvise();
    AdvisePanel* advisePanel();
    // What Apply as recipe does with the advice's document; the error or empty.
    QString applyAdvice(const nlohmann::json& document);
    // Steering an emulated run on show (ui/main_window_steering.cpp): null for the app's own
    // run; the last message sent or received.
    RunSteering* steering() const { return m_viewed ? &m_viewed->steering() : nullptr; }
    QString lastSteeringReply() const { return m_steeringReply; }
    QAction* resetAction() const { return m_resetAction; }
    // Test hook: errors go to this string instead of a modal dialog when set.
    void setErrorSink(QString* sink) { m_errorSink = sink; }
    // Test hook: what the data source's "Directory…" / "Text file…" dialog answers (empty:
    // cancelled) when set, instead of the dialog.
    void setPathPicker(std::function<QString()> picker) { m_pathPicker = std::move(picker); }
    QComboBox* dataBox() const { return m_data; }
    QComboBox* modelBox() const { return m_model; }
    // The toolbar fields whose values are not the run on show's ("network", "lr", ...): marked,
    // they take effect at Apply (ui/main_window_pending.cpp).
    QStringList pendingValues() const;

protected:
    void closeEvent(QCloseEvent* event) override;
    // A narrow window: the settings toolbar on a row of its own, the recipe dock at most a
    // third of the width.
    void resizeEvent(QResizeEvent* event) override;

private:
    void showRunSettings(const TrainConfig& config);
    static QString writeWholeFile(const QString& path, const std::string& text);
    // The run on show, read by the one poll timer: the app's own session, or a record (a past
    // run, or one another process writes) while m_viewed holds it.
    std::unique_ptr<LiveRunSource> m_live;
    std::unique_ptr<RecordRunSource> m_viewed;
    RunSource* m_source = nullptr; // one of the two
    QTimer* m_pollTimer = nullptr;
    void pollRunSource();
    // The record on show and no session of the app's own.
    bool viewingRecord() const { return m_viewed && !m_controller->hasSession(); }
    void showViewedStep(int index);
    // Reads the record on show again and draws it; the error (naming the run), or empty.
    QString refreshViewedRun();
    void showViewedRun(); // what the record source read, into the views and the controls
    QComboBox* m_watchedFormat = nullptr;
    void leaveViewedRun();                  // the recorded run on show gives way to the app's own
    std::vector<TensorRole> m_offeredRoles; // the Tensor box's, for the record on show
    QSlider* m_scrub = nullptr;
    QLabel* m_scrubLabel = nullptr;
    std::vector<std::int64_t> m_scrubSteps; // of the run on show, with histograms
    std::int64_t m_viewedStep = 0;
    // Steering (main_window_steering.cpp).
    QString m_steeringReply;
    double m_scaleAtPress = 0.0; // the slider's scale when a drag began
    QStringList m_controlTips;   // the controls' own tooltips, restored for the app's own runs
    // The constructor's parts (main_window.cpp), in the order it builds them.
    QTabWidget* buildDetailTabs();
    void buildCentralArea(QTabWidget* tabs);
    void buildRecipeDock();
    void buildStatusBar();
    void connectLossScaleSlider();
    void connectSession();
    bool steeringViewedRun() const;
    void rememberControlTips();
    void updateRunControls();
    // Whether the command (what: its words) reached the run on show; says why not, or that it
    // was sent to a script.
    bool sentToRun(const std::string& error, const QString& what, const QString& liveTitle = {});
    void useSliderScale(double scale);
    QString shownRecipeLabel() const;
    AdvisePanel* m_advise = nullptr;
    QString m_adviceRun;      // the run the All layers view's advice colours are of
    QString m_runUnderAdvice; // the run Apply started: the panel keeps the advice it applied
    bool m_startingRunUnderAdvice = false;
    DiagnosticsView* m_diagnostics = nullptr;
    QElapsedTimer m_diagnosticsClock; // the Diagnostics tab's last read of the record
    void showDiagnostics();
    void showSteeringReplies(const std::vector<RecordedEvent>& replies);
    void updateDiskUse();
    QLabel* m_disk = nullptr;
    QElapsedTimer m_diskCheck;
    // The status bar's throughput: samples trained per second of wall time, over about a second
    // (the engine's own rate while stepping is faster when the steps are paced).
    QElapsedTimer m_rateClock;
    std::int64_t m_rateStep = 0;
    double m_samplesPerSecond = 0.0;
    std::uint64_t m_runsFolderBytes = 0;
    static constexpr std::uint64_t kRunsFolderNotice = 1ull << 30; // 1 GiB
    void buildActions();
    void buildControls();
    void showError(const QString& title, const QString& message);
    void updateStatus();
    void chooseDataDirectory();
    void chooseTextFile();
    void fillDataChoices();
    QString dataSourceFromControls() const;
    TrainConfig configFromControls(QString* error) const;
    QString startRun(const TrainConfig& config);
    // label: the preset box's entry for it ("session: FILE", "run: FOLDER").
    void showConfigInControls(const TrainConfig& config, const QString& label);
    static constexpr int kSessionConfigRole = Qt::UserRole + 1; // preset box: a session's JSON
    // A watched PyTorch run has no config the app could train: its entry in the preset box
    // ("watched: FOLDER") holds none, and while it is current the toolbar's training fields,
    // which would describe no run, are disabled (picking a preset enables them).
    static constexpr int kWatchedRunRole = Qt::UserRole + 2;
    void showWatchedRunInControls(const QString& label);
    void removeRunEntry(); // the preset box's last entry, when it is a session's, run's or watch's
    void updateTrainingFields();
    void watchForPendingValues(); // connects the fields to markPendingValues()
    void markPendingValues();
    std::vector<QWidget*> pendingFields() const;
    QStringList m_fieldTips; // the fields' own tooltips, as pendingFields() lists them
    QToolBar* m_runToolbar = nullptr;
    QToolBar* m_settingsToolbar = nullptr;
    QAction* m_modelAction = nullptr; // the model and data boxes in the run toolbar
    QAction* m_dataAction = nullptr;
    QDockWidget* m_recipeDock = nullptr;
    QString m_applyTip;
    void showDeviceChoice(const TrainConfig& config);
    void rememberRecentFile(const QString& path);
    void rebuildRecentMenu();

    TrainingController* m_controller;
    GradientView* m_gradientView;
    TimeView* m_timeView;
    FlushHeatmapView* m_heatmap;
    BlocksView* m_blocks;
    FormatWhatIfTable* m_formatWhatIf;
    StagesOverview* m_overview;
    QScrollArea* m_overviewTab; // the tab holding it
    QPlainTextEdit* m_textSample;
    std::int64_t m_sampleStep = -1;
    QTabWidget* m_detailTabs;
    // The Advise panel advises the run in the window: shown, it advises again when another run
    // is shown; hidden, it forgets the advice (so that Export never writes another run's).
    void followRunInAdvise();
    void updateDetailViews(); // the visible one of blocks / what-if, for the gradient view's
    RecipeEditor* m_recipeEditor;
    FormatInspector* m_inspector = nullptr;
    QMenu* m_recentMenu = nullptr;
    LossScaleSlider* m_slider;
    QAction *m_trainAction, *m_stepAction, *m_resetAction, *m_applyAction, *m_exportAction;
    QComboBox *m_preset, *m_model, *m_data, *m_policy, *m_device, *m_pace;
    QSpinBox *m_seed, *m_steps;
    QDoubleSpinBox* m_lr;
    QLabel* m_status;
    QLabel* m_backend;
    QString m_deviceNotice; // the last device fallback notice, for the tooltip and tests
    QProgressBar* m_progress;
    QString m_dataDir, m_textFile;
    QString m_runPreset;  // the preset box's entry the app's own run was started from
    int m_dataChoice = 0; // the data box's entry before a dialog that may be cancelled
    std::function<QString()> m_pathPicker;
    void showChosenPath(const QString& choice, const QString& path); // in the data box's entry
    QString* m_errorSink = nullptr;
};

} // namespace plab
