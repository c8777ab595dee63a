#!/usr/bin/env bash
# The GPU checks in one prepared script, for a bare GPU machine with nvcc, CMake and ninja but no
# Qt and no package registry. On the machine that sends the work, first:
#   tests/gpu/bundle-deps.sh        # header-only deps into tests/gpu/deps (git-ignored)
# then on the GPU machine, from the repository root:
#   tests/gpu/run-device-checks.sh [--sm90] [build-dir]
# tests/gpu/deps is ignored by git, so it reaches the GPU machine only when the run carries it
# (device tool: carry ["tests/gpu/deps"]). --sm90 builds for the H100/H200 only (minutes saved).
#
# Stages, each logged on its own and listed with its status in the summary, whatever fails:
#   preflight  deps, nvcc, cmake, ninja
#   build      core, CUDA backend, CLI, GPU tests
#   smoke      devices; quantise parity on 1M elements; 20 training steps of the MLP and of the
#              GPT on the GPU
#   tests      the `gpu` CTest label (quantiser and training-engine parity, cuBLAS and own GEMM)
#   bench      quantise vs device copy; training: steady-state steps (`bench train`) and
#              end-to-end runs with the run log (`train`), GPU against the CPU engine
# Logs and the summary go to $OUT when it is set (the device tool brings that folder back even
# when a run is cut short), else to <build-dir>/logs. Without a usable GPU the script says so
# after the smoke stage's device listing and stops (that is the dry run: tests/gpu/dry-run.sh).
set -uo pipefail # not -e: every stage runs and reports; the exit status comes from the summary
cd "$(dirname "$0")/../.."

archs=""
if [[ "${1:-}" == --sm90 ]]; then
  archs=90
  shift
fi
build=${1:-build/gpu}
archs=${archs:-${PLAB_CUDA_ARCHS:-}}
deps=$PWD/tests/gpu/deps
logs=${OUT:-$build/logs}
mkdir -p "$build" "$logs" || { echo "run-device-checks: cannot create $build or $logs" >&2; exit 1; }
summary=$logs/summary.txt
: >"$summary"
start=$(date +%s)

