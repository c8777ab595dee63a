#!/usr/bin/env bash
# Copies the header-only dependencies (Eigen, nlohmann-json, CLI11) from this machine's Debian
# packages into tests/gpu/deps/, for GPU machines that have a compiler and nvcc but no package
# registry. run-device-checks.sh builds against that folder. The folder is not committed.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf deps && mkdir -p deps
cp -r /usr/include/eigen3 deps/eigen3
cp -r /usr/include/nlohmann deps/nlohmann
cp -r /usr/include/CLI deps/CLI
echo "bundle-deps: $(du -sh deps | cut -f1) of headers in tests/gpu/deps"
