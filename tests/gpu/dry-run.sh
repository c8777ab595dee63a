#!/usr/bin/env bash
# The device check's dry run on a machine without a GPU: copies the working tree the way the
# device tool does (tracked files, untracked files git does not ignore, and the carried
# tests/gpu/deps) into an empty folder and runs tests/gpu/run-device-checks.sh there with $OUT
# set, so a path the script needs but the copy lacks (an ignored build folder, say) fails here
# first.
#   tests/gpu/dry-run.sh [--configure-only | --stand-in] [run-device-checks options]
# Default: builds everything and must end at "no usable GPU".
# --configure-only: stops after CMake's configure step (seconds; the CTest `devicecheck` test).
# --stand-in: the script's stand-in mode (--stand-in-cpu: the CPU engine in the GPU's place), run
#   twice in a row on the same copy, as a second try on a machine still held would run; each
#   pass must run every stage with no failure and a number wherever a figure or ratio is due
#   (the CTest test `device_check_stand_in`, labels devicecheck and longrun: minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=build
case "${1:-}" in
--configure-only) mode=configure && shift ;;
--stand-in) mode=stand-in && shift ;;
esac
[[ -d tests/gpu/deps ]] || tests/gpu/bundle-deps.sh >/dev/null
copy=$(mktemp -d "${TMPDIR:-/tmp}/plab-device-copy.XXXXXX")
out=$(mktemp -d "${TMPDIR:-/tmp}/plab-device-out.XXXXXX")
trap 'rm -rf "$copy" "$out"' EXIT
git ls-files --cached --others --exclude-standard -z | while IFS= read -r -d '' f; do
  [[ -e "$f" ]] && printf '%s\0' "$f" # files deleted but not yet committed do not travel
done | tar --null -T - -cf - | tar -xf - -C "$copy"
cp -r tests/gpu/deps "$copy/tests/gpu/deps"
echo "dry-run: $(git ls-files --cached --others --exclude-standard | wc -l) files and" \
  "tests/gpu/deps copied to $copy"

fail() {
  echo "dry-run: FAIL: $*" >&2
  exit 1
}
# pass OUTDIR [script options]: one run of the script; checks what every mode must show.
pass() {
  local dir=$1 status=0
  shift
  mkdir -p "$dir"
  OUT=$dir PLAB_DEVICE_CHECKS_UNTIL=$([[ $mode == configure ]] && echo configure) \
    "$copy/tests/gpu/run-device-checks.sh" "$@" || status=$?
  echo "dry-run: script exit status $status; files it left in \$OUT: $(cd "$dir" && ls | tr '\n' ' ')"
  [[ -s "$dir/summary.txt" ]] || fail "no summary.txt in \$OUT"
  ! grep -q '^FAIL ' "$dir/summary.txt" || fail "a step failed (above)"
  [[ $status -eq 0 ]] || fail "the script exited $status with no failed step in its summary"
}
# figures OUTDIR: the stand-in's numbers are all there.
figures() {
  local s=$1/summary.txt
  grep -q '^none smoke .*usable GPU: stand-in' "$s" || fail "the stand-in mode did not start"
  grep -q '^ok   smoke .*train 20 steps of the GPT' "$s" || fail "the smoke stage did not train"
  [[ $(grep -c '^ok   bench .*steady' "$s") -eq 7 ]] || fail "not every steady benchmark ran"
  [[ $(grep -c '^ok   bench .*end-to-end' "$s") -eq 2 ]] || fail "not every end-to-end run ran"
  ! grep 'samples/s' "$s" | grep -qE '\?|nan|inf' || fail "a figure is missing (? or nan above)"
  [[ $(grep -cE 'samples/s.*: [0-9]+\.[0-9]+x \(' "$s") -eq 3 ]] || fail "a ratio is missing"
}

case $mode in
configure)
  pass "$out/1" "$@"
  grep -q '^ok   build .*configure' "$out/1/summary.txt" || fail "configure did not run"
  ;;
build)
  pass "$out/1" "$@"
  grep -q '^ok   build .*build$' "$out/1/summary.txt" || fail "the build did not run"
  grep -q 'usable GPU' "$out/1/summary.txt" || grep -q '^ok   smoke' "$out/1/summary.txt" ||
    fail "did not reach the device listing"
  ;;
stand-in)
  for n in 1 2; do
    echo "dry-run: stand-in pass $n of 2"
    pass "$out/$n" --stand-in-cpu "$@"
    figures "$out/$n"
  done
  # What a GPU machine must not let pass: a GPU test without a GPU fails when one is required.
  rc=0
  PLAB_REQUIRE_GPU=1 "$copy/build/gpu/tests/gpu/test_gpu_quantize" 1024 >"$out/require.txt" || rc=$?
  [[ $rc -eq 1 ]] && grep -q '^FAIL: no usable GPU' "$out/require.txt" ||
    fail "test_gpu_quantize with PLAB_REQUIRE_GPU=1 and no GPU exited $rc, not 1"
  # The deadline: a third pass given 15 s stops starting steps, fails, and still summarises.
  rc=0
  mkdir -p "$out/3"
  OUT=$out/3 PLAB_DEVICE_CHECKS_DEADLINE=15 "$copy/tests/gpu/run-device-checks.sh" \
    --stand-in-cpu "$@" >/dev/null 2>&1 || rc=$?
  [[ $rc -ne 0 ]] && grep -q "^FAIL .*deadline of 15s is reached" "$out/3/summary.txt" ||
    fail "a pass under a 15 s deadline exited $rc without a deadline failure in its summary"
  echo "dry-run: a required GPU test without a GPU fails; a 15 s deadline stops the script"
  ;;
esac
echo "dry-run: passed"
