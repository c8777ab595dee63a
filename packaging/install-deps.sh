#!/usr/bin/env bash
# Installs the Debian 12 packages Precision Lab builds and tests with. Idempotent and quiet when
# everything is present; uses sudo when not run as root.
set -euo pipefail

# What the build uses today; README.md says why each library is here.
packages=(
  build-essential cmake ninja-build
  qt6-base-dev qt6-svg-dev libqcustomplot-dev
  libcli11-dev librandom123-dev
  libeigen3-dev libopenblas-pthread-dev nlohmann-json3-dev zlib1g-dev libsqlite3-dev pkg-config
  libcairo2-dev
  dataset-fashion-mnist
  pybind11-dev python3-dev python3-numpy python3-pandas
)
if [[ "${1:-}" == --test ]]; then
  # Fuzzing (clang's libFuzzer and sanitizer runtimes), the package test's validators, the
  # Python module's tests (pytest; PyTorch for the watcher; mypy's stubtest for its type stubs), a private single-node Slurm for the sweep tests (tests/cli/local_slurm.sh), and lld, which
  # links the three builds' ~90 executables faster than binutils' linkers (CMakeLists.txt).
  packages+=(clang libclang-rt-14-dev appstream desktop-file-utils dpkg-dev file slurm-wlm munge
    lld python3-pytest python3-torch mypy)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
