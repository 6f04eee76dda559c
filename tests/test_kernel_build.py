"""How the cpu kernels are built and chosen: no fused multiply-add anywhere (it would change
the averages' bits, SPEC 5), one module per CPU level, and the level chosen or refused as
documented."""

import subprocess
from pathlib import Path

import numpy as np
import pytest

import dmlops as dml
from dmlops.backends import cpu
from dmlops.backends.cpu import _levels

FMA = ("vfmadd", "vfmsub", "vfnmadd", "vfnmsub",                  # x86
       "fmadd", "fmsub", "fnmadd", "fnmsub", "fmla", "fmls")          # aarch64


def _disassembly(path) -> str:
    return subprocess.run(["objdump", "-d", str(path)], check=True, capture_output=True,
                          text=True).stdout


def _fused(text: str) -> list:
    return [line for line in text.splitlines()
            if any(f"\t{name}" in line or f" {name}" in line for name in FMA)]


def test_no_fused_multiply_add_in_any_level():
    modules = sorted(Path(dml.__file__).parent.glob("_kernels_*"))
    assert {m.name.split(".")[0] for m in modules} >= {f"_kernels_{lv}" for lv in
                                                       cpu.supported()}
    for module in modules:
        assert _fused(_disassembly(module)) == [], module.name


def test_the_fma_check_sees_a_contracted_multiply_add(tmp_path):
    """The check above can fail: GCC contracts a*b+c into an FMA by default at -O3 with FMA
    enabled, and the disassembly then shows it."""
    src = tmp_path / "f.c"
    src.write_text("float f(float a, float b, float c) { return a * b + c; }\n")
    flags = ["-mfma"] if "x86" in subprocess.run(["gcc", "-dumpmachine"], capture_output=True,
                                                 text=True).stdout else []
    subprocess.run(["gcc", "-O3", *flags, "-c", str(src), "-o", str(tmp_path / "f.o")],
                   check=True)
    assert _fused(_disassembly(tmp_path / "f.o"))


def test_strict_build_refuses_a_vector_expanded_lane_by_lane(tmp_path):
    """The strict build (DMLOPS_STRICT_VECTORS, as CI builds) fails where GCC would expand a
    vector operation through the stack: a comparison of 64-byte vectors under AVX2 is one
    (the kernels size theirs by common/simd.h's kVectorBytes instead)."""
    if "x86_64" not in subprocess.run(["g++", "-dumpmachine"], capture_output=True,
                                      text=True).stdout:
        pytest.skip("the example is an x86-64 one")
    kernels = Path(__file__).resolve().parents[1] / "src" / "kernels"
    src = tmp_path / "f.cpp"
    src.write_text('#include "common/simd.h"\n'
                   "using V = dmlops::Vec<float, 16>;\n"
                   "V wide(V a, V b) { return a > b ? a : b; }\n"
                   "using N = dmlops::Vec<float, dmlops::kVectorBytes / 4>;\n"
                   "N native(N a, N b) { return a > b ? a : b; }\n")
    run = subprocess.run(["g++", "-std=c++17", "-O1", "-mavx2", f"-I{kernels}",
                          "-Werror=vector-operation-performance", "-c", str(src), "-o",
                          str(tmp_path / "f.o")], capture_output=True, text=True)
    assert run.returncode != 0
    errors = [line for line in run.stderr.splitlines() if "expanded piecewise" in line]
    assert errors and all("f.cpp:3:" in line for line in errors)


def test_levels_are_ordered_and_loaded():
    assert cpu.supported()[0] == "baseline"
    for level in cpu.supported():
        cpu.set_level(level)
        try:
            assert cpu.level() == level
            y = dml.max_pooling(np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3), 2)
            assert y.reshape(-1).tolist() == [4, 5, 7, 8]
        finally:
            cpu.set_level(None)
    assert cpu.level() == cpu.supported()[-1]


def test_each_level_names_the_instructions_it_was_built_for(capsys):
    import platform

    from dmlops import cli
    expected = ({"baseline": "SSE2", "avx2": "AVX2", "avx512": "AVX-512"}
                if platform.machine() in ("x86_64", "AMD64") else {"baseline": "NEON"})
    for level in cpu.supported():
        cpu.set_level(level)
        try:
            assert _levels.instructions() == expected[level]
            assert cli.main(["info"]) == 0
            assert f"cpu kernels: level {level}, {expected[level]} " in capsys.readouterr().out
        finally:
            cpu.set_level(None)


@pytest.mark.parametrize("bad", ["sse9", "", 3])
def test_unknown_level_is_refused(bad):
    with pytest.raises(dml.UnsupportedError, match="not a CPU level"):
        cpu.set_level(bad)


def test_level_the_cpu_lacks_names_what_it_lacks(monkeypatch):
    base = _levels.baseline()
    monkeypatch.setattr(_levels, "baseline", lambda: type("M", (), {
        "cpu_features": staticmethod(lambda: ["avx2"]), "LEVEL": base.LEVEL})())
    with pytest.raises(dml.UnsupportedError, match="lacks fma, f16c"):
        cpu.set_level("avx2")


def test_environment_chooses_the_level(monkeypatch):
    monkeypatch.setattr(_levels, "_current", None)
    monkeypatch.setenv("DMLOPS_CPU_LEVEL", "baseline")
    assert cpu.level() == "baseline"
    monkeypatch.setattr(_levels, "_current", None)
    monkeypatch.setenv("DMLOPS_CPU_LEVEL", "nonsense")
    with pytest.raises(dml.UnsupportedError, match="DMLOPS_CPU_LEVEL = 'nonsense'"):
        cpu.level()
    # the first cpu call says so; the other backends and the list of backends stay usable
    assert "cpu" in dml.backends()
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    with pytest.raises(dml.UnsupportedError, match="max_pooling: DMLOPS_CPU_LEVEL"):
        dml.max_pooling(x, 2, backend="cpu")
    assert dml.max_pooling(x, 2, backend="reference").reshape(-1).tolist() == [4, 5, 7, 8]
    monkeypatch.setattr(_levels, "_current", None)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_thread_count_must_be_positive(bad, monkeypatch):
    with pytest.raises(dml.InvalidArgumentError, match="positive integer"):
        dml.set_num_threads(bad)
    monkeypatch.setenv("DMLOPS_NUM_THREADS", "zero")
    with pytest.raises(dml.InvalidArgumentError, match="DMLOPS_NUM_THREADS"):
        dml.get_num_threads()


def test_thread_count_from_environment(monkeypatch):
    monkeypatch.setenv("DMLOPS_NUM_THREADS", "3")
    assert dml.get_num_threads() == 3
    dml.set_num_threads(1)
    try:
        assert dml.get_num_threads() == 1
    finally:
        dml.set_num_threads(None)
    assert dml.get_num_threads() == 3
