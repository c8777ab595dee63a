#!/usr/bin/env bash
# Benchmark, not a test: the MLP 784-256-256-10 (batch 128, SGD momentum 0.9, lr 0.05, 2 epochs)
# on Fashion-MNIST, trained by PyTorch (shared/peers/mlp_torch.py, Debian's python3-torch with
# OpenBLAS) and by precision-lab-cli in the same run, with the same number of threads (THREADS,
# default 1; issue 16 asks for 1 and 2); prints samples/s, test accuracy and the ratio. Also
# times our full-FP8 recipe with statistics every step against our FP32 recipe. Needs:
# python3-torch (Debian's: /usr/bin/python3), dataset-fashion-mnist, a built build/default (or
# $BUILD).
# OpenBLAS picks its kernels by CPU unless OPENBLAS_CORETYPE says otherwise (some machines set
# it): both sides read it, so compare with the same value, and say which (docs/performance.md).
# CPUS (e.g. CPUS=0, or CPUS=0,1 with two threads) pins both sides to those CPUs with taskset:
# on a VM whose virtual CPUs differ (the reference VM's second one runs our cast 30% slower than
# its first), an unpinned run lands either side on either CPU and the ratio is noise.
# ROUNDS (default 3) alternates the steady-state timings, PyTorch then ours, that many times and
# reports each round and the median of the ratios: on a VM whose speed drifts (the reference
# VM's by up to a quarter over minutes, both sides alike), one reading of each side taken a
# minute apart gave 1.08x and 1.23x of the same two builds within half an hour.
set -euo pipefail
cd "$(dirname "$0")/../.."
pin=()
if [[ -n ${CPUS:-} ]]; then pin=(taskset -c "$CPUS"); fi
rounds=${ROUNDS:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "mlp_vs_torch: ROUNDS=$rounds: expected a whole number >= 1" >&2; exit 2; }
# Without PyTorch the peer fails and its grep finds nothing: say so instead of exiting silently.
python3 -c "import torch" 2>/dev/null ||
  { echo "mlp_vs_torch: python3 cannot import torch (install Debian's python3-torch; on a machine with another python3 first, PATH=/usr/bin:\$PATH)" >&2; exit 1; }
cli=${BUILD:-build/default}/app/precision-lab-cli
peer=${PEER:-../shared/peers/mlp_torch.py}
threads=${THREADS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

torch_run() { # prints: steady samples/s, test accuracy
  local line
  line=$(MLP_THREADS=$threads MLP_MODES=fp32 "${pin[@]}" python3 "$peer" 2>&1 | grep "fp32 train")
  sed -E 's/.*train +([0-9]+) samples.*test acc ([0-9.]+)%.*/\1 \2/' <<<"$line"
}

ours() { # args: name, extra CLI args...
  local name=$1; shift
  "${pin[@]}" "$cli" train --epochs 2 --threads "$threads" --data fashion-mnist --out "$out/$name" "$@" >/dev/null 2>&1
  python3 -c "import json,sys; s=json.load(open('$out/$name/summary.json')); print(s['samples_per_second'], 100*s['test_accuracy'])"
}
# The peer's rate is its steady state (steps after the 20th, no start-up or evaluation): ours
# the same way from `bench train` (20 untimed steps, then 2 epochs of steps timed), beside the
# end-to-end rate of the `train` run (summary.json: from the session's start, evaluation, the
# run log's writes and the warm-up steps included), which also gives the accuracy.
steady() { # args: extra CLI args...
  "${pin[@]}" "$cli" bench train --epochs 2 --warmup 20 --threads "$threads" --data fashion-mnist "$@" 2>/dev/null |
    sed -n 's/^steady_samples_per_second: //p'
}
fp32_args=(--set model.init=uniform --set train.stats_every=1000000)
fp8_args=(--preset fp8-e5m2 --set model.init=uniform --set recipe.optimizer_state=fp8-e5m2
  --set train.stats_every=1)
read -r fp32_sps fp32_acc < <(ours fp32 "${fp32_args[@]}")
read -r fp8_sps fp8_acc < <(ours fp8 "${fp8_args[@]}")

printf '%-7s %12s %12s %12s %14s %14s\n' "round" "PyTorch/s" "ours fp32/s" "ours FP8/s" "fp32 vs torch" "FP8 step/fp32"
torch_rates=() fp32_rates=() fp8_rates=()
for ((r = 1; r <= rounds; r++)); do
  read -r torch_sps torch_acc < <(torch_run)
  fp32_steady=$(steady "${fp32_args[@]}")
  fp8_steady=$(steady "${fp8_args[@]}")
  torch_rates+=("$torch_sps") fp32_rates+=("$fp32_steady") fp8_rates+=("$fp8_steady")
  python3 -c "print(f'{$r:<7} {$torch_sps:12.0f} {$fp32_steady:12.0f} {$fp8_steady:12.0f} {$fp32_steady/$torch_sps:13.2f}x {$fp32_steady/$fp8_steady:13.2f}x')"
done

python3 - "$threads" "$rounds" "$torch_acc" "$fp32_sps" "$fp32_acc" "$fp8_sps" "$fp8_acc" \
  "${torch_rates[*]}" "${fp32_rates[*]}" "${fp8_rates[*]}" <<'PY'
import statistics as st, sys
threads, rounds, torch_acc, fp32_e2e, fp32_acc, fp8_e2e, fp8_acc = sys.argv[1:8]
torch, fp32, fp8 = ([float(v) for v in a.split()] for a in sys.argv[8:11])
vs_torch = st.median(f / t for f, t in zip(fp32, torch))
fp8_cost = st.median(f / e for f, e in zip(fp32, fp8))
print(f"\nrun ({threads} thread(s), 2 epochs; steady: median of {rounds} round(s))  "
      f"steady/s  end-to-end  test acc")
print(f"{'PyTorch fp32 (peer)':52} {st.median(torch):8.0f} {'-':>11} {float(torch_acc):8.2f}%")
print(f"{'precision-lab fp32':52} {st.median(fp32):8.0f} {float(fp32_e2e):11.0f} {float(fp32_acc):8.2f}%")
print(f"{'precision-lab full FP8 (E5M2), stats every step':52} {st.median(fp8):8.0f} "
      f"{float(fp8_e2e):11.0f} {float(fp8_acc):8.2f}%")
print(f"fp32 speed vs PyTorch (steady, as the peer measures; median of the rounds' ratios): "
      f"{vs_torch:.2f}x (end-to-end {float(fp32_e2e) / st.median(torch):.2f}x);  FP8+stats step "
      f"time vs our fp32: {fp8_cost:.2f}x (end-to-end {float(fp32_e2e) / float(fp8_e2e):.2f}x)")
PY
