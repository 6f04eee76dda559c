"""The plan cache (src/dmlops/_plancache.py): a repeated call reuses its validated plan, and
nothing a caller can see changes.

- Reuse is never wrong: each operator is called in turn with inputs and outputs of other
  strides (views, negative strides, channels-last, unaligned), other dtypes and other
  parameters, cycling so that every call finds plans of its neighbours kept; each result is
  bit for bit the result of the same call with nothing kept, and the reference backend's.
- Errors are the same with or without a kept plan: an invalid call that resembles a kept
  valid one (an ``out=`` that overlaps the input or is read-only, a bool for an int, a
  changed array parameter) raises the class and message it raises with nothing kept.

No test here is timed: ``benchmarks/latency.py`` measures the speed.
"""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlops as dml
import oracles as O
from dmlops import _plancache

F32 = np.float32
RNG = np.random.default_rng(27)
# the backend under test: the compiled one where it is built
FAST = "cpu" if "cpu" in dml.backends() else "reference"


@pytest.fixture(autouse=True)
def _fresh_cache():
    _plancache.clear()
    yield
    _plancache.clear()


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    assert np.array_equal(O.bits(a), O.bits(b)), (a, b)


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def copies(r):
    return tuple(np.array(a) for a in as_tuple(r))


# --- layouts ------------------------------------------------------------------------------

def _unaligned(a):
    """``a``'s values in an array whose data is one byte off its element alignment."""
    raw = np.zeros(a.nbytes + 1, np.uint8)
    u = np.ndarray(a.shape, a.dtype, buffer=raw, offset=1)
    u[...] = a
    assert not u.flags.aligned or a.itemsize == 1
    return u


def _inside(a):
    """``a``'s values in a strided view (every other element of the last two axes)."""
    big = np.zeros(a.shape[:-2] + (2 * a.shape[-2], 2 * a.shape[-1]), a.dtype)
    v = big[..., ::2, 1::2]
    v[...] = a
    return v


LAYOUTS = {
    "c": lambda a: np.ascontiguousarray(a),
    "channels_last": lambda a: np.ascontiguousarray(np.moveaxis(a, 1, -1)).transpose(
        (0, a.ndim - 1) + tuple(range(1, a.ndim - 1))),
    "negative": lambda a: np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1],
    "strided": _inside,
    "fortran": np.asfortranarray,
    "unaligned": _unaligned,
    "big_endian": lambda a: a.astype(a.dtype.newbyteorder(">")),
}


def laid_out(a, layout):
    v = LAYOUTS[layout](a)
    assert np.array_equal(v, a)
    return v


def empty_out(shape, dtype, layout):
    """An ``out=`` array of the layout, filled with a sentinel that every result overwrites."""
    return laid_out(np.full(shape, 99, dtype), layout)


def values(shape, dtype, rng=RNG):
    """Small integers and halves, with ties: sums and averages of these are exact, so every
    result is bitwise the reference's (Lp pooling's roots aside)."""
    if np.dtype(dtype).kind == "f":
        return (rng.integers(-8, 9, size=shape) / 2).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(dtype)


# --- the calls ----------------------------------------------------------------------------
# Each case: (name, call(backend) -> results). A case builds its arrays once, so calling it
# again repeats the same call; its out= arrays are written again each time.

def _pool_cases():
    cases = []
    # (float32, int32 and uint32 share their strides, as float16 and int16 do: only the
    # dtype tells their plans apart)
    for dtype in (np.float32, np.int32, np.uint32, np.float64, np.float16, np.int16, np.int8):
        for layout in ("c", "channels_last", "negative", "strided", "unaligned", "big_endian"):
            x = laid_out(values((2, 3, 7, 6), dtype), layout)
            cases.append((f"max {np.dtype(dtype).name} {layout}",
                          lambda b, x=x: dml.max_pooling(x, 3, strides=2, start_padding=1,
                                                         end_padding=1, backend=b)))
            cases.append((f"max+indices {np.dtype(dtype).name} {layout}",
                          lambda b, x=x: dml.max_pooling(x, (3, 2), strides=(1, 2),
                                                         output_indices=True, backend=b)))
            if np.dtype(dtype).kind == "f":
                cases.append((f"average {np.dtype(dtype).name} {layout}",
                              lambda b, x=x: dml.average_pooling(
                                  x, 3, strides=2, start_padding=1, end_padding=1,
                                  include_padding=True, backend=b)))
    return cases


