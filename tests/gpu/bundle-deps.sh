#!/usr/bin/env bash
# Copies the header-only dependencies (Eigen, nlohmann-json, CLI11) and SQLite (header and
# shared library: the run record) from this machine's Debian
# packages into tests/gpu/deps/, for GPU machines that have a compiler and nvcc but no package
# registry. run-device-checks.sh builds against that folder. The folder is not committed.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf deps && mkdir -p deps
cp -r /usr/include/eigen3 deps/eigen3
cp -r /usr/include/nlohmann deps/nlohmann
cp -r /usr/include/CLI deps/CLI
mkdir -p deps/sqlite3/include deps/sqlite3/lib
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h deps/sqlite3/include/
cp "$(readlink -f /usr/lib/x86_64-linux-gnu/libsqlite3.so.0)" deps/sqlite3/lib/libsqlite3.so.0
echo "bundle-deps: $(du -sh deps | cut -f1) of headers and libraries in tests/gpu/deps"
