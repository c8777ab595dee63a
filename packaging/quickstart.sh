#!/usr/bin/env bash
# The README's two Quick start commands:
#   packaging/quickstart.sh run    install what is missing, build, run the main job
#   packaging/quickstart.sh test   install what is missing, build, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-run}
case "$mode" in run|test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac

packaging/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default

if [[ "$mode" == test ]]; then
  # `exhaustive` (2^32-input sweeps) stays out of the default run; see README.
  exec ctest --preset default
fi

cli=build/default/app/precision-lab-cli
echo "Precision Lab: the desktop app is not built yet; showing the format engine through the CLI."
"$cli" formats
echo
echo "464 465 1e-3 6e-8 0.1" | "$cli" quantize --format fp8-e4m3 --overflow inf