def _out_cases():
    """One input, outputs of every layout: the out= array's strides are part of the key."""
    cases = []
    x = values((2, 3, 7, 6), F32)
    for layout in ("c", "channels_last", "negative", "strided", "fortran", "unaligned",
                   "big_endian"):
        y = empty_out((2, 3, 4, 3), F32, layout)
        i = empty_out((2, 3, 4, 3), np.uint32, layout)
        cases.append((f"max out {layout}",
                      lambda b, y=y: dml.max_pooling(x, 3, strides=2, start_padding=1,
                                                     end_padding=1, out=y, backend=b)))
        cases.append((f"max pair out {layout}",
                      lambda b, y=y, i=i: dml.max_pooling(x, 3, strides=2, start_padding=1,
                                                          end_padding=1, output_indices=True,
                                                          out=(y, i), backend=b)))
        cases.append((f"average out {layout}",
                      lambda b, y=y: dml.average_pooling(x, 3, strides=2, start_padding=1,
                                                         end_padding=1, out=y, backend=b)))
    return cases


def _param_cases():
    """One input, other parameters (spelled as ints, tuples, lists and NumPy integers)."""
    x = values((1, 2, 8, 7), F32)
    dy = values((1, 2, 4, 4), F32)
    ws = [2, 3]
    return [
        ("window 2", lambda b: dml.max_pooling(x, 2, backend=b)),
        ("window (2, 3)", lambda b: dml.max_pooling(x, (2, 3), backend=b)),
        ("window [2, 3]", lambda b: dml.max_pooling(x, ws, backend=b)),
        ("window int64", lambda b: dml.max_pooling(x, np.int64(3), backend=b)),
        ("dilations", lambda b: dml.max_pooling(x, 2, dilations=(2, 1), backend=b)),
        ("F + 1", lambda b: dml.max_pooling(x, 3, strides=2, output_sizes=(4, 3),
                                            backend=b)),
        ("F + 1 full", lambda b: dml.max_pooling(x, 3, strides=2, output_sizes=(1, 2, 4, 3),
                                                 backend=b)),
        ("indices uint64", lambda b: dml.max_pooling(x, 2, output_indices=True,
                                                     indices_dtype=np.uint64, backend=b)),
        ("indices int64", lambda b: dml.max_pooling(x, 2, output_indices=True,
                                                    indices_dtype="int64", backend=b)),
        ("average", lambda b: dml.average_pooling(x, 3, start_padding=1, backend=b)),
        ("average include", lambda b: dml.average_pooling(x, 3, start_padding=1,
                                                          include_padding=True, backend=b)),
        ("lp 1", lambda b: dml.lp_pooling(x, 2, p=1, backend=b)),
        ("lp 2", lambda b: dml.lp_pooling(x, 2, p=2, backend=b)),
        ("lp 3", lambda b: dml.lp_pooling(x, 2, p=np.int8(3), backend=b)),
        ("max grad", lambda b: dml.max_pooling_grad(x, dy, 2, strides=2, backend=b)),
        ("max grad padded", lambda b: dml.max_pooling_grad(x, dy, 3, strides=2, start_padding=1,
                                                           end_padding=1, backend=b)),
        ("average grad", lambda b: dml.average_pooling_grad(dy, 2, input_sizes=(8, 7),
                                                            strides=2, backend=b)),
        ("average grad full", lambda b: dml.average_pooling_grad(
            dy, 3, input_sizes=(1, 2, 8, 7), strides=2, start_padding=1, end_padding=1,
            include_padding=True, backend=b)),
    ]


