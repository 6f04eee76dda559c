"""Fuzzing the functions' arguments (issue 28): whatever a caller passes, a call returns or
raises dmlops's InvalidArgumentError or UnsupportedError, never another exception, and its
cost stays bounded (the machine's memory is taken to be 64 MiB here, so that an output a
parameter's value makes huge is refused rather than allocated).

CI draws a bounded number of examples, the same on every run (1,300 in all); a deep run draws
``DMLOPS_FUZZ_SCALE`` times as many, at random::

    DMLOPS_FUZZ_SCALE=50 HYPOTHESIS_PROFILE=explore python -m pytest tests/test_fuzz_arguments.py
"""

from __future__ import annotations

import copy
import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmlops as dml
from dmlops import tensor

# how many times CI's number of examples a run draws (a deep run: see above)
_SCALE = int(os.environ.get("DMLOPS_FUZZ_SCALE", "1"))

# Values a caller might pass anywhere: extremes, wrong kinds, near misses.
_ODD = [0, 1, 2, 3, -1, 2**31, 2**32 - 1, 2**32, 2**63, -2**63, 2**70, 1.5, float("nan"),
        float("inf"), True, None, "2", b"\xff", "", [], [1], [2, 2], [1, 2, 3, 4], (2, 0),
        [[1, 2], [3]], np.array([1, 2]), np.array(2.0), np.float32(2), np.int64(-3),
        np.array(["a"]), {"a": 1}, object()]
_ODD_SMALL = [v for v in _ODD if not (isinstance(v, int) and abs(v) > 2**20)]


def _inputs():
    """Mostly inputs the functions take (so that the parameters are what is tried), some
    not."""
    shapes = st.sampled_from([(1, 1, 4, 4), (2, 3, 5), (1, 1, 1), (1, 2, 3, 4, 2), (1, 1, 7),
                              (0, 2, 4), (1, 1, 4, 0), (4, 4)])
    good = st.sampled_from([np.float32, np.float16, np.float64, np.int8, np.uint8, np.int32])
    bad = st.sampled_from([np.int64, np.uint64, np.bool_, np.complex64])
    arrays = st.builds(lambda s, d: np.arange(np.prod(s)).reshape(s).astype(d), shapes,
                       st.one_of(good, good, good, bad))
    return st.one_of(arrays, arrays, arrays, arrays, st.sampled_from(_ODD_SMALL))


def _calls():
    odd = st.sampled_from(_ODD)
    small = st.sampled_from([1, 2, 3, (2, 2), (1, 2), 0, (0, 1), 2**16])
    value = st.one_of(small, small, odd)
    kw = st.fixed_dictionaries({}, optional={
        "strides": value, "start_padding": value, "end_padding": value, "dilations": value,
        "output_sizes": value})
    return st.one_of(
        st.tuples(st.just("average_pooling"), _inputs(), value,
                  kw.map(lambda k: {**k, "include_padding": True})),
        st.tuples(st.just("max_pooling"), _inputs(), value,
                  st.builds(lambda k, o: {**k, "output_indices": o}, kw,
                            st.sampled_from([True, False, 1, np.array([1, 2]), "yes"]))),
        st.tuples(st.just("lp_pooling"), _inputs(), value,
                  st.builds(lambda k, p: {**k, "p": p}, kw, value)),
        st.tuples(st.just("padding"), _inputs(), value,
                  st.builds(lambda e, m, v: {"end_padding": e, "mode": m, "value": v}, value,
                            st.sampled_from(["constant", "edge", "reflection", "symmetric",
                                             "wrap", "bogus", b"\xff", 3]), value)),
    )


