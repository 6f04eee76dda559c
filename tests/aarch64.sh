#!/usr/bin/env bash
# The kernel tests on aarch64, emulated: the extension cross-built with Debian's
# g++-aarch64-linux-gnu for Debian's arm64 CPython 3.11, and the kernel tests run by that
# CPython under qemu-aarch64 (user-mode emulation: a Linux/arm64 process on this x86-64 host),
# bitwise against the reference backend as on x86-64. Run from the repository root:
#     bash tests/aarch64.sh [--setup | --build | --test] [--ci] [DIR]   (DIR: build/aarch64)
# --setup: Debian's qemu-user and cross-compiler (apt-get, as root or through sudo), the arm64
#   CPython and the libraries it loads (Debian's arm64 packages, unpacked into DIR/root, which
#   qemu takes as the arm64 file system's root), NumPy's manylinux aarch64 wheel and pytest and
#   hypothesis from the package index (unpacked into DIR/site);
# --build: the extension (CMakeLists.txt, cross-compiling: the baseline level, NEON);
# --test: the tests below under qemu (`dmlops info` naming NEON among them).
# Without a phase, all three. --ci: CI's smaller sizes (for its time): the module built at -O1
# (a quarter of -O3's compile; the same source paths, as the sanitizers' -O0), the fast paths
# alone (the plain kernels are the same scalar C++ on every machine, tested at two x86-64
# levels and under the sanitizers), and a quarter of the property tests' examples, in two
# emulated processes side by side (half the tests each: CI runs them beside the sanitizer
# tests, and one process alone left a core idle for the last minute); without it, -O3 as pip
# builds, both paths and every example, one process. The host needs this repository's test
# extra (nanobind, cmake, ninja and pip) in the Python that runs the script.
set -euo pipefail
phase=all
case "${1:-}" in --setup|--build|--test) phase="${1#--}"; shift ;; esac
optimize=-O3
paths=all
examples=1
processes=1
ci=0
if [ "${1:-}" = --ci ]; then optimize=-O1; paths=fast; examples=0.25; processes=2; ci=1; shift; fi
dir="${1:-build/aarch64}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
root="$dir/root"
site="$dir/site"
python=$(command -v python)

