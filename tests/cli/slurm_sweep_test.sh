#!/usr/bin/env bash
# `sweep --backend slurm` against a real single-node Slurm (local_slurm.sh): an array job with
# one task per run, a task that fails (its data folder does not exist yet), a resubmission that
# reruns only the failed tasks once the folder exists, and a held job the local backend refuses
# to race and a second invocation waits for.
# With `fashion`: the issue's acceptance sweep instead, 7 presets x 5 seeds of one Fashion-MNIST
# epoch through Slurm (35 runs, about a minute on 2 cores), whose table must call every
# mixed-precision preset indistinguishable from FP32 in test accuracy.
# Usage: slurm_sweep_test.sh PATH/TO/precision-lab-cli [fashion]
# Exit 77 (CTest: skipped) when Slurm, munge or the dataset is not installed.
set -uo pipefail
cli=$1
mode=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
for program in munged slurmctld slurmd sbatch squeue sinfo scontrol; do
  command -v "$program" >/dev/null || { echo "SKIP: $program not found (install slurm-wlm and munge)"; exit 77; }
done
fashion=/usr/share/datasets/fashion-mnist
[[ -d $fashion ]] || { echo "SKIP: $fashion not found (install dataset-fashion-mnist)"; exit 77; }
# shellcheck source=local_slurm.sh
source "$here/local_slurm.sh"

tmp=$(mktemp -d /tmp/plab-slurm.XXXXXX)
cleanup() { local_slurm_stop "$tmp/cluster"; rm -rf "$tmp"; }
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  tail -n 5 "$tmp"/sweep/slurm/*.log "$tmp/cluster/slurmctld.log" 2>/dev/null >&2
  exit 1
}
local_slurm_start "$tmp/cluster" || fail "the private Slurm did not start"

if [[ $mode == fashion ]]; then
  presets=fp32,fp16-amp,fp16-zhao,bf16,fp8-e5m2-mellempudi,fp8-hybrid-delayed,mxfp8-e4m3
  # Without statistics steps: the table compares test accuracies, which counting does not
  # change (test_training's statisticsLeaveTheRunAlone: the same master weights bit for bit),
  # and a run then costs 1.5 s instead of 2.7 s.
  "$cli" sweep --backend slurm --poll 1 --presets $presets --seeds 5 --epochs 1 --data "$fashion" \
    --set train.stats_every=1000000 --out "$tmp/fashion" >"$tmp/fashion.out" 2>"$tmp/fashion.err" ||
    fail "fashion sweep: $(tail -n 5 "$tmp/fashion.err")"
  cat "$tmp/fashion.out"
  for preset in ${presets//,/ }; do
    row=$(grep "^| $preset |" "$tmp/fashion.out") || fail "no row for $preset"
    [[ $row == "| $preset | 5 |"* ]] || fail "$preset: not 5 runs: $row"
    [[ $preset == fp32 ]] && continue
    [[ $row == *"| indistinguishable at n = 5 |"* ]] || fail "$preset: not indistinguishable: $row"
  done
  echo "slurm fashion sweep: every preset indistinguishable from fp32 at n = 5"
  exit 0
fi

tiny=(--set data.train_size=600 --set data.test_size=100 --set model.hidden=[16]
      --set train.batch_size=32 --poll 0.3)
out=$tmp/sweep

# 2 presets x 2 data sources x 2 seeds: the runs on $tmp/later fail (no such folder yet).
"$cli" sweep --backend slurm --presets fp32,fp16-amp --seeds 2 --steps 5 \
  --grid "data.source=synthetic,$tmp/later" --out "$out" "${tiny[@]}" >"$tmp/first.out" 2>"$tmp/first.err"
status=$?
[[ $status == 3 ]] || fail "first sweep: exit $status, expected 3 (failed runs): $(cat "$tmp/first.err")"
grep -q "submitted slurm job [0-9]*: 8 run(s)" "$tmp/first.err" || fail "first sweep: $(cat "$tmp/first.err")"
grep -q "^#SBATCH --array=0-7$" "$out/slurm/job-1.sbatch" || fail "job-1.sbatch: no 8-task array"
[[ $(wc -l <"$out/slurm/job-1.tasks") == 8 ]] || fail "job-1.tasks: expected 8 runs"
[[ $(ls "$out"/*/seed-*.failed | wc -l) == 4 ]] || fail "expected 4 .failed markers: $(ls "$out"/*)"
grep -q '"backend": "slurm"' "$out/sweep.json" || fail "sweep.json does not record the backend"
# The synthetic points ran both seeds; the others none.
grep -q '^fp32_data.source=synthetic,fp32,synthetic,2,' "$out/sweep.csv" || fail "sweep.csv: $(cat "$out/sweep.csv")"
grep -q ',0,' <(grep later "$out/sweep.csv") || fail "sweep.csv counts failed runs"

