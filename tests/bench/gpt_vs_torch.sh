#!/usr/bin/env bash
# Benchmark, not a test: the tiny byte-level GPT (0.47M parameters, context 64, width 128, 4 heads,
# 2 blocks; AdamW, batch 32) trained in FP32 on the text of Debian's fortunes package by PyTorch
# (shared/peers/gpt_torch.py) and by `precision-lab-cli bench gpt`, one thread each, for each seed
# in the same run, alternating; prints tokens/s and validation bits/byte per run, the means and
# the ratios (issue 15's acceptance: bits/byte within 0.03 of PyTorch's over 3 seeds, tokens/s at
# least 1.0x). GPT_STEPS (1000) and GPT_SEEDS ("1 2 3") override. Needs python3-torch, fortunes
# and a built build/default (or $BUILD).
# OpenBLAS picks its kernels by CPU unless OPENBLAS_CORETYPE says otherwise (some machines set
# it): both sides read it, so compare with the same value, and say which (docs/performance.md).
# CPUS (e.g. CPUS=0, or CPUS=0,1 with two threads) pins both sides to those CPUs with taskset:
# on a VM whose virtual CPUs differ (the reference VM's second one runs our cast 30% slower than
# its first), an unpinned run lands either side on either CPU and the ratio is noise.
set -euo pipefail
cd "$(dirname "$0")/../.."
pin=()
if [[ -n ${CPUS:-} ]]; then pin=(taskset -c "$CPUS"); fi
# Without PyTorch the peer fails and its grep finds nothing: say so instead of exiting silently.
python3 -c "import torch" 2>/dev/null ||
  { echo "gpt_vs_torch: python3 cannot import torch (install Debian's python3-torch; on a machine with another python3 first, PATH=/usr/bin:\$PATH)" >&2; exit 1; }
cli=${BUILD:-build/default}/app/precision-lab-cli
peer=${PEER:-../shared/peers/gpt_torch.py}
steps=${GPT_STEPS:-1000}
seeds=${GPT_SEEDS:-1 2 3}

printf '%-22s %5s %10s %10s\n' run seed tokens/s bits/byte
results=()
for seed in $seeds; do
  torch=$(GPT_STEPS=$steps GPT_THREADS=1 GPT_SEED=$seed "${pin[@]}" python3 "$peer" 2>&1 | grep "gpt torch")
  ours=$("${pin[@]}" "$cli" bench gpt --data fortunes --steps "$steps" --threads 1 --seed "$seed" |
    grep "gpt precision-lab")
  for who in torch ours; do
    line=${!who}
    tps=$(sed -E 's/.*: ([0-9]+) tokens\/s.*/\1/' <<<"$line")
    bpb=$(sed -E 's/.*= ([0-9.]+) bits\/byte.*/\1/' <<<"$line")
    printf '%-22s %5s %10s %10s\n' "$who" "$seed" "$tps" "$bpb"
    results+=("$who $tps $bpb")
  done
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics as st
rows = [l.split() for l in sys.stdin if l.strip()]
get = lambda who, i: [float(r[i]) for r in rows if r[0] == who]
t, o = get("torch", 1), get("ours", 1)
bt, bo = get("torch", 2), get("ours", 2)
print(f"mean tokens/s: PyTorch {st.mean(t):.0f}, precision-lab {st.mean(o):.0f} ({st.mean(o)/st.mean(t):.2f}x)")
print(f"mean validation bits/byte: PyTorch {st.mean(bt):.3f}, precision-lab {st.mean(bo):.3f} (difference {st.mean(bo)-st.mean(bt):+.3f})")
'