elapsed() { echo $(($(date +%s) - start)); }
log() { echo "[device-checks $(elapsed)s] $*"; }
# One line per step in the summary, written as it ends, so a cut-short run still reports; the
# file is the count of failures too (steps also run in subshells).
record() { # record STAGE STEP STATUS [detail]
  printf '%-4s %-9s %5ss  %s%s\n' "$3" "$1" "$(elapsed)" "$2" "${4:+: $4}" | tee -a "$summary"
}
failures() { grep -c '^FAIL ' "$summary"; }
# step STAGE NAME LOGFILE COMMAND...: runs the command with stdout and stderr appended to the
# stage's log under a header, records its status, returns its exit code.
step() {
  local stage=$1 name=$2 file=$3
  shift 3
  {
    echo
    echo "=== $name ($(date +%H:%M:%S)): $*"
  } >>"$file"
  "$@" >>"$file" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]]; then record "$stage" "$name" ok; else record "$stage" "$name" FAIL "exit $rc, see $(basename "$file")"; fi
  return $rc
}
finish() {
  local failed
  failed=$(failures)
  echo
  echo "SUMMARY ($(elapsed) s, logs in $logs)"
  cat "$summary"
  if [[ $failed -eq 0 ]]; then echo "all steps passed"; else echo "$failed step(s) failed"; fi
  [[ $failed -eq 0 ]]
  exit
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
for tool in nvcc cmake ninja; do
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
step build configure "$bl" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPLAB_BUILD_GUI=OFF -DPLAB_BUILD_TESTS=OFF -DPLAB_BUILD_GPU_TESTS=ON \
  -DPLAB_BUILD_PACKAGING=OFF -DPLAB_HEADER_DEPS_DIR="$deps" \
  ${archs:+-DCMAKE_CUDA_ARCHITECTURES=$archs} || finish
grep -q 'libplab_cuda' "$build/build.ninja" ||
  record build "CUDA backend configured" FAIL "CMake did not enable CUDA (see build.log)"
[[ "${PLAB_DEVICE_CHECKS_UNTIL:-}" == configure ]] && finish # tests/gpu/dry-run.sh --configure-only
step build "build" "$bl" cmake --build "$build" --target precision-lab-cli test_gpu_quantize \
  test_gpu_engine || finish
cli=$build/app/precision-lab-cli

# --- smoke ---------------------------------------------------------------------------------
sm=$logs/smoke.log
: >"$sm"
log "smoke: devices, quantise parity on 1M elements, 20 GPU training steps"
step smoke "devices" "$sm" "$cli" devices
if ! grep -q '^cuda  usable' "$sm"; then
  record smoke "usable GPU" none "built everything; ran nothing on a GPU (devices above)"
  grep -A3 '^cuda' "$sm" | head -8
  finish
fi
step smoke "quantise parity, 1M elements" "$sm" "$build/tests/gpu/test_gpu_quantize" 1048576
step smoke "train 20 steps on the GPU (fp8-e4m3)" "$sm" "$cli" train --device cuda \
  --preset fp8-e4m3 --data synthetic --steps 20 --out "$build/smoke-run"
step smoke "train 20 steps of the GPT on the GPU (fp8-hybrid-delayed)" "$sm" "$cli" train \
  --device cuda --preset fp8-hybrid-delayed --set model.type=gpt --steps 20 \
  --out "$build/smoke-gpt"
if grep -q 'training on the CPU\|using the CPU\|trains on the CPU' "$sm"; then
  record smoke "GPU engine used (no fallback)" FAIL "$(grep -m1 'the CPU' "$sm")"
fi

# --- tests ---------------------------------------------------------------------------------
tl=$logs/tests.log
: >"$tl"
log "gpu tests"
(cd "$build" && ctest -N -L gpu) >>"$tl" 2>&1
for t in test_gpu_quantize test_gpu_engine test_gpu_engine_own_gemm; do
  step tests "$t" "$tl" ctest --test-dir "$build" -R "^$t\$" --output-on-failure --verbose
done

# --- bench ---------------------------------------------------------------------------------
bb=$logs/bench.log
: >"$bb"
log "benchmark: quantise with counting vs device copy"
step bench "quantize, 64M elements, with statistics" "$bb" "$cli" bench quantize --device cuda \
  --size 67108864 --repeat 20 --formats fp16,bf16,fp8-e4m3,fp8-e5m2,fp6-e3m2,fp4-e2m1
step bench "quantize, 64M elements, values only" "$bb" "$cli" bench quantize --device cuda \
  --size 67108864 --repeat 20 --no-stats --formats fp8-e4m3

log "benchmark: training, 784-256-256-10 MLP at batch 1024 on the built-in data"
data=(--data synthetic --set data.train_size=16384 --set data.test_size=1024
  --set train.batch_size=1024)
# steady NAME ARGS...: `bench train` (steps only, after set-up and warm-up); prints samples/s.
steady() {
  local name=$1
  shift
  if step bench "steady: $name" "$bb" "$cli" bench train "${data[@]}" --steps 300 --warmup 20 "$@"; then
    tail -n 20 "$bb" | sed -n 's/^steady_samples_per_second: //p' | tail -1
  fi
}
# endToEnd NAME ARGS...: a whole `train` run with its run log; the summary's samples/s.
endToEnd() {
  local name=$1
  shift
  if step bench "end-to-end: $name" "$bb" "$cli" train "${data[@]}" --steps 300 \
    --out "$build/bench-run" "$@"; then
    sed -n 's/.*"samples_per_second": \([0-9.e+]*\).*/\1/p' "$build/bench-run/summary.json"
  fi
}
cpu_fp32=$(steady "cpu fp32" --device cpu --threads 0 --preset fp32 --set train.stats_every=100000)
gpu_fp32=$(steady "gpu fp32" --device cuda --preset fp32 --set train.stats_every=100000)
gpu_fp8=$(steady "gpu fp8-e4m3, statistics every step" --device cuda --preset fp8-e4m3 --set train.stats_every=1)
gpu_fp8_nostats=$(steady "gpu fp8-e4m3, no statistics" --device cuda --preset fp8-e4m3 --set train.stats_every=100000)
e2e_fp32=$(endToEnd "gpu fp32" --device cuda --preset fp32 --set train.stats_every=100000)
e2e_fp8=$(endToEnd "gpu fp8-e4m3, statistics every step" --device cuda --preset fp8-e4m3 --set train.stats_every=1)
{
  echo "training samples/s, steady state: cpu fp32 ${cpu_fp32:-?}, gpu fp32 ${gpu_fp32:-?}," \
    "gpu fp8-e4m3 statistics every step ${gpu_fp8:-?}, gpu fp8-e4m3 no statistics ${gpu_fp8_nostats:-?}"
  echo "training samples/s, end to end with the run log: gpu fp32 ${e2e_fp32:-?}," \
    "gpu fp8-e4m3 statistics every step ${e2e_fp8:-?}"
  awk -v c="${cpu_fp32:-0}" -v g="${gpu_fp32:-0}" -v f="${gpu_fp8:-0}" 'BEGIN {
    if (c > 0 && g > 0) printf "GPU/CPU samples/s, fp32, steady: %.1fx (goal >= 10x)\n", g / c;
    if (f > 0 && g > 0) printf "fp8 + statistics every step / fp32 step time, steady: %.2fx (goal <= 1.5x)\n", g / f }'
} | tee -a "$bb" "$summary"

log "benchmark: training the tiny GPT (batch 32, context 64) on the built-in text"
# gptSteady NAME ARGS...: `bench train` of the GPT; prints samples (windows of 64 bytes) per second.
gptSteady() {
  local name=$1
  shift
  if step bench "steady: gpt $name" "$bb" "$cli" bench train --set model.type=gpt --steps 100 \
    --warmup 10 "$@"; then
    tail -n 20 "$bb" | sed -n 's/^steady_samples_per_second: //p' | tail -1
  fi
}
gpt_cpu=$(gptSteady "cpu fp32" --device cpu --threads 0 --preset fp32 --set train.stats_every=100000)
gpt_gpu=$(gptSteady "gpu fp32" --device cuda --preset fp32 --set train.stats_every=100000)
gpt_fp8=$(gptSteady "gpu fp8-hybrid-delayed, statistics every step" --device cuda \
  --preset fp8-hybrid-delayed --set train.stats_every=1)
echo "gpt samples/s, steady: cpu fp32 ${gpt_cpu:-?}, gpu fp32 ${gpt_gpu:-?}," \
  "gpu fp8-hybrid-delayed statistics every step ${gpt_fp8:-?}" | tee -a "$bb" "$summary"

log "parity lines"
# (ctest --verbose prefixes each line with the test's number)
grep -hE '^([0-9]+: )?(device:|engine:|FAIL|training .*relative)|combinations bit-identical|checks, [0-9]+ failed' \
  "$sm" "$tl" | head -60
finish
