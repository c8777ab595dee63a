#!/usr/bin/env bash
# Benchmark, not a test: what precision_lab.torch.watch costs the PyTorch MLP and GPT peers (every 10th
# step and every step, interleaved rounds in one run), the hand-written peer watcher for scale,
# and precision_lab.quantize against the CLI's bench, torch's casts and a numpy FP8 emulation.
# Needs a built build/default (or $BUILD) with the Python module, Debian's python3-torch and
# dataset-fashion-mnist. ROUNDS, EPOCHS, GPT_STEPS, QUANT_N: see tests/bench/watch_overhead.py. CPUS
# (e.g. CPUS=0,1) pins the run with taskset.
set -euo pipefail
cd "$(dirname "$0")/../.."
name=watch_overhead
source tests/bench/python_bench_setup.sh
PLAB_PYTHON_PATH=$build/python PLAB_CLI=$build/app/precision-lab-cli \
  PEERS=${PEERS:-../shared/peers} "${pin[@]}" /usr/bin/python3 tests/bench/watch_overhead.py
