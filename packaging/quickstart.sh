#!/usr/bin/env bash
# The README's two Quick start commands:
#   packaging/quickstart.sh run    install what is missing, build, run the main job
#   packaging/quickstart.sh test   install what is missing, build, run the whole test suite:
#                                  plain, ASan+UBSan, TSan and bounded fuzzing (docs/testing.md)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-run}
case "$mode" in run|test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac

# Each stage's start, and at its end its time (docs/testing.md gives each a budget).
stage_name="" stage_start=0 run_start=$(date +%s)
stage_end() {
  [[ -n "$stage_name" ]] || return 0
  local now; now=$(date +%s)
  printf '=== %s: %dm%02ds (all stages so far %dm%02ds)\n' "$stage_name" \
    $(((now - stage_start) / 60)) $(((now - stage_start) % 60)) \
    $(((now - run_start) / 60)) $(((now - run_start) % 60))
}
stage() {
  stage_end
  stage_name=$* stage_start=$(date +%s)
  echo; echo "=== $* ($(date +%H:%M:%S))"
}

if [[ "$mode" == test ]]; then
  # A failing stage's time too, and which stage it was.
  trap 'rc=$?; if ((rc != 0)); then stage_end; echo "=== failed in: $stage_name (exit $rc)"; fi' EXIT
  stage "install what is missing"
  packaging/install-deps.sh --test
  stage "plain build"
  cmake --preset default >/dev/null
  cmake --build --preset default
  stage "plain tests"
  # `exhaustive` (2^32-input sweeps) and `longrun` stay out of the default run; see docs/testing.md.
  ctest --preset default
  stage "AddressSanitizer + UndefinedBehaviorSanitizer build"
  cmake --preset asan >/dev/null
  cmake --build --preset asan
  stage "AddressSanitizer + UndefinedBehaviorSanitizer tests"
  ctest --preset asan
  stage "ThreadSanitizer build"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan
  stage "ThreadSanitizer tests (the threaded ones)"
  ctest --preset tsan
  stage "fuzzing: build, then 30 s per target"
  tests/fuzz/run-fuzzers.sh 30
  stage_end
  echo "=== all stages passed"
  exit 0
fi

packaging/install-deps.sh
cmake --preset default >/dev/null
# What the main job runs, and no more (the tests are `test`'s): the CLI and the Python module
# (the README's examples import it), and the app where there is a display to show it; a server
# without one skips the GUI's build. Times: docs/performance.md (Build).
targets=(precision-lab-cli)
if cmake --build --preset default --target help | grep -q '^precision_lab_core:'; then
  targets+=(precision_lab_quantize precision_lab_core)
fi
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  targets+=(precision-lab)
fi
cmake --build --preset default --target "${targets[@]}"

if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]]; then
  exec build/default/app/precision-lab # the desktop app, with the demo network ready to train
fi

cli=build/default/app/precision-lab-cli
echo "Precision Lab: no display (DISPLAY/WAYLAND_DISPLAY unset), so this is the headless demo (CLI)."
"$cli" formats
echo
echo "== FP16 with a static loss scale of 2^10 on the built-in data (run log in runs/demo) =="
"$cli" train --preset fp16-static --steps 400 --out runs/demo --overwrite
echo
echo "Activation gradients at the last step, per layer (stage, format, flushed count, flushed share):"
last=$(tail -n 1 runs/demo/layers.csv | cut -d, -f1)
awk -F, -v s="$last" '$1 == s && $4 == "activation_gradients" {print "  " $3 ": " $5 ", " $8 " flushed (" $14 ")"}' runs/demo/layers.csv