def _other_cases():
    """Unpooling, ROI pooling, quantized pooling and padding, each in several spellings."""
    x = values((1, 2, 6, 6), F32)
    y, idx = dml.max_pooling(x, 2, strides=2, output_indices=True)
    idx64 = dml.max_pooling(x, 2, strides=2, output_indices=True, indices_dtype=np.int64)[1]
    rois = np.array([[0, 0, 0, 4, 4], [0, 1, 2, 5, 5]], F32)
    q = values((1, 2, 6, 6), np.uint8)
    qi = values((1, 2, 6, 6), np.int8)
    s = np.array([0.5, 0.25], F32).reshape(1, 2, 1, 1)
    zp = np.array([3, 120], np.uint8).reshape(1, 2, 1, 1)
    xi = values((1, 2, 5, 4), np.int16)
    return [
        ("unpool", lambda b: dml.max_unpooling(y, idx, (1, 2, 6, 6), backend=b)),
        ("unpool int64", lambda b: dml.max_unpooling(y, idx64, (1, 2, 6, 6), backend=b)),
        ("unpool strided", lambda b: dml.max_unpooling(_inside(y), _inside(idx), (1, 2, 6, 6),
                                                       backend=b)),
        ("roi", lambda b: dml.roi_pooling(x, rois, spatial_scale=1.0, pooled_size=(2, 2),
                                          backend=b)),
        ("roi scale", lambda b: dml.roi_pooling(x, rois, spatial_scale=0.5, pooled_size=3,
                                                backend=b)),
        ("quantized", lambda b: dml.quantized_linear_average_pooling(q, 0.5, 3, 0.25, 120, 3,
                                                                     backend=b)),
        ("quantized per channel", lambda b: dml.quantized_linear_average_pooling(
            q, s, zp, 0.25, None, 3, start_padding=1, end_padding=1, backend=b)),
        ("quantized int8", lambda b: dml.quantized_linear_average_pooling(
            qi, 0.5, -3, 0.25, 7, 2, include_padding=True, backend=b)),
        ("quantized to int8", lambda b: dml.quantized_linear_average_pooling(
            q, 0.5, 3, 0.25, 7, 2, output_dtype=np.int8, backend=b)),
        ("pad reflection", lambda b: dml.padding(x, (0, 0, 2, 3), (0, 1, 3, 2),
                                                 mode="reflection", backend=b)),
        ("pad constant 0.0", lambda b: dml.padding(x, 1, 1, value=0.0, backend=b)),
        ("pad constant -0.0", lambda b: dml.padding(x, 1, 1, value=-0.0, backend=b)),
        ("pad constant 1", lambda b: dml.padding(x, 1, 1, value=1, backend=b)),
        ("pad constant True", lambda b: dml.padding(x, 1, 1, value=True, backend=b)),
        ("pad wrap", lambda b: dml.padding(x, (0, 0, 7, 1), (0, 0, 1, 9), mode="wrap",
                                           backend=b)),
        ("pad int16 edge", lambda b: dml.padding(xi, [0, 1, 2, 3], [1, 0, 3, 2], mode="EDGE",
                                                 backend=b)),
        ("pad int16 constant", lambda b: dml.padding(xi, 2, 1, value=-7.9, backend=b)),
        ("pad int16 channels-last", lambda b: dml.padding(laid_out(xi, "channels_last"), 2, 1,
                                                          mode="symmetric", backend=b)),
    ]


CASES = {"pooling layouts": _pool_cases, "out layouts": _out_cases,
         "parameters": _param_cases, "other operators": _other_cases}


def check_against_reference(name, got, want):
    for g, w in zip(got, want):
        if name.startswith("lp"):       # roots in float64, rounded once: within an ulp
            np.testing.assert_allclose(g, w, rtol=2e-7, err_msg=name)
        else:
            same_bits(g, w)


