#!/usr/bin/env bash
# The GPU checks in one prepared script, for a machine with nvcc, CMake and ninja but no Qt and
# no package registry: builds the core, the CUDA backend and the CLI against the header-only
# dependencies in tests/gpu/deps (tests/gpu/bundle-deps.sh makes it), lists the devices, runs the
# `gpu` tests (quantiser and training-engine parity) and the GPU benchmarks (quantise against
# copy bandwidth; MLP training on the GPU against the CPU engine; FP8 with statistics every step
# against FP32), and prints a short summary. Without a usable GPU it says so
# and stops after the build and the device listing (the dry run).
#   tests/gpu/run-device-checks.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/gpu}
deps=$PWD/tests/gpu/deps
start=$(date +%s)
log() { echo "[device-checks $(( $(date +%s) - start ))s] $*"; }

[[ -d "$deps/eigen3" ]] || { echo "run-device-checks: $deps missing; run tests/gpu/bundle-deps.sh first" >&2; exit 2; }
command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
  { echo "run-device-checks: nvcc not found; nothing to check" >&2; exit 2; }

log "configure and build (core, plab_cuda, CLI, GPU tests)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLAB_BUILD_GUI=OFF \
  -DPLAB_BUILD_TESTS=OFF -DPLAB_BUILD_GPU_TESTS=ON -DPLAB_BUILD_PACKAGING=OFF \
  -DPLAB_HEADER_DEPS_DIR="$deps" ${PLAB_CUDA_ARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$PLAB_CUDA_ARCHS} \
  >"$build.configure.log" 2>&1 || { tail -30 "$build.configure.log"; exit 1; }
cmake --build "$build" --target precision-lab-cli test_gpu_quantize test_gpu_engine \
  >"$build.build.log" 2>&1 ||
  { tail -40 "$build.build.log"; exit 1; }
cli=$build/app/precision-lab-cli

log "devices"
"$cli" devices | tee "$build.devices.txt"
if ! grep -q '^cuda  usable' "$build.devices.txt"; then
  log "SUMMARY: no usable GPU on this machine (see above); built the CUDA backend and the CLI," \
      "ran nothing on a GPU. Run this script on a GPU machine for the parity tests and benchmarks."
  exit 0
fi

log "gpu tests"
tests_ok=yes
(cd "$build" && ctest -L gpu --verbose) | tee "$build.tests.txt" || tests_ok=no

log "benchmark: quantise with counting vs device copy"
"$cli" bench quantize --device cuda --size 67108864 --repeat 20 \
  --formats fp16,bf16,fp8-e4m3,fp8-e5m2,fp6-e3m2,fp4-e2m1 | tee "$build.bench.txt"
"$cli" bench quantize --device cuda --size 67108864 --repeat 20 --no-stats \
  --formats fp8-e4m3 | tee -a "$build.bench.txt"

log "benchmark: training, 784-256-256-10 MLP at batch 1024 on the built-in data"
# samples/s of a run (the summary's moving average of step rates, evaluation excluded)
rate() {
  "$cli" train --data synthetic --set data.train_size=16384 --set data.test_size=1024 \
    --set train.batch_size=1024 --steps 300 --out "$build/bench-run" "$@" 2>/dev/null |
    sed -n 's/.*"samples_per_second": \([0-9.e+]*\).*/\1/p'
}
cpu_fp32=$(rate --device cpu --threads 0 --preset fp32 --set train.stats_every=100000)
gpu_fp32=$(rate --device cuda --preset fp32 --set train.stats_every=100000)
gpu_fp8=$(rate --device cuda --preset fp8-e4m3 --set train.stats_every=1)
gpu_fp8_nostats=$(rate --device cuda --preset fp8-e4m3 --set train.stats_every=100000)
{
  echo "training samples/s: cpu fp32 $cpu_fp32, gpu fp32 $gpu_fp32," \
       "gpu fp8-e4m3 stats every step $gpu_fp8, gpu fp8-e4m3 no stats $gpu_fp8_nostats"
  awk -v c="$cpu_fp32" -v g="$gpu_fp32" -v f="$gpu_fp8" 'BEGIN {
    if (c > 0 && g > 0) printf "GPU/CPU samples/s, fp32: %.1fx (goal >= 10x)\n", g / c;
    if (f > 0 && g > 0) printf "fp8 + statistics every step / fp32 step time: %.2fx (goal <= 1.5x)\n", g / f }'
} | tee "$build.train-bench.txt"

log "SUMMARY"
# (ctest --verbose prefixes each line with the test's number)
grep -E '^([0-9]+: )?(device:|engine:|FAIL|training .*relative)|combinations bit-identical|checks, [0-9]+ failed' \
  "$build.tests.txt" | head -60 || true
awk 'NR > 2 && $1 != "format" {print "  " $0}' "$build.bench.txt" | head -30
cat "$build.train-bench.txt"
echo "gpu tests passed: $tests_ok; total $(( $(date +%s) - start )) s"
[[ $tests_ok == yes ]]
