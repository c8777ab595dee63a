#!/usr/bin/env bash
# Benchmark, not a test: what precision_lab.torch.emulate costs the MLP and GPT peers' networks
# (unemulated FP32 vs emulated fp8-hybrid with statistics every step vs nvfp4, interleaved
# rounds in one run) and the hand-written FP8 emulation peer at the same casts. Needs a built
# build/default (or $BUILD) with the Python module and Debian's python3-torch. ROUNDS, STEPS,
# GPT_STEPS, THREADS: see tests/bench/emulate_overhead.py. CPUS (e.g. CPUS=0) pins the run.
set -euo pipefail
cd "$(dirname "$0")/../.."
name=emulate_overhead
source tests/bench/python_bench_setup.sh
PLAB_PYTHON_PATH=$build/python PEERS=${PEERS:-../shared/peers} "${pin[@]}" \
  /usr/bin/python3 tests/bench/emulate_overhead.py