@pytest.mark.parametrize("group", list(CASES))
def test_alternating_calls_give_the_results_of_fresh_calls(group):
    cases = CASES[group]()
    fresh = {}
    for name, call in cases:            # nothing kept: each call planned from scratch
        _plancache.clear()
        fresh[name] = copies(call(FAST))
        check_against_reference(name, fresh[name], copies(call("reference")))
    _plancache.clear()
    for _ in range(3):                  # now every plan kept, neighbours' too
        for name, call in cases:
            for g, w in zip(copies(call(FAST)), fresh[name]):
                same_bits(g, w)
            check_against_reference(name, fresh[name], copies(call("reference")))
        assert len(_plancache._plans) > 0


def test_a_repeated_call_is_planned_once(monkeypatch):
    from dmlops import functional as F
    seen = []
    plan = F._plan_max_pooling

    def counting(*args, **params):
        seen.append((args, params))
        return plan(*args, **params)
    monkeypatch.setattr(F, "_plan_max_pooling", counting)
    x = values((1, 1, 8, 8), F32)
    y = np.empty((1, 1, 4, 4), F32)
    for _ in range(3):
        dml.max_pooling(x, 2, strides=2, out=y)
    assert len(seen) == 1
    dml.max_pooling(x[..., ::-1], 2, strides=2, out=y)     # other strides: planned again
    dml.max_pooling(x, 2, strides=np.int32(2), out=y)       # another type of int: again
    assert len(seen) == 3
    # the planner sees the arrays' facts, never the arrays
    assert all(isinstance(a, _plancache.ArrayFacts) for a in seen[0][0])


def test_every_caller_gives_a_planners_parameters_in_its_order(monkeypatch):
    """The plan cache keys a call's parameters by value alone, so each caller must give
    all of a planner's keyword-only parameters in the planner's order (a permuted order
    could meet another call's key)."""
    import inspect

    from dmlops import descs
    from dmlops import functional as F
    given = []

    def recording(planner, operands, params):
        given.append((planner, list(params)))
        return _plancache.planned(planner, operands, params)
    monkeypatch.setattr(F, "planned", recording)
    monkeypatch.setattr(descs, "planned", recording)
    x = values((1, 1, 6, 6), F32)
    y, i = dml.max_pooling(x, 2, strides=2, output_indices=True)
    dml.average_pooling(x, 2)
    dml.lp_pooling(x, 2)
    dml.max_pooling_grad(x, y, 2, strides=2)
    dml.average_pooling_grad(y, 2, strides=2, input_sizes=x.shape)
    dml.max_unpooling(y, i, x.shape)
    dml.roi_pooling(x, np.array([[0, 0, 0, 3, 3]], F32), spatial_scale=1.0, pooled_size=(2, 2))
    q = np.zeros((1, 1, 6, 6), np.uint8)
    dml.quantized_linear_average_pooling(q, 0.5, 0, 0.5, 0, 2)
    dml.padding(x, 1, 1, mode="edge")
    dml.padding_grad(x, (1, 1, 4, 4), (0, 0, 1, 1), (0, 0, 1, 1))
    dml.compile_operator(dml.MaxPoolingDesc(
        input_tensor=dml.TensorDesc("FLOAT32", x.shape),
        output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 5, 5)), window_size=(2, 2)))
    assert len({planner for planner, _ in given}) == 11
    for planner, names in given:
        own = [p.name for p in inspect.signature(planner).parameters.values()
               if p.kind is p.KEYWORD_ONLY]
        assert names == own, planner.__name__


def test_a_changed_list_or_array_parameter_is_not_reused():
    x = values((1, 2, 6, 6), F32)
    ws = [2, 2]
    first = dml.max_pooling(x, ws)
    ws[1] = 3
    same_bits(dml.max_pooling(x, ws), dml.max_pooling(x, (2, 3), backend="reference"))
    assert first.shape != dml.max_pooling(x, ws).shape
    q = values((1, 2, 6, 6), np.uint8)
    s = np.array([0.5, 0.25], F32).reshape(1, 2, 1, 1)
    before = dml.quantized_linear_average_pooling(q, s, None, 0.25, None, 2)
    s[0, 1] = 0.125                     # the same array object, other values
    after = dml.quantized_linear_average_pooling(q, s, None, 0.25, None, 2)
    same_bits(after, dml.quantized_linear_average_pooling(q, s.copy(), None, 0.25, None, 2,
                                                          backend="reference"))
    assert not np.array_equal(before, after)
    assert s[0, 1, 0, 0] == 0.125 and s.flags.writeable      # the caller's array untouched


