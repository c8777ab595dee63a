#!/usr/bin/env bash
# The device check's dry run on a machine without a GPU: copies the working tree the way the
# device tool does (tracked files, untracked files git does not ignore, and the carried
# tests/gpu/deps) into an empty folder and runs tests/gpu/run-device-checks.sh there with $OUT
# set, so a path the script needs but the copy lacks (an ignored build folder, say) fails here
# first. It must end at "no usable GPU" with every build step done.
#   tests/gpu/dry-run.sh [--configure-only] [run-device-checks options]
# --configure-only stops after CMake's configure step (seconds; the CTest `devicecheck` test).
set -euo pipefail
cd "$(dirname "$0")/../.."
until=""
if [[ "${1:-}" == --configure-only ]]; then
  until=configure
  shift
fi
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
status=0
OUT=$out PLAB_DEVICE_CHECKS_UNTIL=$until "$copy/tests/gpu/run-device-checks.sh" "$@" || status=$?
echo "dry-run: script exit status $status; files it left in \$OUT: $(cd "$out" && ls | tr '\n' ' ')"
[[ -s "$out/summary.txt" ]] || { echo "dry-run: FAIL: no summary.txt in \$OUT" >&2; exit 1; }
if grep -q '^FAIL ' "$out/summary.txt"; then
  echo "dry-run: FAIL: a step failed (above)" >&2
  exit 1
fi
if [[ $until == configure ]]; then
  grep -q '^ok   build .*configure' "$out/summary.txt" || { echo "dry-run: FAIL: configure did not run" >&2; exit 1; }
else
  grep -q '^ok   build .*build$' "$out/summary.txt" || { echo "dry-run: FAIL: the build did not run" >&2; exit 1; }
  grep -q 'usable GPU' "$out/summary.txt" || grep -q '^ok   smoke' "$out/summary.txt" ||
    { echo "dry-run: FAIL: did not reach the device listing" >&2; exit 1; }
fi
echo "dry-run: passed"
