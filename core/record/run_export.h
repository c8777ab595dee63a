// The run record's CSV/JSONL exports, for pandas, spreadsheets and papers: metrics.csv (a row
// per step), layers.csv (a row per statistics step, stage and role), histograms.csv (the
// non-empty log2|x| bins of each recorded histogram), blocks.csv (a row per statistics step,
// stage and role cast in blocks; from schema version 2), events.jsonl. Columns as documented in
// docs/record.md. Each file is written whole to a temporary file and renamed
// over the target, so an export is complete or leaves the previous file.
#pragma once

#include "record/run_summary.h"
#include "record/sqlite_db.h"

#include <optional>
#include <string>

namespace plab {

// The files exportRunRecord writes into a folder.
inline constexpr const char* kRunExportFiles[] = {
    "metrics.csv",     "layers.csv",     "blocks.csv",  "channels.csv",
    "diagnostics.csv", "histograms.csv", "events.jsonl"};

// layers.csv's columns; open_run's stats table has these names too (bind_run_record.cpp), one
// set everywhere.
inline constexpr const char* kLayersCsvHeader =
    "step,stage,stage_name,role,format,total,zero,flushed,subnormal,normal,overflow,nan,amax,"
    "flushed_share,updates,lost_updates,grad_scale,tensor_scale,blocks,saturated_blocks,mse,"
    "sqnr_db,norm_rel_error,scaling";

// Throws RecordError ("PATH: is not a run record (no table steps)") unless db has the record's
// tables and a schema version this build reads; returns that version.
int checkRunRecord(SqliteDb& db);
// From an open record database (the writer's, at the end of a run).
void exportRunRecord(SqliteDb& db, const std::string& outDir);
// From DIR/run.sqlite (a killed run's included: its write-ahead log is read too). Throws
// RecordError naming the file when there is no readable record.
void exportRunRecord(const std::string& runDir, const std::string& outDir);

// The summary of a run that ended without writing one (killed, crashed, its disk full: its
// summary still says "running" and no process holds its folder's lock), derived from its record:
// the steps the database holds, the last losses, "finished": false and a stop reason saying so.
// None for a run that ended properly (or whose summary.json says how it ended: a full disk can
// refuse the database's row yet take the small file) or is still running. Reads only: no reader
// writes into the run it reads.
std::optional<RunSummary> recoveredSummary(SqliteDb& db, const std::string& runDir);

} // namespace plab