# The folder exists now: the resubmission (backend and options from sweep.json) reruns only the
# 4 failed runs, in a job of their own.
ln -s "$fashion" "$tmp/later"
"$cli" sweep --file "$out/sweep.json" --out "$out" --rerun-failed >"$tmp/second.out" 2>"$tmp/second.err"
status=$?
[[ $status == 0 ]] || fail "resubmission: exit $status: $(cat "$tmp/second.err")"
grep -q "submitted slurm job [0-9]*: 4 run(s), 4 found done or failed earlier" "$tmp/second.err" ||
  fail "resubmission: $(cat "$tmp/second.err")"
[[ $(grep -c later "$out/slurm/job-2.tasks") == 4 && $(wc -l <"$out/slurm/job-2.tasks") == 4 ]] ||
  fail "job-2.tasks: expected the 4 failed runs only: $(cat "$out/slurm/job-2.tasks")"
[[ $(ls "$out"/*/seed-*.failed 2>/dev/null | wc -l) == 0 ]] || fail ".failed markers left"
[[ $(grep -c ',2,' "$out/sweep.csv") == 4 ]] || fail "sweep.csv: not 2 runs per point: $(cat "$out/sweep.csv")"
grep -q "indistinguishable at n = 2\| by " "$out/sweep.md" || fail "sweep.md has no verdicts"

# A held job: the local backend refuses to train the same folders at once; --no-wait returned;
# the same command again waits for the job (released) and collects the table.
held=$tmp/held
"$cli" sweep --backend slurm --no-wait --sbatch-arg=--hold --presets fp32 --seeds 2 --steps 5 \
  --out "$held" "${tiny[@]}" >/dev/null 2>"$tmp/held.err" || fail "--no-wait: $(cat "$tmp/held.err")"
job=$(sed -n 's/.*submitted slurm job \([0-9]*\).*/\1/p' "$tmp/held.err")
[[ -n $job ]] || fail "--no-wait printed no job id: $(cat "$tmp/held.err")"
"$cli" sweep --file "$held/sweep.json" --out "$held" --backend local >/dev/null 2>"$tmp/local.err" &&
  fail "the local backend ran while slurm job $job holds the folder"
grep -q "slurm job $job .* still queued or running" "$tmp/local.err" || fail "local: $(cat "$tmp/local.err")"
scontrol release "$job"
"$cli" sweep --file "$held/sweep.json" --out "$held" >/dev/null 2>"$tmp/attach.err" ||
  fail "attach: $(cat "$tmp/attach.err")"
grep -q "slurm job $job of this sweep is still running: waiting" "$tmp/attach.err" || fail "attach: $(cat "$tmp/attach.err")"
grep -q '^fp32,fp32,2,' "$held/sweep.csv" || fail "held sweep.csv: $(cat "$held/sweep.csv")"

# A sweep of a user's script through Slurm: each task runs the command from sweep.json, never
# from shell text; a hostile argument reaches the script as one argv entry.
python_dir=$(cd "$(dirname "$cli")/../python" 2>/dev/null && pwd)
if [[ -n $python_dir && -f $python_dir/precision_lab/torch.py ]] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  script=$(cd "$here/../python" && pwd)/sweep_script.py
  hostile=$'it\'s "$(touch '"$tmp"'/pwned)"\n`id`; rm -rf /'
  PYTHONPATH=$python_dir "$cli" sweep --backend slurm --poll 0.3 --recipes fp32,bf16 --seeds 1 \
    --out "$tmp/script" -- /usr/bin/python3 "$script" --steps 5 --args-to "$tmp/args.json" \
    "$hostile" >"$tmp/script.out" 2>"$tmp/script.err" || fail "script sweep: $(cat "$tmp/script.err")"
  [[ ! -e $tmp/pwned ]] || fail "a script argument was run by a shell"
  ! grep -q "pwned" "$tmp/script/slurm/job-1.sbatch" || fail "the command is in the job script's text"
  /usr/bin/python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); sys.exit(a[-1] != sys.argv[2])' \
    "$tmp/args.json" "$hostile" || fail "the script got $(cat "$tmp/args.json")"
  grep -q "^| bf16 | 1 |" "$tmp/script.out" || fail "script sweep table: $(cat "$tmp/script.out")"
  echo "slurm script sweep: the command from sweep.json, its hostile argument one argv entry"
else
  echo "slurm script sweep skipped: no Python module or torch beside $cli"
fi
echo "slurm sweep: all checks passed"
