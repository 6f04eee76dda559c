"""ONNX's own node test cases for the operators dmlops.onnx implements, run on DmlBackend.

The cases come from the installed ``onnx`` package (``onnx.backend.test.BackendTest``). Only
the selected ``_cpu`` cases are exposed to pytest (the runner would otherwise report every
other ONNX case as skipped), and the selection is counted, so an include pattern that stops
matching fails here instead of silently running nothing.
"""

import os
import pickle
import re
import tempfile
import unittest
from pathlib import Path

import numpy as np
import pytest

onnx_backend_test = pytest.importorskip("onnx.backend.test")

import onnx  # noqa: E402
from onnx.backend.test import loader  # noqa: E402

import dmlops.onnx  # noqa: E402


def _node_cases(build=loader.load_node_model_tests):
    """ONNX's node cases, built once per ONNX (and NumPy) version: ONNX builds them at collection by
    running its Python reference of every operator (14 s of a core for the pooling ones),
    which every pytest worker did; the first worker builds and keeps them (a folder of the
    user's own), the others wait for it and load them."""
    try:
        import fcntl
    except ImportError:     # (Windows: each worker builds its own)
        return build()
    folder = Path(tempfile.gettempdir()) / f"dmlops-tests-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid() or folder.stat().st_mode & 0o077:
        return build()      # (not ours alone: not to be loaded from)
    kept = folder / f"onnx-{onnx.__version__}-numpy-{np.__version__}-node-cases.pickle"
    with open(folder / "onnx-node-cases.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            return pickle.loads(kept.read_bytes())
        cases = build()
        part = kept.with_suffix(".part")
        part.write_bytes(pickle.dumps(cases))
        part.replace(kept)
        return cases


loader.load_node_model_tests = _node_cases

# ONNX's cases for AveragePool, MaxPool, LpPool, MaxUnpool, GlobalAveragePool,
# GlobalMaxPool and Pad. ``test_*_pad`` also names test_convtranspose_pad (ConvTranspose)
# and test_center_crop_pad_pad (CenterCropPad), other operators, so the Pad cases are
# spelled by mode.
NODE_PATTERNS = {
    r"^test_averagepool_.*_cpu$": 20,
    r"^test_maxpool_.*_cpu$": 19,
    r"^test_lppool_.*_cpu$": 8,
    r"^test_maxunpool_.*_cpu$": 2,
    r"^test_globalaveragepool.*_cpu$": 2,
    r"^test_globalmaxpool.*_cpu$": 2,
    r"^test_(constant|edge|reflect|wrap)_pad.*_cpu$": 6,
}
# PyTorch-exported models of the same operators (older opsets: Pad with attributes). The
# AvgPool1d models wrap their pooling in Unsqueeze/Squeeze, which dmlops does not run.
MODEL_PATTERNS = {
    r"^test_(AvgPool[23]d|MaxPool\dd).*_cpu$": 13,
    r"^test_(Constant|Reflection|Replication|Zero)Pad2d_cpu$": 4,
    r"^test_operator_(maxpool|pad)_cpu$": 2,
}
PATTERNS = {**NODE_PATTERNS, **MODEL_PATTERNS}

_backend_test = onnx_backend_test.BackendTest(dmlops.onnx.DmlBackend, __name__)
for _pattern in PATTERNS:
    _backend_test.include(_pattern)


def _selected(test_cases):
    """Keep only the test methods an include pattern matches; return {pattern: [names]}."""
    found = {p: [] for p in PATTERNS}
    for case in test_cases.values():
        for name in [n for n in vars(case) if n.startswith("test_")]:
            hits = [p for p in PATTERNS if re.search(p, name)]
            if hits:
                found[hits[0]].append(name)
            else:
                delattr(case, name)
    return found


_cases = _backend_test.test_cases
SELECTED = _selected(_cases)
globals().update({name: case for name, case in _cases.items()
                  if any(n.startswith("test_") for n in vars(case))})


def test_selection_is_complete():
    counts = {p: len(names) for p, names in SELECTED.items()}
    assert counts == PATTERNS, counts
    assert sum(counts[p] for p in NODE_PATTERNS) == 59


def test_every_node_case_of_these_operators_is_selected():
    # every ONNX node case whose model uses only these operators, by op_type, not by name
    ops = {"AveragePool", "MaxPool", "LpPool", "MaxUnpool", "GlobalAveragePool",
           "GlobalMaxPool", "Pad"}
    ours = {case.name + "_cpu" for case in _node_cases() if case.model is not None
            and {n.op_type for n in case.model.graph.node} <= ops}
    selected = {name for p in NODE_PATTERNS for name in SELECTED[p]}
    assert ours == selected, (ours ^ selected)


def test_nothing_selected_is_skipped():
    for case in _cases.values():
        for name, fn in vars(case).items():
            if name.startswith("test_"):
                assert not getattr(fn, "__unittest_skip__", False), (
                    name, getattr(fn, "__unittest_skip_why__", ""))


if __name__ == "__main__":
    unittest.main()