def test_equal_but_different_values_are_different_keys():
    # 0.0 == -0.0 and True == 1, but they pad with other bits (True is 1 here: SPEC 3.9's
    # value conversion), and a bool is no window size.
    x = values((1, 1, 2, 2), F32)
    plus = dml.padding(x, 1, 1, value=0.0)
    minus = dml.padding(x, 1, 1, value=-0.0)
    assert O.bits(plus)[0, 0, 0, 0] == 0 and O.bits(minus)[0, 0, 0, 0] == 0x80000000
    dml.max_pooling(x, 1, strides=1)
    with pytest.raises(dml.InvalidArgumentError, match="strides"):
        dml.max_pooling(x, 1, strides=True)
    dml.max_pooling(x, 2)
    with pytest.raises(dml.InvalidArgumentError, match="window_size"):
        dml.max_pooling(x, 2.0)
    # inside sequences too (keyed element by element with their types)
    dml.max_pooling(x, (2, 1))
    for window in ((2, 1.0), [2, True], (2, np.float64(1))):
        with pytest.raises(dml.InvalidArgumentError, match="window_size"):
            dml.max_pooling(x, window)
    dml.padding(x, (0, 0, 1, 1), (0, 0, 1, 1))
    with pytest.raises(dml.InvalidArgumentError, match="start_padding"):
        dml.padding(x, (0, 0, True, 1), (0, 0, 1, 1))
    assert dml.padding(x, [0, 0, 1, 1], (0, 0, 1, 1)).shape == (1, 1, 4, 4)


def test_bounded(monkeypatch):
    monkeypatch.setattr(_plancache._plans, "size", 4)
    x = values((1, 1, 12, 12), F32)
    for w in range(1, 11):
        same_bits(dml.max_pooling(x, w), dml.max_pooling(x, w, backend="reference"))
        assert len(_plancache._plans) <= 4
    for w in range(1, 11):
        same_bits(dml.max_pooling(x, w), dml.max_pooling(x, w, backend="reference"))


def test_backend_and_threads_are_chosen_on_every_call(monkeypatch):
    x = values((1, 2, 9, 9), F32)
    want = dml.max_pooling(x, 3, backend="reference")
    for backend in ("cpu", "reference", "cpu"):
        if backend in dml.backends():
            monkeypatch.setenv("DMLOPS_BACKEND", backend)
            same_bits(dml.max_pooling(x, 3), want)
    monkeypatch.setenv("DMLOPS_BACKEND", "bogus")
    with pytest.raises(dml.UnsupportedError, match="DMLOPS_BACKEND = 'bogus'"):
        dml.max_pooling(x, 3)
    monkeypatch.delenv("DMLOPS_BACKEND")
    if "cpu" in dml.backends():
        for n in (1, 2, 3):
            dml.set_num_threads(n)
            try:
                same_bits(dml.max_pooling(x, 3, backend="cpu"), want)
            finally:
                dml.set_num_threads(None)


