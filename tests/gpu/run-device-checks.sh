#!/usr/bin/env bash
# The GPU checks in one prepared script, for a bare GPU machine with nvcc, CMake and ninja but no
# Qt and no package registry. On the machine that sends the work, first:
#   tests/gpu/bundle-deps.sh        # header-only deps into tests/gpu/deps (git-ignored)
# then on the GPU machine, from the repository root:
#   tests/gpu/run-device-checks.sh [--sm90] [--stand-in-cpu] [build-dir]
# tests/gpu/deps is ignored by git, so it reaches the GPU machine only when the run carries it
# (device tool: carry ["tests/gpu/deps"]). --sm90 builds for the H100/H200 only (minutes saved).
#
# Stages, each step logged on its own and listed with its status in the summary, whatever fails:
#   preflight  deps, nvcc, cmake, ninja
#   build      core, CUDA backend, CLI, GPU tests
#   smoke      devices; quantise parity on 1M elements; 20 training steps of the MLP and of the
#              GPT on the GPU
#   tests      the `gpu` CTest label (quantiser and training-engine parity, replays, cuBLAS and
#              own GEMM)
#   bench      quantise vs device copy; training: steady-state steps (`bench train`) and
#              end-to-end runs with the run log (`train`), GPU against the CPU engine
# Logs and the summary go to $OUT when it is set (the device tool brings that folder back even
# when a run is cut short), else to <build-dir>/logs.
#
# Nothing passes quietly on a GPU machine: a GPU test that skips (exit 77), the own GEMM kernel
# standing in for cuBLAS, or a run that fell back to the CPU is a failure with its reason. Every
# step runs under its own time limit, and the whole script under a deadline
# (PLAB_DEVICE_CHECKS_DEADLINE seconds, default 570: the device tool cuts a command at 600; 1500
# in the stand-in), so a hang costs one step and the summary is still written. Run folders live in <build-dir>/runs,
# cleared at the start: a second try on a machine still held (build kept) passes too.
#
# Without a usable GPU the script says so after the smoke stage's device listing and stops (the
# dry run: tests/gpu/dry-run.sh). --stand-in-cpu (never the default) goes on instead with the CPU
# engine in the GPU's place and small sizes, so every stage's logic (folders, figures, ratios,
# checks) runs end to end on a machine without a GPU; the GPU tests are then expected to skip.
set -uo pipefail # not -e: every stage runs and reports; the exit status comes from the summary
cd "$(dirname "$0")/../.."

archs=""
standIn=0
build=""
for arg in "$@"; do
  case $arg in
  --sm90) archs=90 ;;
  --stand-in-cpu) standIn=1 ;;
  -*)
    echo "run-device-checks: unknown option $arg (expected --sm90, --stand-in-cpu)" >&2
    exit 2
    ;;
  *) build=$arg ;;
  esac
done
build=${build:-build/gpu}
archs=${archs:-${PLAB_CUDA_ARCHS:-}}
deps=$PWD/tests/gpu/deps
logs=${OUT:-$build/logs}
runs=$build/runs
# The stand-in builds on the machine at hand (2 cores: about 4 minutes, more when it is busy).
buildLimit=420
[[ $standIn -eq 1 ]] && buildLimit=1200
deadline=${PLAB_DEVICE_CHECKS_DEADLINE:-$([[ $standIn -eq 1 ]] && echo 1500 || echo 570)}
rm -rf "$runs"
mkdir -p "$build" "$logs" "$runs" ||
  { echo "run-device-checks: cannot create $build, $logs or $runs" >&2; exit 1; }
summary=$logs/summary.txt
: >"$summary"
start=$(date +%s)