@settings(max_examples=400 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(call=_calls())
def test_only_dmlops_errors_escape_the_functions(call, monkeypatch):
    monkeypatch.setattr(tensor, "memory_bytes", lambda: 64 << 20)
    name, x, first, kw = call
    fn = getattr(dml, name)
    before = x.copy() if isinstance(x, np.ndarray) else None
    try:
        fn(x, first, **kw, backend="cpu")
    except (dml.InvalidArgumentError, dml.UnsupportedError):
        pass
    except Exception as e:          # noqa: BLE001  (what the test is looking for)
        pytest.fail(f"{name}({x!r:.60}, {first!r:.40}, {kw!r:.200}) raised "
                    f"{type(e).__name__}: {e}")
    # the caller's input is never written, whatever the call did
    assert before is None or before.tobytes() == x.tobytes()


def _explain_calls():
    """explain's arguments: an operator (or not), sizes instead of arrays, the functions'
    keywords and explain's own (outputs, values, ceil_mode), odd values among them."""
    odd = st.sampled_from(_ODD_SMALL)
    sizes = st.one_of(st.sampled_from([(1, 1, 4, 4), (2, 3, 5), (1, 1, 1), (1, 1, 2, 3, 2),
                                       (3,), (1, 1, 0), (1, 1, 100), (1, 1, 2**62, 2)]), odd)
    small = st.sampled_from([1, 2, 3, (2, 2), (1, 2), 0, (0, 1)])
    value = st.one_of(small, small, odd)
    outputs = st.sampled_from([None, [(0, 0)], [(-1, -1)], [0], [(9, 9)], "abc", [[]], 2])
    values = st.sampled_from([None, np.arange(16).reshape(4, 4), np.arange(5), "abc",
                              np.array([np.nan, np.inf, -1e300, 2.5, 0]), [[1, 2]]])
    kw = st.fixed_dictionaries({}, optional={
        "strides": value, "start_padding": value, "end_padding": value, "dilations": value,
        "output_sizes": value, "include_padding": st.sampled_from([True, False, "yes"]),
        "outputs": outputs, "values": values, "ceil_mode": st.sampled_from([True, False, 1]),
        "mode": st.sampled_from(["reflection", "symmetric", "wrap", "bogus", 3])})
    ops = st.sampled_from(["average_pooling", "max_pooling", "lp_pooling", "padding",
                           "average_pooling_grad", "max_pooling_grad", "max_unpooling",
                           "conv", 3])
    return st.tuples(ops, sizes, st.lists(value, max_size=3), kw)


@settings(max_examples=200 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(call=_explain_calls())
def test_only_dmlops_errors_escape_explain(call):
    """dmlops.explain_text (the geometry the figure draws too) takes any arguments: it
    returns its diagram or raises dmlops's errors."""
    op, sizes, args, kw = call
    try:
        dml.explain_text(op, sizes, *args, **kw)
    except (dml.InvalidArgumentError, dml.UnsupportedError):
        pass
    except Exception as e:          # noqa: BLE001  (what the test is looking for)
        pytest.fail(f"explain_text({op!r}, {sizes!r:.60}, {args!r:.60}, {kw!r:.200}) raised "
                    f"{type(e).__name__}: {e}")


def _node_calls():
    ints = st.lists(st.sampled_from([0, 1, 2, 3, -1, 2**31, 2**40]), max_size=5)
    attr = st.one_of(ints, st.sampled_from([0, 1, 2, -1, 2.5, "", "SAME_UPPER", "VALID",
                                            "NOTSET", "bogus", b"\xff", "reflect", "edge"]))
    names = st.sampled_from(["kernel_shape", "strides", "pads", "dilations", "auto_pad",
                             "ceil_mode", "count_include_pad", "storage_order", "p", "mode"])
    attrs = st.dictionaries(names, attr, max_size=5)
    ops = st.sampled_from(["MaxPool", "AveragePool", "LpPool", "GlobalMaxPool", "Pad",
                           "MaxUnpool"])
    second = st.sampled_from([None, np.array([0, 0, 1, 1, 0, 0, 1, 1]), np.array([1, 2.5]),
                              np.zeros((1, 1, 2, 2), np.int64), np.array([2**40] * 8), "x"])
    return st.tuples(ops, attrs, _inputs(), second)


@settings(max_examples=300 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(call=_node_calls())
def test_only_dmlops_errors_escape_onnx_nodes(call, monkeypatch):
    helper = pytest.importorskip("onnx").helper
    dox = pytest.importorskip("dmlops.onnx")
    monkeypatch.setattr(tensor, "memory_bytes", lambda: 64 << 20)
    op, attrs, x, second = call
    inputs = ["x"] if second is None else ["x", "s"]
    try:
        node = helper.make_node(op, inputs, ["y"], **attrs)
    except (ValueError, TypeError):
        return                      # (onnx itself refuses to build such a node)
    values = [x] if second is None else [x, second]
    try:
        dox.run_node(node, values, backend="cpu")
    except (dml.InvalidArgumentError, dml.UnsupportedError):
        pass
    except Exception as e:          # noqa: BLE001
        pytest.fail(f"{op} {attrs!r:.200} on {x!r:.60}, {second!r:.40} raised "
                    f"{type(e).__name__}: {e}")


_EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.json"))
_LEAF = [0, -1, 1, 2**32, 2**64, 1.5, float("nan"), "", "x", "FLOAT16", "UINT64", "nan", None,
         True, [], [0], [1, 2, 3], {}, {"valueCount": 2**40, "value": 0},
         {"sourcePath": "missing.npy"}, "DML_OPERATOR_PADDING", "o\ud800.npy", "a" * 300]


def _paths(node, at=()):
    """Every place in a decoded JSON document: (path, value)."""
    yield at, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, at + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, at + (i,))


def _mutated(model, picks):
    """``model`` with some places replaced by odd values, removed, duplicated (a list's item
    twice, or a dictionary's value also under its neighbour's key) or nested (the value
    inside lists or dictionaries, up to 60 deep)."""
    for n, leaf, how in picks:
        places = [p for p, _ in _paths(model) if p]
        path = places[n % len(places)]
        parent = model
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        if how == "remove" and isinstance(parent, dict):
            del parent[key]
        elif how == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif how == "duplicate":
            keys = list(parent)
            parent[keys[(keys.index(key) + 1) % len(keys)]] = copy.deepcopy(parent[key])
        elif how == "nest":
            value = parent[key]
            for depth in range(n % 60 + 1):
                value = [value] if depth % 2 else {"value": value}
            parent[key] = value
        else:
            parent[key] = copy.deepcopy(leaf)
    return model


@settings(max_examples=300 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.integers(0, len(_EXAMPLES) - 1),
       picks=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_LEAF),
                                st.sampled_from(["replace", "remove", "duplicate", "nest"])),
                      min_size=1, max_size=3))