def test_a_kept_runner_takes_the_level_the_plain_switch_and_the_threads_anew(monkeypatch):
    """The cpu backend's runner of a planned call is kept with the plan (prepare_pooling,
    prepare_padding), but the level's module, the plain kernels and the thread count are
    chosen again at every call."""
    from dmlops.backends import cpu
    x = values((1, 2, 9, 9), F32)
    calls = [lambda: dml.max_pooling(x, 3, backend="cpu"),
             lambda: dml.average_pooling(x, 3, backend="cpu"),
             lambda: dml.padding(x, 1, 1, mode="edge", backend="cpu")]
    want = [np.array(call()) for call in calls]     # (planned, their runners prepared)
    real, seen = cpu.kernels(), []

    class Spy:      # the module of the level in use, each kernel's threads and plain switch seen
        def __getattr__(self, name):
            def kernel(*args):
                seen.append((name, args[-2], args[-1]))
                return getattr(real, name)(*args)
            return kernel

    monkeypatch.setattr(cpu, "kernels", Spy)
    monkeypatch.setattr(cpu, "FORCE_PLAIN", True)
    dml.set_num_threads(3)
    try:
        for call, bits in zip(calls, want):
            same_bits(call(), bits)
    finally:
        dml.set_num_threads(None)
    # (the window is bound anew to the module of the level in use: the spy here)
    kernels = [name for name, *_ in seen]
    assert kernels == ["Window", "max_pool", "Window", "average_pool", "padding"]
    assert [s for s in seen if s[0] != "Window"] == [
        ("max_pool", 3, True), ("average_pool", 3, True), ("padding", 3, True)]


def test_calls_from_several_threads():
    cases = _param_cases() + _other_cases()
    want = {name: copies(call(FAST)) for name, call in cases}
    _plancache.clear()
    errors = []

    def work(seed):
        order = np.random.default_rng(seed).permutation(len(cases))
        try:
            for i in np.concatenate([order, order]):
                name, call = cases[i]
                for g, w in zip(copies(call(FAST)), want[name]):
                    same_bits(g, w)
        except Exception as e:     # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# --- property: random sequences of calls ------------------------------------------------

@st.composite
def pooling_calls(draw):
    """A max or average pooling call over a small input of some dtype and layout, with an
    out= array of some layout or none."""
    op = draw(st.sampled_from(["max", "max_pair", "average"]))
    dtype = draw(st.sampled_from([np.float32, np.float64, np.float16] +
                                 ([np.int32, np.int8, np.uint16] if op != "average" else [])))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(2, 6)),
             draw(st.integers(2, 6)))
    w = draw(st.integers(1, 2))
    s = draw(st.integers(1, 2))
    a = draw(st.integers(0, 1))
    layout = draw(st.sampled_from(list(LAYOUTS)))
    out_layout = draw(st.sampled_from([None] + [k for k in LAYOUTS if k != "big_endian"]))
    spelling = draw(st.sampled_from(["int", "tuple", "list", "numpy"]))
    seed = draw(st.integers(0, 2**32 - 1))
    return op, dtype, shape, w, s, a, layout, out_layout, spelling, seed


def _run(call, backend):
    op, dtype, shape, w, s, a, layout, out_layout, spelling, seed = call
    k = len(shape) - 2
    spell = {"int": lambda v: v, "tuple": lambda v: (v,) * k, "list": lambda v: [v] * k,
             "numpy": np.int64}[spelling]
    x = laid_out(values(shape, dtype, np.random.default_rng(seed)), layout)
    kw = dict(strides=spell(s), start_padding=spell(a), end_padding=a, backend=backend)
    out_shape = dml.pooling_output_sizes(shape, w, strides=s, start_padding=a, end_padding=a)
    out = None
    if out_layout is not None:
        out = empty_out(out_shape, dtype, out_layout)
        if op == "max_pair":
            out = (out, empty_out(out_shape, np.uint32, out_layout))
    if op == "average":
        return copies(dml.average_pooling(x, spell(w), out=out, **kw))
    return copies(dml.max_pooling(x, spell(w), output_indices=op == "max_pair", out=out, **kw))


@settings(max_examples=40)
@given(st.lists(pooling_calls(), min_size=2, max_size=6))
def test_any_sequence_of_calls_gives_fresh_results(calls):
    backends = [b for b in ("cpu", "reference") if b in dml.backends()]
    fresh = []
    for c in calls:
        _plancache.clear()
        fresh.append({b: _run(c, b) for b in backends})
    _plancache.clear()
    for c, want in list(zip(calls, fresh)) * 2:     # twice: the second time, all kept
        for b in backends:
            for g, w in zip(_run(c, b), want[b]):
                same_bits(g, w)
            for g, w in zip(want[b], want["reference"]):
                same_bits(g, w)


