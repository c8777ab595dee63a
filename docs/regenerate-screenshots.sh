#!/usr/bin/env bash
# Regenerates docs/images/*.png (the README's screenshots) with the app itself, offscreen.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default >/dev/null
cmake --build --preset default --target make_screenshots
build/default/docs/make_screenshots docs/images