def test_only_model_errors_escape_dxdispatch_models(which, picks, tmp_path_factory,
                                                    monkeypatch):
    """Fuzzed DxDispatch models (the examples with places replaced, removed, duplicated or
    nested) run or fail with a located ModelError, never another exception, and a failed
    model writes nothing."""
    from dmlops.dxdispatch import ModelError, parse_model
    monkeypatch.setattr(tensor, "memory_bytes", lambda: 64 << 20)
    folder = tmp_path_factory.mktemp("model")
    monkeypatch.chdir(folder)
    model = _mutated(json.loads(_EXAMPLES[which].read_text()), picks)
    try:
        parse_model(model, _EXAMPLES[which].parent).run(io.StringIO())
    except ModelError:
        assert list(folder.iterdir()) == []
    except Exception as e:          # noqa: BLE001
        pytest.fail(f"{_EXAMPLES[which].name} with {picks!r:.300} raised "
                    f"{type(e).__name__}: {e}")


@settings(max_examples=100 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.integers(0, len(_EXAMPLES) - 1),
       picks=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_LEAF),
                                st.sampled_from(["replace", "remove", "duplicate", "nest"])),
                      min_size=1, max_size=3))
def test_only_model_errors_escape_dmlops_explain(which, picks, monkeypatch):
    """`dmlops explain` on fuzzed models: its diagram, or a ModelError or dmlops's error
    (exit 2), never another exception."""
    from dmlops._explain import model_geometries, render_text
    from dmlops.dxdispatch import ModelError, parse_model
    monkeypatch.setattr(tensor, "memory_bytes", lambda: 64 << 20)
    model = _mutated(json.loads(_EXAMPLES[which].read_text()), picks)
    try:
        render_text(model_geometries(parse_model(model, _EXAMPLES[which].parent), None)[0])
    except (ModelError, dml.DmlError):
        pass
    except Exception as e:          # noqa: BLE001
        pytest.fail(f"{_EXAMPLES[which].name} with {picks!r:.300} raised "
                    f"{type(e).__name__}: {e}")