# --- errors -------------------------------------------------------------------------------

def raised(call):
    with pytest.raises(dml.DmlError) as info:
        call()
    return type(info.value), str(info.value)


def _shared_bytes(shape, dtypes):
    """Arrays of ``dtypes`` (of one item size) over the same memory."""
    raw = np.zeros(int(np.prod(shape)) * np.dtype(dtypes[0]).itemsize, np.uint8)
    return [raw.view(d).reshape(shape) for d in dtypes]


def _read_only(shape, dtype):
    a = np.zeros(shape, dtype)
    a.flags.writeable = False
    return a


def _aliasing(shape, dtype):
    return np.lib.stride_tricks.as_strided(np.zeros(shape[-1], dtype), shape,
                                           (0,) * (len(shape) - 1) + (np.dtype(dtype).itemsize,))


X = values((1, 2, 6, 6), F32)
X_BUF = np.zeros((1, 2, 8, 8), F32)
X_IN = X_BUF[:, :, 1:7, 1:7]          # a view inside X_BUF
X_IN[...] = X
X_BUF2 = np.zeros((1, 2, 8, 8), F32)  # the same layout, other memory
X_IN2 = X_BUF2[:, :, 1:7, 1:7]
X_IN2[...] = X
Y_VALS, Y_IDX = _shared_bytes((1, 2, 3, 3), [F32, np.uint32])
Q = values((1, 2, 6, 6), np.uint8)
S = np.array([0.5, 0.25], F32).reshape(1, 2, 1, 1)
S_BAD = np.array([0.5, 0.0], F32).reshape(1, 2, 1, 1)
Y_SMALL, I_SMALL = dml.max_pooling(X, 2, strides=2, output_indices=True)
I_BAD = I_SMALL * 0 + np.uint32(72)   # one past the output's 72 elements

