#!/usr/bin/env bash
# Proves here what cibuildwheel proves in its containers (which cannot run on
# this machine), end to end:
#   1. `pip wheel .` builds a wheel whose name carries _version.py's number;
#   2. `auditwheel show` finds a manylinux tag, and the module needs no shared
#      library beyond glibc and the GCC runtime (LMDB is linked in statically);
#   3. `auditwheel repair` retags it;
#   4. the repaired wheel, installed with its test extra in a fresh venv,
#      passes the whole test suite (imported from the venv, never from python/);
#   5. `python -m build --sdist` makes an sdist that installs in another fresh
#      venv from PyPI alone, and works.
# Usage: scripts/check_wheel.sh [OUT_DIR]   (PYTHON=python3.12 to pick another interpreter)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$(mktemp -d /tmp/agentsensus-wheel.XXXXXX)}
PY=${PYTHON:-python3}
unset PYTHONPATH  # the checks must see the installed package only
mkdir -p "$OUT"
cd "$ROOT"
step() { printf '\n== %s\n' "$*"; }

step "version: one number, in python/agentsensus/_version.py"
VERSION=$("$PY" -c 'import re,sys; print(re.fullmatch(r"__version__ = \"([^\"]+)\"\n", open(sys.argv[1]).read()).group(1))' \
    python/agentsensus/_version.py)
echo "$VERSION"

step "1. pip wheel"
rm -rf "$OUT/raw" "$OUT/repaired"
"$PY" -m pip wheel . -w "$OUT/raw" --no-deps --disable-pip-version-check
WHEEL=$(ls "$OUT"/raw/agentsensus-"$VERSION"-*.whl)
echo "$WHEEL"

step "2. auditwheel show"
"$PY" -m auditwheel show "$WHEEL" | tee "$OUT/auditwheel-show.txt"
# auditwheel wraps its lines: join them before matching.
tr '\n' ' ' <"$OUT/auditwheel-show.txt" | grep -Eq 'consistent with the following platform tag: +"manylinux_[0-9]+_[0-9]+_[a-z0-9_]+"' \
    || { echo "FAIL: no manylinux tag" >&2; exit 1; }
if grep -q 'external shared libraries are required' "$OUT/auditwheel-show.txt"; then
    echo "FAIL: the wheel needs a library outside the manylinux policy" >&2; exit 1
fi
# The module's own NEEDED entries: glibc (libc, libm, libmvec), libstdc++ and libgcc_s only.
rm -rf "$OUT/unpacked" && mkdir "$OUT/unpacked"
"$PY" -m zipfile -e "$WHEEL" "$OUT/unpacked"
NEEDED=$("$PY" - "$OUT"/unpacked/agentsensus/_core*.so <<'EOF'
import sys
from elftools.elf.elffile import ELFFile  # pyelftools: an auditwheel dependency
with open(sys.argv[1], "rb") as f:
    dyn = ELFFile(f).get_section_by_name(".dynamic")
    print(" ".join(sorted(t.needed for t in dyn.iter_tags() if t.entry.d_tag == "DT_NEEDED")))
EOF
)
echo "NEEDED: $NEEDED"
for lib in $NEEDED; do
    case "$lib" in
        libc.so.6 | libm.so.6 | libmvec.so.1 | libstdc++.so.6 | libgcc_s.so.1 | ld-linux-*) ;;
        *) echo "FAIL: unexpected shared library $lib (LMDB must be static)" >&2; exit 1 ;;
    esac
done

step "3. auditwheel repair"
"$PY" -m auditwheel repair "$WHEEL" -w "$OUT/repaired"
REPAIRED=$(ls "$OUT"/repaired/agentsensus-"$VERSION"-*manylinux*.whl)
echo "$REPAIRED"

step "4. the repaired wheel in a fresh venv, with the whole test suite"
rm -rf "$OUT/venv-wheel"
"$PY" -m venv "$OUT/venv-wheel"
"$OUT/venv-wheel/bin/python" -m pip install -q --disable-pip-version-check "$REPAIRED[test]"
(
    cd "$OUT"  # not the source tree: nothing there can shadow the installed package
    "$OUT/venv-wheel/bin/python" -c 'import agentsensus, sys; print(agentsensus.__version__, agentsensus.__file__); assert agentsensus.__version__ == sys.argv[1]' "$VERSION"
    "$OUT/venv-wheel/bin/python" -c 'import agentsensus, sys; sys.exit("site-packages" not in agentsensus.__file__)'
    "$OUT/venv-wheel/bin/python" -m pytest "$ROOT/tests" -q -p no:cacheprovider
)

step "5. sdist, installed from PyPI alone in a fresh venv"
rm -rf "$OUT/sdist" "$OUT/venv-sdist"
"$PY" -m build --sdist -o "$OUT/sdist" .
SDIST=$(ls "$OUT"/sdist/agentsensus-"$VERSION".tar.gz)
"$PY" -m venv "$OUT/venv-sdist"
env -u AGENTSENSUS_SDIST_DIR "$OUT/venv-sdist/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir "$SDIST"
(
    cd "$OUT"
    "$OUT/venv-sdist/bin/python" - "$VERSION" <<'EOF'
import sys, tempfile
import numpy as np
import agentsensus
from agentsensus import Store
from agentsensus.embedders import hash as embed

assert agentsensus.__version__ == sys.argv[1], agentsensus.__version__
with tempfile.TemporaryDirectory() as d, Store(d + "/s", embed=embed) as s:
    s.deposit("a", ["The ghost walks at midnight"])
    s.deposit("b", ["the ghost walks at midnight"])
    [m] = s.recall("b", "who walks?", k=1)
    assert m.owners == {"a", "b"}, m
    print("sdist install works:", agentsensus.__file__, s.stats())
EOF
    "$OUT/venv-sdist/bin/agentsensus" --help >/dev/null
)

step "all checks passed ($OUT)"
