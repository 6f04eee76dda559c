"""The package's import: what ``import dmlops`` loads, and the public names it loads at their
first use (PEP 562)."""

import subprocess
import sys
from pathlib import Path

import pytest

import dmlops

ROOT = Path(__file__).resolve().parents[1]


def _run(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    return out.stdout.split()


def test_import_loads_neither_descriptions_nor_pictures_nor_extras():
    loaded = _run("import sys, dmlops\n"
                  "for m in ('dmlops.descs', 'dmlops._explain', 'dmlops.backends.cpu', "
                  "'matplotlib', 'dask', 'zarr', 'onnx', 'torch'):\n"
                  "    print(m in sys.modules)")
    assert loaded == ["False"] * 8


def test_lazy_names_load_at_first_use():
    assert _run("import sys, dmlops\n"
                "print(dmlops.MaxPoolingDesc.__module__, 'dmlops.descs' in sys.modules)\n"
                "from dmlops import compile_operator, explain_text\n"
                "print(compile_operator.__module__, explain_text.__module__)") == [
        "dmlops.descs", "True", "dmlops.descs", "dmlops._explain.text"]


def test_every_public_name_resolves():
    for name in dmlops.__all__:
        assert getattr(dmlops, name) is not None, name
    assert set(dmlops.__all__) <= set(dir(dmlops))
    from dmlops import descs
    assert dmlops.DESC_CLASSES is descs.DESC_CLASSES
    assert dmlops.padding.__module__ == "dmlops.functional"      # (the function, not the module)
    with pytest.raises(AttributeError, match="no attribute 'MaxPoolDesc'"):
        dmlops.MaxPoolDesc
