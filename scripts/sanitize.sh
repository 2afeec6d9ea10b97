#!/usr/bin/env bash
# Builds the extension with AddressSanitizer + UndefinedBehaviorSanitizer in
# its own build directory and runs the test suite against it.
#
#   scripts/sanitize.sh                 # the default suite
#   scripts/sanitize.sh tests/crash -x  # extra arguments go to pytest
#
# Python itself is not instrumented, so libasan is preloaded; leak detection
# is off because the interpreter keeps memory alive at exit on purpose.
# Child processes (the crash and multi-process tests) inherit the preload.
# The only C code is LMDB, which reads integers from pages unaligned on
# purpose on x86 (its MISALIGNED_OK): the alignment check is off for C only.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${SANITIZE_BUILD_DIR:-build/asan}"
FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$FLAGS -fno-sanitize=alignment" -DCMAKE_CXX_FLAGS="$FLAGS" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" -DPython_EXECUTABLE="$(command -v python)" >/dev/null
cmake --build "$BUILD"

# A private copy of the package with the instrumented module, so that no
# other build's .so is replaced under a running process.
PKG="$(mktemp -d)"
trap 'rm -rf "$PKG"' EXIT
cp -r python/agentsensus "$PKG/"
cp --remove-destination "$BUILD"/_core*.so "$PKG/agentsensus/"

LIBASAN="$("${CXX:-c++}" -print-file-name=libasan.so)"
# libstdc++ preloaded too: python does not link it, and ASan's __cxa_throw
# interceptor must find the real one when it starts ("CHECK failed:
# real___cxa_throw != 0" on the first C++ exception otherwise).
LIBSTDCXX="$("${CXX:-c++}" -print-file-name=libstdc++.so)"
# Reports go to files (pytest captures stderr, and a halted process takes
# its captured output with it); every process writes its own.
LOGS="$PKG/sanitizer-logs"
mkdir -p "$LOGS"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:strict_init_order=1:detect_stack_use_after_return=0:log_path=$LOGS/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$LOGS/ubsan"
status=0
LD_PRELOAD="$LIBASAN:$LIBSTDCXX" PYTHONPATH="$PKG" python -m pytest tests -q -p no:cacheprovider "$@" || status=$?
if compgen -G "$LOGS/*" >/dev/null; then
  echo "sanitizer reports:" >&2
  cat "$LOGS"/* >&2
  exit 1
fi
exit "$status"
