# Sourced by the Python benchmarks' scripts (watch_overhead.sh, emulate_overhead.sh) from the
# repository root with $name set: checks that the build has the Python module and that
# /usr/bin/python3 has torch, and sets $build and the CPU pinning ${pin[@]} (CPUS=0,1 pins).
build=${BUILD:-build/default}
[[ -d $build/python/precision_lab ]] ||
  { echo "$name: $build/python/precision_lab is missing: build first (cmake --build --preset default)" >&2; exit 1; }
/usr/bin/python3 -c "import torch" 2>/dev/null ||
  { echo "$name: /usr/bin/python3 cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
pin=()
if [[ -n ${CPUS:-} ]]; then pin=(taskset -c "$CPUS"); fi
