#!/usr/bin/env bash
# The kernel tests against kernels built with AddressSanitizer and UndefinedBehaviorSanitizer
# (any report fails the run). Run from the repository root, in an environment that has the
# test extra:    bash tests/sanitize.sh [--build | --test] [BUILD_DIR]
# (--build: only build the modules, which needs only nanobind, cmake and ninja; --test: only
# run the tests against modules built before. CI builds while it installs the test extra.)
set -euo pipefail
phase=all
case "${1:-}" in --build|--test) phase="${1#--}"; shift ;; esac
build="${1:-build/sanitize}"
# a build folder configured from another checkout would stop cmake: start it again
if [ -f "$build/CMakeCache.txt" ] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
python=$(command -v python)
pkg="$build/pkg"
if [ "$phase" != test ]; then
  # the lowest and the highest level: between them every source line and both forms of each
  # level-dependent piece (software or F16C conversions, narrow or wide vectors)
  levels="baseline"
  [ "$(uname -m)" = x86_64 ] && levels="baseline;avx512"
  cmake -S . -B "$build" -G Ninja -DDMLOPS_SANITIZE=ON -DDMLOPS_STRICT_VECTORS=ON \
    -DDMLOPS_ONLY_LEVELS="$levels" \
    -DPython_EXECUTABLE="$python" > /dev/null
  # (ninja prints a failed compile's errors on its output: kept, and shown if it fails)
  if ! cmake --build "$build" > "$build/build.log" 2>&1; then
    grep -v '^\[' "$build/build.log" | head -n 60 >&2
    exit 1
  fi
fi
[ "$phase" = build ] && exit 0
# a package folder with the sanitized modules beside the Python sources
rm -rf "$pkg" && mkdir -p "$pkg"
cp -r src/dmlops "$pkg/dmlops"
rm -f "$pkg"/dmlops/_kernels_*.so
cp "$build"/_kernels_*.so "$pkg/dmlops/"
# Python itself is not instrumented: preload the runtimes; leaks are Python's, not ours.
# (Not test_kernel_build.py: it checks how the modules are built, which here is not how the
# package builds them.)
# The plain kernels at the lowest level only: at -O0 they are the same scalar code at every
# level but for the FLOAT16 conversions, which both levels' fast paths run as well.
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
PYTHONPATH="$pkg" "$python" -m pytest -q -p no:cacheprovider -k "not avx512-plain" \
  tests/test_cpu_backend.py tests/test_cpu_padding.py tests/test_family.py \
  tests/test_layouts.py
