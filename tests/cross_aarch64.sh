#!/usr/bin/env bash
# Compiles the kernels for aarch64 with Debian's cross-compiler (apt-get install
# g++-aarch64-linux-gnu): every kernel translation unit, warnings as errors, and no fused
# multiply-add in the objects (fmla/fmls/fmadd/fmsub would change the averages' bits); the
# bindings are checked for syntax only (the host's Python headers). Run from the repository
# root:    bash tests/cross_aarch64.sh
set -euo pipefail
cxx=aarch64-linux-gnu-g++
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for f in src/kernels/*/*.cpp; do
  case "$f" in src/kernels/bindings/*) continue ;; esac
  "$cxx" -std=c++17 -O3 -ffp-contract=off -Wall -Wextra -Werror -Isrc/kernels -c "$f" \
    -o "$out/$(basename "$f").o"
done
if aarch64-linux-gnu-objdump -d "$out"/*.o | grep -E '\s(fmla|fmls|fmadd|fmsub|fnmadd|fnmsub)\s'; then
  echo "fused multiply-add found" >&2
  exit 1
fi
"$cxx" -std=c++17 -fsyntax-only -Isrc/kernels -I"$(python -m nanobind --include_dir)" \
  -I"$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
  -DDMLOPS_LEVEL=baseline -DDMLOPS_MODULE=_kernels_baseline src/kernels/bindings/*.cpp
echo "aarch64: $(ls "$out" | wc -l) kernel objects built, no fused multiply-add"
