// `export RUN`: the run record (RUN/run.sqlite) as the CSV/JSONL files scripts and papers use.
// A finished run has them already; a killed run (SIGKILL, a crash, a power cut) has only its
// database, whose last whole step this recovers.
#include "cli_commands.h"

#include "record/folder_kind.h"
#include "record/record_file.h"
#include "record/run_export.h"
#include "record/run_record_schema.h"
#include "record/run_summary.h"

#include <cstdio>
#include <filesystem>
#include <optional>

namespace plab::cli {
namespace {

bool sameFolder(const std::string& a, const std::string& b) {
    std::error_code ec;
    return std::filesystem::equivalent(a, b, ec) || a == b;
}

} // namespace

Command addExportCommand(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "export", "Write a run record's metrics.csv, layers.csv, histograms.csv and events.jsonl");
    auto run = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    cmd->add_option("run", *run, "Run folder (holds run.sqlite)")->required();
    cmd->add_option("--out", *out, "Folder for the files (default: the run folder)");
    return {cmd, [run, out] {
                const std::string path = *run + "/" + kRunRecordFile;
                std::error_code ec; // a folder we may not read: its reason, not the library's
                if (!std::filesystem::is_regular_file(path, ec))
                    throw std::invalid_argument(
                        path + (unreadable(ec)
                                    ? ": cannot be read (" + ec.message() + ")"
                                    : ": no run record here (a run folder holds run.sqlite)"));
                std::unique_ptr<SqliteDb> db;
                std::int64_t steps = 0, events = 0;
                try { // read-write: SQLite reads a killed run's write-ahead log this way
                    db = std::make_unique<SqliteDb>(path, SqliteDb::Mode::ReadWrite);
                    checkRunRecord(*db);
                    steps = db->queryInteger("SELECT count(*) FROM steps");
                    events = db->queryInteger("SELECT count(*) FROM events");
                } catch (const RecordError& e) {
                    throw std::invalid_argument(e.what());
                }
                const std::string dir = out->empty() ? *run : *out;
                // Into the run itself, or a folder of no record: another run's exports would no
                // longer match its run.sqlite, and a sweep's or compare's files are theirs.
                if (!sameFolder(dir, *run))
                    if (const FolderKind held = folderKind(dir); held != FolderKind::Empty)
                        throw std::invalid_argument(
                            "--out " + dir + ": holds " + describeFolderKind(held) +
                            "'s record; the exports of " + *run +
                            " go into their own run's folder or a folder of no record");
                std::optional<RunSummary> recovered;
                try {
                    exportRunRecord(*db, dir);
                    recovered = recoveredSummary(*db, *run);
                    // A reader never writes into the run it reads: the summary a killed run
                    // lacks goes with the exports to another folder; readers of the run
                    // (RunRecord, open_run, the app) derive the same one from its record.
                    if (recovered && !sameFolder(dir, *run))
                        writeFileAtomically(dir + "/summary.json",
                                            toJson(*recovered).dump(2) + "\n");
                } catch (const RecordError& e) {
                    // The record could not be read (damaged: bad input) or a file not written.
                    if (std::string(e.what()).rfind(path + ":", 0) == 0)
                        throw std::invalid_argument(e.what());
                    std::fprintf(stderr, "precision-lab-cli: %s\n", e.what());
                    return kExitRecordFailed;
                }
                std::printf("exported %lld steps and %lld events from %s to %s\n",
                            static_cast<long long>(steps), static_cast<long long>(events),
                            path.c_str(), dir.c_str());
                if (recovered)
                    std::printf(
                        "the run ended without its summary (%s)%s\n", recovered->stopReason.c_str(),
                        sameFolder(dir, *run) ? "; the run's own files are left as it wrote them"
                                              : "; the exports' summary.json says so");
                return 0;
            }};
}

} // namespace plab::cli
