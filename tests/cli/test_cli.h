// precision-lab-cli end to end (TestCli): one file per concern (test_cli_*.cpp), the fixtures in
// cli_test_support.h; main and the two shards CTest runs in test_cli_main.cpp.
#pragma once
#include <QCoreApplication>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

#include "cli_test_support.h"
#include "record/record_file.h"
#include "record/run_record.h"
#include "sweep/sweep_plan.h"
#include "sweep/sweep_run.h"
#include "test_shard.h"
#include "train/run_config_builder.h"
#include "train/train_config.h"

#include <fstream>

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace plab::cli_test;

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void formatsTable();
    void formatsCustom();
    void quantizeText();
    void quantizeBinary();
    void quantizeBlockFormats();
    void badInput_data();
    void badInput();
    void benchRuns();
    void presetsList();
    void trainRunsAndLogs();
    void trainBadInput_data();
    void trainBadInput();
    void trainKilledMidwayKeepsLogs();
    void trainDivergenceExitsCleanly();
    void compareWritesTableAndPlots();
    void compareKeepsFailedRunsInTheTable();
    void compareSaysWhichRunsDiverged();
    void aFolderOfAnotherKindIsRefused();
    void sweepResumesAndKeepsFailures();
    void sweepWithoutStatisticsShowsNoFlushedShares();
    void sweepVerdictNamesARealDifference();
    void sweepStopsItsRunsOnASignal();
    void sweepChildTrainsTheSweepsRunConfig();
    void compareAndSweepTrainTheSameRunConfigs();
    void duplicatePointsAreRefused();
    void slurmValuesCannotReachTheScript_data();
    void slurmValuesCannotReachTheScript();
    void compareSpeaksForItself();
    void killedCompareResumes();
    void stoppedTrainResumesFromItsCheckpoint();
    void killedTrainResumesFromItsLastCheckpoint();
    void minorMessagesSayWhatWasMeant();
    void sweepFolderHoldsOneSweep();
    void killedSweepLeavesNoOrphans();
    void lockedRunFolderIsLeftToItsWriter();
    void inputsThatWouldBeIgnoredAreRefused();
    void killedRunSaysItWasKilled();
    void messagesKeepTheirReason();
    void runFolderIsLockedAndNotReusedSilently();
    void stopSignalsWriteTheSummary_data();
    void stopSignalsWriteTheSummary();
    void stopBeforeTheRunStartsRecordsNothing();
    void stopWhileDataLoadsFromAFifo();
    void fullDiskIsAnErrorAndKeepsWholeRows();
    void neverMeasuredTestMetricsAreNull();
    void killedBeforeItsFirstStep();
    void inputReadersAreBounded();
    void fileSizeLimitIsAFullDisk();
    void compareAndSweepOnAFullDiskExit4();
    void configTooLargeForTheMachineIsRefused();
    void nanShownWithItsCodesSign();
    void runFolderRemovedMidRunIsAnError();
    void outputWriteErrorsAreErrors();
    void devicesListsCpuAndSaysWhyNoGpu();
    void exportRefusesWhatIsNotARecord();
};
