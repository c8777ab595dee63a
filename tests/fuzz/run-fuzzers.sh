#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan; CMake preset `fuzz`) and runs each for a
# bounded time, starting from the committed seed corpus, as many at once as there are cores
# (FUZZ_JOBS to change it), each on a core of its own for its whole time; with more targets than
# cores, all at once for seconds x targets / cores, the same CPU time each (e.g. 3 targets on 2
# cores: 90 s side by side, not 60 s two at a time and then 60 s of one core idle). A crash fails
# the run with a non-zero exit; the input is left in build/fuzz/artifacts/ — copy it into
# tests/fuzz/corpus/<target>/ as crash-<what> so the replay tests keep it as a regression test
# once fixed.
#   tests/fuzz/run-fuzzers.sh [seconds-per-target, default 60]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

declare -A corpus=([format]=format [config]=config [idx_reader]=idx [block_cast]=block)
# The block cast's input starts with an element format's text: the format dictionary serves it.
declare -A dictionary=([format]=format [config]=config [block_cast]=format)
work=build/fuzz/work
mkdir -p build/fuzz/artifacts
at_once=${FUZZ_JOBS:-$(nproc)}
targets=(format config idx_reader block_cast)
wall=$seconds # each target's -max_total_time
if (( ${#targets[@]} > at_once )); then
  wall=$(( (seconds * ${#targets[@]} + at_once - 1) / at_once ))
  at_once=${#targets[@]}
fi

fuzz_one() {
  local target=$1
  # Grow a scratch copy: new inputs the fuzzer finds do not churn the committed seeds.
  rm -rf "$work/$target" && mkdir -p "$work/$target"
  cp tests/fuzz/corpus/"${corpus[$target]}"/* "$work/$target/"
  local dict=()
  [[ -n ${dictionary[$target]:-} ]] && dict=(-dict="tests/fuzz/${dictionary[$target]}.dict")
  local rc=0
  build/fuzz/tests/fuzz/fuzz_$target "$work/$target" "${dict[@]}" \
    -max_total_time="$wall" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix=build/fuzz/artifacts/"$target"- -print_final_stats=1 \
    >build/fuzz/"$target".log 2>&1 || rc=$?
  echo "$rc" >build/fuzz/"$target".rc
}

report() { # target exit-status: the verdict and the fuzzer's own figures, one target at a time
  local target=$1 rc=$2
  echo "== fuzz_$target for ${wall}s (${seconds}s of one core's time)"
  if [[ $rc -ne 0 ]]; then
    echo "fuzz_$target FAILED; log: build/fuzz/$target.log, inputs: build/fuzz/artifacts/" >&2
    tail -n 40 build/fuzz/"$target".log >&2
  fi
  grep -E '^stat::(number_of_executed_units|new_units_added)' build/fuzz/"$target".log || true
}

status=0
rm -f build/fuzz/*.rc
for target in "${targets[@]}"; do
  while (( $(jobs -rp | wc -l) >= at_once )); do wait -n || true; done # statuses: the .rc files
  fuzz_one "$target" &
done
wait
for target in "${targets[@]}"; do
  rc=$(cat build/fuzz/"$target".rc 2>/dev/null || echo 1)
  report "$target" "$rc"
  [[ $rc -eq 0 ]] || status=1
done
exit $status