# The kernel tests: every operator and data type, fast paths and plain kernels, against the
# reference backend (tests/levels.py gives the baseline level, NEON, both ways). The rest of
# the suite tests Python code that is the same on every machine, and needs packages with no
# arm64 build here (PyTorch, ONNX Runtime, Dask's cluster), or a second emulated interpreter
# per worker process.
# Left out here: the two tests that start a new interpreter (sys.executable, an arm64 binary
# the host cannot start without binfmt_misc; they check backend selection, which is Python),
# and test_padding_grad's PyTorch and Dask cases (skipped: neither is installed here).
tests="tests/test_cpu_backend.py tests/test_cpu_padding.py tests/test_family.py
       tests/test_layouts.py tests/test_padding_grad.py
       tests/test_kernel_build.py::test_each_level_names_the_instructions_it_was_built_for
       --deselect tests/test_layouts.py::test_backend_selection_order
       --deselect tests/test_layouts.py::test_env_backend_at_startup"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ "$phase" = all ] || [ "$phase" = setup ]; then
  tools_missing=0
  command -v qemu-aarch64 > /dev/null && command -v aarch64-linux-gnu-g++ > /dev/null ||
    tools_missing=1
  if [ "$tools_missing" = 1 ] || [ ! -x "$root/usr/bin/python3.11" ]; then
    # one package list for both: the host's tools and the arm64 packages
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
      as_root dpkg --add-architecture arm64
    fi
    as_root apt-get update -qq
  fi
  if [ "$tools_missing" = 1 ]; then
    # (CI's machine is new each run: its manual pages' index is not rebuilt for the new
    # packages, which took man-db 20 s of a core)
    if [ "$ci" = 1 ]; then as_root rm -f /var/lib/man-db/auto-update; fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      qemu-user g++-aarch64-linux-gnu > /dev/null
  fi
  if [ ! -x "$root/usr/bin/python3.11" ]; then
    # CPython, the libraries its standard library loads (apt-cache depends), the C++ runtime
    # the extension links, and the headers it is built against (libpython3.11-dev)
    packages="python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libpython3.11-dev
              libc6 libgcc-s1 libstdc++6 libexpat1 zlib1g libffi8 libssl3 libbz2-1.0 liblzma5
              libsqlite3-0 libncursesw6 libtinfo6 libreadline8 libuuid1 libcrypt1 libnsl2
              libtirpc3 libdb5.3"
    rm -rf "$dir/debs" "$root" && mkdir -p "$dir/debs"
    # shellcheck disable=SC2046
    (cd "$dir/debs" && apt-get download -qq $(printf '%s:arm64 ' $packages))
    for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$root"; done
  fi
  if [ ! -d "$site/numpy" ]; then
    rm -rf "$dir/wheels" "$site"
    "$python" -m pip download -q --only-binary=:all: --platform manylinux2014_aarch64 \
      --python-version 3.11 --implementation cp --abi cp311 -d "$dir/wheels" \
      "numpy>=1.24" "pytest>=7" "hypothesis>=6.80"
    for wheel in "$dir"/wheels/*.whl; do "$python" -m zipfile -e "$wheel" "$site"; done
  fi
fi

if [ "$phase" = all ] || [ "$phase" = build ]; then
  build="$dir/build"
  # a build folder configured from another checkout would stop cmake: start it again
  if [ -f "$build/CMakeCache.txt" ] &&
     ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$PWD" "$build/CMakeCache.txt"; then
    rm -rf "$build"
  fi
  # The host's Python runs nanobind's CMake helpers; the headers and the module's file name
  # are the arm64 CPython's (SKBUILD_SOABI: nanobind's name for it, as scikit-build-core
  # passes it).
  cmake -S . -B "$build" -G Ninja -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
    -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DPython_EXECUTABLE="$python" \
    -DPython_INCLUDE_DIR="$root/usr/include/python3.11" \
    -DCMAKE_CXX_FLAGS="-isystem $root/usr/include" \
    -DSKBUILD_SOABI=cpython-311-aarch64-linux-gnu -DDMLOPS_OPTIMIZE="$optimize" \
    -DDMLOPS_STRICT_VECTORS=ON > /dev/null
  # (ninja prints a failed compile's errors on its output: kept, and shown if it fails)
  if ! cmake --build "$build" > "$build/build.log" 2>&1; then
    grep -v '^\[' "$build/build.log" | head -n 60 >&2
    exit 1
  fi
  if aarch64-linux-gnu-objdump -d "$build"/_kernels_*.so |
     grep -E '\s(fmla|fmls|fmadd|fmsub|fnmadd|fnmsub)\s'; then
    echo "aarch64: a fused multiply-add in the module (it would change the averages' bits)" >&2
    exit 1
  fi
fi

if [ "$phase" = all ] || [ "$phase" = test ]; then
  pkg="$dir/pkg"
  rm -rf "$pkg" && mkdir -p "$pkg"
  cp -r src/dmlops "$pkg/dmlops"
  find "$pkg" \( -name '_kernels_*.so' -o -name __pycache__ \) -prune -exec rm -rf {} +
  cp "$dir"/build/_kernels_*.so "$pkg/dmlops/"
  arm() {
    QEMU_LD_PREFIX="$root" PYTHONPATH="$pkg:$site" PYTHONDONTWRITEBYTECODE=1 \
      qemu-aarch64 "$root/usr/bin/python3.11" "$@"
  }
  # processes side by side, each every n-th test (DMLOPS_TEST_SHARD, tests/conftest.py),
  # each its own log; any failure fails the run
  pids=()
  for ((i = 0; i < processes; i++)); do
    # shellcheck disable=SC2086
    DMLOPS_TEST_EXAMPLES="$examples" DMLOPS_TEST_PATHS="$paths" \
      DMLOPS_TEST_SHARD="$i/$processes" \
      arm -m pytest -q -p no:cacheprovider -p no:randomly -o addopts="" $tests \
      > "$dir/test-$i.log" 2>&1 &
    pids+=($!)
  done
  failed=0
  for ((i = 0; i < processes; i++)); do
    wait "${pids[$i]}" || failed=1
    cat "$dir/test-$i.log"
  done
  exit "$failed"
fi
