#!/usr/bin/env bash
# Builds the .deb from a finished build folder, checks its metadata, unpacks it into a scratch
# root with `dpkg -x` (no root needed, nothing touches the system) and runs the installed CLI from
# there; then checks `cmake --install` to a prefix gives the same files.
#   tests/package/test_deb_install.sh <build-dir> <source-dir>
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

id=io.github.precisionlab.PrecisionLab
(cd "$build" && cpack -G DEB -B "$scratch/pkg" >"$scratch/cpack.log" 2>&1) ||
  { cat "$scratch/cpack.log" >&2; fail "cpack -G DEB failed"; }
deb=$(ls "$scratch"/pkg/precision-lab_*_amd64.deb) || fail "no .deb produced"
echo "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

# Metadata: real Debian dependencies from dpkg-shlibdeps, and the dataset suggested.
info=$(dpkg-deb -f "$deb" Package Depends Suggests Section)
echo "$info"
grep -q '^Package: precision-lab$' <<<"$info" || fail "package name"
grep -q '^Depends:.*libc6' <<<"$info" || fail "Depends lacks libc6 (shlibdeps did not run?)"
grep -q '^Depends:.*zlib1g' <<<"$info" || fail "Depends lacks zlib1g"
grep -q '^Suggests: dataset-fashion-mnist' <<<"$info" || fail "Suggests lacks dataset-fashion-mnist"

root=$scratch/root
dpkg -x "$deb" "$root"
for f in usr/bin/precision-lab-cli usr/share/doc/precision-lab/README.md \
         usr/share/doc/precision-lab/docs/cli.md usr/share/doc/precision-lab/LICENSE; do
  [[ -f "$root/$f" ]] || fail "package lacks /$f"
done
if grep -q '^Depends:.*libqt6widgets6' <<<"$info"; then # built with the GUI
  for f in usr/bin/precision-lab usr/share/applications/$id.desktop \
           usr/share/metainfo/$id.metainfo.xml usr/share/icons/hicolor/scalable/apps/$id.svg \
           usr/share/icons/hicolor/48x48/apps/$id.png usr/share/icons/hicolor/256x256/apps/$id.png; do
    [[ -f "$root/$f" ]] || fail "package lacks /$f"
  done
  file "$root/usr/share/icons/hicolor/48x48/apps/$id.png" | grep -q '48 x 48' || fail "48px icon is not 48x48"
  appstreamcli validate --no-net "$root/usr/share/metainfo/$id.metainfo.xml" || fail "appstreamcli validate"
  desktop-file-validate "$root/usr/share/applications/$id.desktop" || fail "desktop-file-validate"
fi

# The installed CLI runs from the scratch root and trains.
cli=$root/usr/bin/precision-lab-cli
"$cli" formats | grep -q 'fp8-e4m3' || fail "installed CLI: formats does not list fp8-e4m3"
"$cli" train --preset fp16-static --steps 20 --out "$scratch/run" >"$scratch/train.log" ||
  { cat "$scratch/train.log" >&2; fail "installed CLI: train failed"; }
grep -q '"finished": true' "$scratch/run/summary.json" || fail "installed CLI: summary.json missing or run unfinished"
echo "installed CLI trained 20 steps: $(grep -o '"final_train_loss": [^,]*' "$scratch/run/summary.json" || true)"

# The Python module, where the build made it, imports from the unpacked root and casts; both
# extensions (_quantize, _core) are there.
pkg=$root/usr/lib/python3/dist-packages
if compgen -G "$pkg/precision_lab/_core*.so" >/dev/null; then
  compgen -G "$pkg/precision_lab/_quantize*.so" >/dev/null ||
    fail "installed Python module: _core is there but not _quantize"
  PYTHONPATH=$pkg /usr/bin/python3 -c '
import numpy, precision_lab
y, s = precision_lab.quantize(numpy.array([1e-9, 1.0], numpy.float32), "fp16")
assert s["flushed"] == 1 and y[1] == 1.0, s
assert precision_lab.__file__.startswith("'"$pkg"'"), precision_lab.__file__
assert callable(precision_lab.open_run)  # loads _core
' || fail "installed Python module: import or quantize failed"
  echo "installed Python module imports and casts"
fi

# cmake --install to a prefix installs the same files as the package.
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
diff <(cd "$root/usr" && find . -type f | sort) <(cd "$scratch/prefix" && find . -type f | sort) ||
  fail "cmake --install and the .deb install different files"
echo "PASS: .deb installs and runs from a scratch root; cmake --install matches"
