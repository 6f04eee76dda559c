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
# One level, the highest this machine runs: the widest vectors, so the most tails, masks and
# reads near a row's end (the lowest level's forms run under pytest at -O3 and emulated on
# aarch64; a second sanitized level cost CI 90 s of its two cores' compile).
# (dmlops.backends.cpu._levels.NEEDS, in /proc/cpuinfo's names: bmi1 for bmi, abm for lzcnt;
# read here because the package may not be installed yet)
level=baseline
if [ "$(uname -m)" = x86_64 ]; then
  flags=" $(grep -m 1 '^flags' /proc/cpuinfo) "
  has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
  if has avx2 fma f16c bmi1 bmi2 abm popcnt avx512f avx512bw avx512vl avx512dq avx512cd; then
    level=avx512
  elif has avx2 fma f16c bmi1 bmi2 abm popcnt; then
    level=avx2
  fi
fi
if [ "$phase" != test ]; then
  cmake -S . -B "$build" -G Ninja -DDMLOPS_SANITIZE=ON -DDMLOPS_STRICT_VECTORS=ON \
    -DDMLOPS_ONLY_LEVELS="$level" \
    -DPython_EXECUTABLE="$python" > /dev/null
  # (ninja prints a failed compile's errors on its output: kept, and shown if it fails)
  if ! cmake --build "$build" > "$build/build.log" 2>&1; then
    grep -v '^\[' "$build/build.log" | head -n 60 >&2
    exit 1
  fi
fi
[ "$phase" = build ] && exit 0
# a package folder with the sanitized module beside the Python sources; where that is not
# the baseline level, a baseline module that only tells the CPU's features, taken from the
# sanitized one (the package needs the baseline module for that alone, and this machine
# runs the sanitized level). The tests run at the sanitized level alone.
rm -rf "$pkg" && mkdir -p "$pkg"
cp -r src/dmlops "$pkg/dmlops"
rm -f "$pkg"/dmlops/_kernels_*.so
cp "$build"/_kernels_"$level".*.so "$pkg/dmlops/"
if [ "$level" != baseline ]; then
  echo "from ._kernels_$level import cpu_features  # (tests/sanitize.sh)" \
    > "$pkg/dmlops/_kernels_baseline.py"
fi
# Python itself is not instrumented: preload the runtimes; leaks are Python's, not ours.
# (Not test_kernel_build.py: it checks how the modules are built, which here is not how the
# package builds them.)
# Only the plugins these tests use (CI runs them while pip installs other packages, some of
# which bring pytest plugins).
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 DMLOPS_TEST_LEVELS="$level" \
PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONPATH="$pkg" "$python" -m pytest -q -p no:cacheprovider \
  -p xdist.plugin -p hypothesis.extra.pytestplugin \
  -o addopts="-n auto --maxprocesses 4 --dist worksteal" \
  tests/test_cpu_backend.py tests/test_cpu_padding.py tests/test_family.py \
  tests/test_layouts.py