# (valid call, a resembling invalid call, words of the expected message)
ERRORS = {
    "out overlaps the input": (
        lambda: dml.padding(X_IN2, (0, 0, 1, 1), (0, 0, 1, 1), out=np.zeros((1, 2, 8, 8), F32)),
        lambda: dml.padding(X_IN, (0, 0, 1, 1), (0, 0, 1, 1), out=X_BUF),
        "out shares memory with x"),
    "out is the input": (
        lambda: dml.max_pooling(X, 1, out=np.zeros_like(X)),
        lambda: dml.max_pooling(X, 1, out=X),
        "out shares memory with x"),
    "the pair's arrays overlap": (
        lambda: dml.max_pooling(X, 2, strides=2, output_indices=True,
                                out=(np.zeros((1, 2, 3, 3), F32),
                                     np.zeros((1, 2, 3, 3), np.uint32))),
        lambda: dml.max_pooling(X, 2, strides=2, output_indices=True, out=(Y_VALS, Y_IDX)),
        "out[1] shares memory with out[0]"),
    "grad out overlaps dy": (
        lambda: dml.average_pooling_grad(X_IN2, 1, input_sizes=(6, 6),
                                         out=np.zeros((1, 2, 6, 6), F32)),
        lambda: dml.average_pooling_grad(X_IN, 1, input_sizes=(6, 6), out=X_IN),
        "out shares memory with dy"),
    "read-only out": (
        lambda: dml.average_pooling(X, 2, out=np.zeros((1, 2, 5, 5), F32)),
        lambda: dml.average_pooling(X, 2, out=_read_only((1, 2, 5, 5), F32)),
        "read-only"),
    "read-only indices": (
        lambda: dml.max_pooling(X, 2, output_indices=True,
                                out=(np.zeros((1, 2, 5, 5), F32),
                                     np.zeros((1, 2, 5, 5), np.uint32))),
        lambda: dml.max_pooling(X, 2, output_indices=True,
                                out=(np.zeros((1, 2, 5, 5), F32),
                                     _read_only((1, 2, 5, 5), np.uint32))),
        "out[1] is read-only"),
    "out with shared elements": (
        lambda: dml.lp_pooling(X, 2, out=np.zeros((1, 2, 5, 5), F32)),
        lambda: dml.lp_pooling(X, 2, out=_aliasing((1, 2, 5, 5), F32)),
        "share memory"),
    "wrong out shape": (
        lambda: dml.max_pooling(X, 2, out=np.zeros((1, 2, 5, 5), F32)),
        lambda: dml.max_pooling(X, 2, out=np.zeros((1, 2, 5, 4), F32)),
        "expected (1, 2, 5, 5)"),
    "wrong out dtype": (
        lambda: dml.padding(X, 1, 1, out=np.zeros((3, 4, 8, 8), F32)),
        lambda: dml.padding(X, 1, 1, out=np.zeros((3, 4, 8, 8), np.float64)),
        "dtype float64"),
    "out of another dtype of its size": (
        lambda: dml.max_pooling(X, 2, out=np.zeros((1, 2, 5, 5), F32)),
        lambda: dml.max_pooling(X, 2, out=np.zeros((1, 2, 5, 5), np.int32)),
        "out has dtype int32; expected float32"),
    "out a list": (
        lambda: dml.max_pooling(X, 2, out=np.zeros((1, 2, 5, 5), F32)),
        lambda: dml.max_pooling(X, 2, out=[np.zeros((1, 2, 5, 5), F32)]),
        "got list"),
    "a bool for an int": (
        lambda: dml.lp_pooling(X, 2, p=1),
        lambda: dml.lp_pooling(X, 2, p=True),
        "p = True"),
    "a float for an int": (
        lambda: dml.average_pooling(X, (2, 2)),
        lambda: dml.average_pooling(X, (2, 2.0)),
        "window_size[1] = 2.0"),
    "a scale made 0": (
        lambda: dml.quantized_linear_average_pooling(Q, S, None, 1.0, None, 2),
        lambda: dml.quantized_linear_average_pooling(Q, S_BAD, None, 1.0, None, 2),
        "input_scale contains 0.0"),
    "an index out of range": (
        lambda: dml.max_unpooling(Y_SMALL, I_SMALL, (1, 2, 6, 6)),
        lambda: dml.max_unpooling(Y_SMALL, I_BAD, (1, 2, 6, 6)),
        "outside the output's 72 elements"),
    "an ROI's batch index": (
        lambda: dml.roi_pooling(X, np.array([[0, 0, 0, 3, 3]], F32), spatial_scale=1.0,
                                pooled_size=2),
        lambda: dml.roi_pooling(X, np.array([[1, 0, 0, 3, 3]], F32), spatial_scale=1.0,
                                pooled_size=2),
        "batch index 1.0"),
    "an unknown backend": (
        lambda: dml.max_pooling(X, 2),
        lambda: dml.max_pooling(X, 2, backend="bogus"),
        "backend = 'bogus'"),
    "an empty input padded by reflection": (
        lambda: dml.padding(np.zeros((0, 2, 3), F32), (1, 0, 0), 0, mode="constant"),
        lambda: dml.padding(np.zeros((0, 2, 3), F32), (1, 0, 0), 0, mode="reflection"),
        "only constant padding"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_the_same_after_a_kept_valid_call(case):
    valid, invalid, words = ERRORS[case]
    _plancache.clear()
    cold = raised(invalid)
    assert words in cold[1], cold
    for _ in range(2):
        valid()
        assert raised(invalid) == cold
    assert raised(invalid) == cold      # the invalid call itself, repeated


def test_thread_count_error_after_a_kept_call(monkeypatch):
    if "cpu" not in dml.backends():
        pytest.skip("the cpu backend is not built")
    dml.max_pooling(X, 2, backend="cpu")
    monkeypatch.setenv("DMLOPS_NUM_THREADS", "0")
    got = raised(lambda: dml.max_pooling(X, 2, backend="cpu"))
    _plancache.clear()
    assert raised(lambda: dml.max_pooling(X, 2, backend="cpu")) == got
    assert "DMLOPS_NUM_THREADS = 0" in got[1]
