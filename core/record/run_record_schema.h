// The run record's database: one SQLite file per run (DIR/run.sqlite), the one source of truth
// for everything a run logs. The CSV/JSONL files next to it are exports of it (run_export.h).
//
// Written in WAL mode, one transaction per training step (the step's scalars, its statistics and
// events together), so after a crash, a signal or a full disk a step is wholly there or not at
// all. `seq` orders rows as written. A Reset starts the step numbers again at 1: `attempt` counts
// the resets before a row (0 for a run never reset), and a `reset` event marks where. Numbers:
// NULL means "not measured", the text 'nan' a NaN (sqlite_db.h).
#pragma once

namespace plab {

inline constexpr const char* kRunRecordFile = "run.sqlite";
// Version 2 added the error sums to stats and the blocks table, version 3 the channels table,
// version 4 the blocks' format (a watched PyTorch run judges one tensor in several block formats),
// version 5 the diagnostics table, version 6 the stats' scaling (which per-tensor scaling cast
// the row: a layer may have its own), version 7 the reported table (a PyTorch script's own
// metrics), version 8 named the stats' counts as the exports and Python do (flushed, blocks,
// saturated_blocks; they were underflow, mx_blocks, mx_saturated_blocks); this build reads 1 to 8.
inline constexpr int kRunRecordSchemaVersion = 8;
inline constexpr int kOldestReadableSchemaVersion = 1;

// The stats columns that version 8 renamed, as a record of schema `version` names them: the
// class counts (zero to nan, in QuantClass's order) and the block counts.
inline const char* statsClassColumns(int version) {
    return version >= 8 ? "zero, flushed, subnormal, normal, overflow, nan"
                        : "zero, underflow, subnormal, normal, overflow, nan";
}
inline const char* statsBlockColumns(int version) {
    return version >= 8 ? "blocks, saturated_blocks" : "mx_blocks, mx_saturated_blocks";
}

inline constexpr const char* kRunRecordSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- One row per training step. test_* are NULL unless the test set was evaluated after the step.
CREATE TABLE steps(seq INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, step INTEGER NOT NULL,
  epoch INTEGER,
  loss REAL, accuracy REAL, scale REAL, skipped INTEGER, samples_per_s REAL, lr REAL,
  test_loss REAL, test_accuracy REAL);
-- One row per statistics step, stage, tensor role and format (a trained run casts each role in
-- one format; a watched PyTorch run judges each tensor in several): the quantiser's class
-- counts, and the error sums of the cast (QuantError: err_count finite pairs, sums of x^2,
-- (q-x)^2, q^2; NULL where not measured: master weights and optimiser state).
CREATE TABLE stats(seq INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, step INTEGER NOT NULL,
  stage INTEGER NOT NULL, role TEXT NOT NULL, format TEXT NOT NULL, total INTEGER, zero INTEGER, flushed INTEGER,
  subnormal INTEGER, normal INTEGER, overflow INTEGER, nan INTEGER, amax REAL, updates INTEGER,
  lost_updates INTEGER, grad_scale REAL, tensor_scale REAL, blocks INTEGER,
  saturated_blocks INTEGER, err_count INTEGER, signal_sq REAL, error_sq REAL, output_sq REAL,
  scaling TEXT);
CREATE INDEX stats_by_step ON stats(step);
-- log2|x| histograms of the unquantised inputs (histogram_blob.h), every histograms_every-th
-- statistics step.
CREATE TABLE histograms(seq INTEGER PRIMARY KEY, attempt INTEGER NOT NULL,
  step INTEGER NOT NULL, stage INTEGER NOT NULL, role TEXT NOT NULL, bins BLOB NOT NULL);
CREATE INDEX histograms_by_step ON histograms(step);
-- Block-scaled casts (numerics/block_stats.h), one row per statistics step, stage, role and
-- block format that the role was cast (or, in a watched run, judged) in. The histograms (histogram_blob.h: decoded block scales in the log2 bin
-- layout; per-block dynamic range, 4 bins per binade) every histograms_every-th statistics
-- step, else NULL.
CREATE TABLE blocks(seq INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, step INTEGER NOT NULL,
  stage INTEGER NOT NULL, role TEXT NOT NULL, blocks INTEGER, zero_blocks INTEGER,
  flushed_blocks INTEGER, saturated_blocks INTEGER, flushed_in_live INTEGER,
  live_elements INTEGER, scale_bins BLOB, range_bins BLOB, format TEXT);
CREATE INDEX blocks_by_step ON blocks(step);
-- Transformer stages (the GPT): per statistics step and stage, the largest |x| of each channel of
-- the stage's input (the LayerNorm output its first product reads): how many channels, the
-- largest and the median channel amax, and the share of channels above 6x the median (outlier
-- channels, LLM.int8's outlier features).
CREATE TABLE channels(seq INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, step INTEGER NOT NULL,
  stage INTEGER NOT NULL, channels INTEGER, amax_max REAL, amax_median REAL,
  outlier_share REAL);
CREATE INDEX channels_by_step ON channels(step);
-- Diagnostics of the captured tensors (stats/tensor_diagnostics.h), per statistics step, stage
-- and role: the kurtosis of the activations (format ''), and for each block format it was judged or
-- cast in, the spread of its block scales (standard deviation of log2 of the decoded scales, NULL
-- with fewer than two scaled blocks) and the live blocks whose scale underflowed to zero.
CREATE TABLE diagnostics(seq INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, step INTEGER NOT NULL,
  stage INTEGER NOT NULL, role TEXT NOT NULL, format TEXT NOT NULL, kurtosis REAL,
  scale_log2_std REAL, live_blocks INTEGER, zero_scale_blocks INTEGER);
CREATE INDEX diagnostics_by_step ON diagnostics(step);
-- What happened: start, edits (change holds the config patch, as JSON, that the edit applied),
-- scale changes, skips, divergence, reset, end.
CREATE TABLE events(seq INTEGER PRIMARY KEY, step INTEGER NOT NULL, type TEXT NOT NULL,
  message TEXT NOT NULL, change TEXT);
CREATE TABLE summary(id INTEGER PRIMARY KEY CHECK (id = 1), json TEXT NOT NULL);
-- A PyTorch script's own metrics (step(metrics={"val_loss": ...})): a row per step and name.
-- Only new records of PyTorch runs hold rows (never continued, so no attempt is trimmed).
CREATE TABLE reported(seq INTEGER PRIMARY KEY, attempt INTEGER NOT NULL, step INTEGER NOT NULL,
  name TEXT NOT NULL, value REAL);
)sql";

} // namespace plab