elapsed() { echo $(($(date +%s) - start)); }
# Status lines go to stderr: the bench helpers below are called inside $(...), whose stdout is
# the figure alone.
log() { echo "[device-checks $(elapsed)s] $*" >&2; }
# One line per step in the summary, written as it ends, so a cut-short run still reports; the
# file is the count of failures too (steps also run in subshells).
record() { # record STAGE STEP STATUS [detail]
  printf '%-4s %-9s %5ss  %s%s\n' "$3" "$1" "$(elapsed)" "$2" "${4:+: $4}" | tee -a "$summary" >&2
}
failures() { grep -c '^FAIL ' "$summary"; }
isNumber() { [[ ${1:-} =~ ^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }
finish() {
  local failed
  failed=$(failures)
  {
    echo
    echo "SUMMARY ($(elapsed) s, logs in $logs)"
    cat "$summary"
    if [[ $failed -eq 0 ]]; then echo "all steps passed"; else echo "$failed step(s) failed"; fi
  } >&2
  [[ $failed -eq 0 ]]
  exit
}
trap 'record script interrupted FAIL "a signal stopped the script"; finish' INT TERM

# step STAGE NAME LOGFILE LIMIT COMMAND...: runs the command under LIMIT seconds (less when the
# deadline is nearer) with stdout and stderr appended to the stage's log under a header, and in
# $stepOut on their own; records its status and returns its exit code.
stepOut=$logs/.step.out
step() {
  local stage=$1 name=$2 file=$3 limit=$4
  shift 4
  local left=$((deadline - $(elapsed) - 10))
  if [[ $left -lt 5 ]]; then
    record "$stage" "$name" FAIL "not started: the script's deadline of ${deadline}s is reached"
    return 124
  fi
  [[ $limit -le $left ]] || limit=$left
  {
    echo
    echo "=== $name ($(date +%H:%M:%S), limit ${limit}s): $*"
  } >>"$file"
  timeout --kill-after=5 "$limit" "$@" >"$stepOut" 2>&1
  local rc=$?
  cat "$stepOut" >>"$file"
  if [[ $rc -eq 0 ]]; then
    record "$stage" "$name" ok
  elif [[ $rc -eq 77 && ${skipAllowed:-0} -eq 1 ]]; then
    record "$stage" "$name" skip "stand-in: $(grep -m1 -oE 'SKIP:.*' "$stepOut")"
  elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
    record "$stage" "$name" FAIL "timed out after ${limit}s, see $(basename "$file")"
  else
    record "$stage" "$name" FAIL "exit $rc, see $(basename "$file")"
  fi
  return $rc
}
# onEngine STAGE NAME [DEVICE]: the step just run worked on the engine asked for (DEVICE, else
# $dev), not the CPU after a fallback: no fallback notice, and `bench train` names the engine.
onEngine() {
  local device=${3:-$dev} line
  line=$(grep -m1 -E 'training on the CPU|using the CPU|trains on the CPU' "$stepOut")
  if [[ -z $line ]] && grep -q '^bench train:' "$stepOut" &&
    ! grep -q "^bench train:.*, on $device" "$stepOut"; then
    line=$(grep -m1 '^bench train:' "$stepOut")
  fi
  if [[ -n $line ]]; then
    record "$1" "$2: on $device" FAIL "fell back: $line"
    return 1
  fi
  return 0
}

# --- preflight -----------------------------------------------------------------------------
pre=$logs/preflight.log
: >"$pre"
log "preflight"
if [[ -d "$deps/eigen3" && -d "$deps/nlohmann" && -d "$deps/CLI" ]]; then
  # The device tool carries at most 64 MiB in all: say what this folder takes of it.
  record preflight "header deps (tests/gpu/deps)" ok "$(du -sh "$deps" | cut -f1)"
else
  record preflight "header deps (tests/gpu/deps)" FAIL \
    "missing: run tests/gpu/bundle-deps.sh here and carry tests/gpu/deps (git-ignored)"
  finish
fi
export PATH=$PATH:/usr/local/cuda/bin
for tool in nvcc cmake ninja timeout; do
  if command -v "$tool" >/dev/null; then
    record preflight "$tool" ok "$("$tool" --version 2>&1 | grep -m1 -Eo '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -1)"
  else
    record preflight "$tool" FAIL "not found"
  fi
done
[[ $(failures) -eq 0 ]] || finish
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$pre" 2>&1 ||
  echo "nvidia-smi not available" >>"$pre"

# --- build ---------------------------------------------------------------------------------
bl=$logs/build.log
: >"$bl"
log "configure and build (core, CUDA backend, CLI, GPU tests${archs:+, sm_$archs only})"
step build configure "$bl" 120 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPLAB_BUILD_GUI=OFF -DPLAB_BUILD_TESTS=OFF -DPLAB_BUILD_GPU_TESTS=ON \
  -DPLAB_BUILD_PACKAGING=OFF -DPLAB_HEADER_DEPS_DIR="$deps" \
  ${archs:+-DCMAKE_CUDA_ARCHITECTURES=$archs} || finish
grep -q 'libplab_cuda' "$build/build.ninja" ||
  record build "CUDA backend configured" FAIL "CMake did not enable CUDA (see build.log)"
[[ "${PLAB_DEVICE_CHECKS_UNTIL:-}" == configure ]] && finish # tests/gpu/dry-run.sh --configure-only
step build "build" "$bl" "$buildLimit" cmake --build "$build" --target precision-lab-cli test_gpu_quantize \
  test_gpu_engine || finish
cli=$build/app/precision-lab-cli

# --- smoke ---------------------------------------------------------------------------------
sm=$logs/smoke.log
: >"$sm"
log "smoke: devices, quantise parity on 1M elements, 20 training steps"
step smoke "devices" "$sm" 30 "$cli" devices
dev=cuda # the engine the GPU's steps ask for; gpu: how the summary names it
gpu=gpu
if ! grep -q '^cuda  usable' "$sm"; then
  if [[ $standIn -eq 0 ]]; then
    record smoke "usable GPU" none "built everything; ran nothing on a GPU (devices above)"
    grep -A3 '^cuda' "$sm" | head -8 >&2
    finish
  fi
  dev=cpu
  gpu="stand-in cpu"
  record smoke "usable GPU" none "stand-in: the CPU engine takes the GPU's place below"
fi
# Sizes: the GPU's, or the stand-in's (small: the logic is what it checks, on 2 cores).
if [[ $dev == cuda ]]; then
  export PLAB_REQUIRE_GPU=1 # a GPU test that skips here hides a fault (tests/gpu/require_gpu.h)
  qsize=67108864 qrepeat=20 tsize=16384 tbatch=1024 tsteps=300 twarm=20 gsteps=100 gwarm=10
else
  qsize=1048576 qrepeat=2 tsize=4096 tbatch=256 tsteps=30 twarm=3 gsteps=6 gwarm=2
fi
# A GPU test's exit 77 (skip): a failure where a GPU is usable (step's default), expected in the
# stand-in.
[[ $dev == cpu ]] && skipAllowed=1
step smoke "quantise parity, 1M elements" "$sm" 60 "$build/tests/gpu/test_gpu_quantize" 1048576
step smoke "train 20 steps on the $gpu (fp8-e4m3)" "$sm" 60 "$cli" train --device "$dev" \
  --preset fp8-e4m3 --data synthetic --steps 20 --out "$runs/smoke-mlp" &&
  onEngine smoke "train 20 steps (fp8-e4m3)"
step smoke "train 20 steps of the GPT on the $gpu (fp8-hybrid-delayed)" "$sm" 60 "$cli" train \
  --device "$dev" --preset fp8-hybrid-delayed --set model.type=gpt --steps 20 \
  --out "$runs/smoke-gpt" && onEngine smoke "train 20 steps of the GPT"

# --- tests ---------------------------------------------------------------------------------
tl=$logs/tests.log
: >"$tl"
log "gpu tests"
(cd "$build" && ctest -N -L gpu) >>"$tl" 2>&1
for t in test_gpu_quantize test_gpu_engine test_gpu_engine_own_gemm; do
  # ctest reports a skip as passed; run through it for its environment, then read the output.
  step tests "$t" "$tl" 200 ctest --test-dir "$build" -R "^$t\$" --output-on-failure --verbose
  if grep -qE '\*\*\*Skipped|^([0-9]+: )?SKIP:' "$stepOut"; then
    if [[ $dev == cuda ]]; then
      record tests "$t: ran" FAIL "skipped on a GPU machine: $(grep -m1 -oE 'SKIP:.*' "$stepOut")"
    else
      record tests "$t: ran" skip "stand-in: no GPU"
    fi
  fi
done

# --- bench ---------------------------------------------------------------------------------
bb=$logs/bench.log
: >"$bb"
log "benchmark: quantise with counting vs device copy"
step bench "quantize, $qsize elements, with statistics" "$bb" 90 "$cli" bench quantize \
  --device "$dev" --size "$qsize" --repeat "$qrepeat" \
  --formats fp16,bf16,fp8-e4m3,fp8-e5m2,fp6-e3m2,fp4-e2m1 && onEngine bench "quantize"
step bench "quantize, $qsize elements, values only" "$bb" 60 "$cli" bench quantize \
  --device "$dev" --size "$qsize" --repeat "$qrepeat" --no-stats --formats fp8-e4m3 &&
  onEngine bench "quantize, values only"

# figure STAGE NAME VALUE: prints VALUE when it is a number, else records the step as failed.
figure() {
  if isNumber "$3"; then
    echo "$3"
  else
    record "$1" "$2: a figure" FAIL "no number in its output (got '${3:-nothing}')"
  fi
}
log "benchmark: training, 784-256-256-10 MLP at batch $tbatch on the built-in data"
data=(--data synthetic --set data.train_size=$tsize --set data.test_size=1024
  --set train.batch_size=$tbatch)
# steady NAME DEVICE ARGS...: `bench train` (steps only, after set-up and warm-up); prints
# samples/s and nothing else on stdout.
steady() {
  local name=$1 device=$2
  shift 2
  step bench "steady: $name" "$bb" 120 "$cli" bench train "${data[@]}" --steps "$tsteps" \
    --warmup "$twarm" --device "$device" "$@" || return 0
  onEngine bench "steady: $name" "$device" || return 0
  figure bench "steady: $name" "$(sed -n 's/^steady_samples_per_second: //p' "$stepOut" | tail -1)"
}
# endToEnd NAME RUN ARGS...: a whole `train` run with its run log in its own folder; the
# summary's samples/s.
endToEnd() {
  local name=$1 run=$runs/$2
  shift 2
  step bench "end-to-end: $name" "$bb" 120 "$cli" train "${data[@]}" --steps "$tsteps" \
    --device "$dev" --out "$run" "$@" || return 0
  onEngine bench "end-to-end: $name" || return 0
  figure bench "end-to-end: $name" \
    "$(sed -n 's/.*"samples_per_second": \([0-9.e+]*\).*/\1/p' "$run/summary.json")"
}
# ratio LABEL NUMERATOR DENOMINATOR GOAL: one line with the ratio, or a failure naming what is
# missing (a figure that failed above).
ratio() {
  if isNumber "$2" && isNumber "$3" && awk -v d="$3" 'BEGIN { exit !(d > 0) }'; then
    awk -v n="$2" -v d="$3" -v l="$1" -v g="$4" 'BEGIN { printf "%s: %.2fx (%s)\n", l, n / d, g }' |
      tee -a "$bb" "$summary" >&2
  else
    record bench "$1" FAIL "a figure is missing (${2:-none} / ${3:-none})"
  fi
}
cpu_fp32=$(steady "cpu fp32" cpu --threads 0 --preset fp32 --set train.stats_every=100000)
gpu_fp32=$(steady "$gpu fp32" "$dev" --preset fp32 --set train.stats_every=100000)
gpu_fp8=$(steady "$gpu fp8-e4m3, statistics every step" "$dev" --preset fp8-e4m3 \
  --set train.stats_every=1)
gpu_fp8_nostats=$(steady "$gpu fp8-e4m3, no statistics" "$dev" --preset fp8-e4m3 \
  --set train.stats_every=100000)
e2e_fp32=$(endToEnd "$gpu fp32" e2e-fp32 --preset fp32 --set train.stats_every=100000)
e2e_fp8=$(endToEnd "$gpu fp8-e4m3, statistics every step" e2e-fp8 --preset fp8-e4m3 \
  --set train.stats_every=1)
{
  echo "training samples/s, steady state: cpu fp32 ${cpu_fp32:-?}, $gpu fp32 ${gpu_fp32:-?}," \
    "$gpu fp8-e4m3 statistics every step ${gpu_fp8:-?}, $gpu fp8-e4m3 no statistics ${gpu_fp8_nostats:-?}"
  echo "training samples/s, end to end with the run log: $gpu fp32 ${e2e_fp32:-?}," \
    "$gpu fp8-e4m3 statistics every step ${e2e_fp8:-?}"
} | tee -a "$bb" "$summary" >&2
ratio "$gpu/cpu samples/s, fp32, steady" "$gpu_fp32" "$cpu_fp32" "goal >= 10x on a GPU"
ratio "fp32 / fp8 with statistics every step, samples/s, steady" "$gpu_fp32" "$gpu_fp8" \
  "step-time ratio; goal <= 1.5x"

log "benchmark: training the tiny GPT (batch 32, context 64) on the built-in text"
# gptSteady NAME DEVICE ARGS...: `bench train` of the GPT; prints samples (windows of 64 bytes)
# per second.
gptSteady() {
  local name=$1 device=$2
  shift 2
  step bench "steady: gpt $name" "$bb" 120 "$cli" bench train --set model.type=gpt \
    --steps "$gsteps" --warmup "$gwarm" --device "$device" "$@" || return 0
  onEngine bench "steady: gpt $name" "$device" || return 0
  figure bench "steady: gpt $name" \
    "$(sed -n 's/^steady_samples_per_second: //p' "$stepOut" | tail -1)"
}
gpt_cpu=$(gptSteady "cpu fp32" cpu --threads 0 --preset fp32 --set train.stats_every=100000)
gpt_gpu=$(gptSteady "$gpu fp32" "$dev" --preset fp32 --set train.stats_every=100000)
gpt_fp8=$(gptSteady "$gpu fp8-hybrid-delayed, statistics every step" "$dev" \
  --preset fp8-hybrid-delayed --set train.stats_every=1)
echo "gpt samples/s, steady: cpu fp32 ${gpt_cpu:-?}, $gpu fp32 ${gpt_gpu:-?}," \
  "$gpu fp8-hybrid-delayed statistics every step ${gpt_fp8:-?}" | tee -a "$bb" "$summary" >&2
ratio "gpt $gpu/cpu samples/s, fp32, steady" "$gpt_gpu" "$gpt_cpu" "goal >= 10x on a GPU"

log "parity lines"
# (ctest --verbose prefixes each line with the test's number)
grep -hE '^([0-9]+: )?(device:|engine:|FAIL|replay |training .*relative)|combinations bit-identical|checks, [0-9]+ failed' \
  "$sm" "$tl" | head -60 >&2
finish
