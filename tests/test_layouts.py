"""Memory layouts, out=, empty tensors, strided description bindings and backend selection.

SPEC 4.1: "Inputs of any memory layout (non-contiguous, channels-last, negative NumPy strides)
are read in place; the library never changes the caller's arrays." SPEC 7: "any byte order is
read correctly; read-only and zero-stride views are fine". SPEC 5: each window is summed in a
fixed order, so even average pooling gives the same bits whatever the layout.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dmlops as dml
import oracles as O

F32 = np.float32
RNG = np.random.default_rng(20240611)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype.kind == b.dtype.kind and a.dtype.itemsize == b.dtype.itemsize
    a = a.astype(a.dtype.newbyteorder("="))
    b = b.astype(b.dtype.newbyteorder("="))
    assert np.array_equal(O.bits(a), O.bits(b)), (a, b)


def ops(dtype):
    """Every functional operator, as f(x) -> tuple of results, for a given input dtype."""
    kw = dict(strides=(2, 1), start_padding=(1, 0), end_padding=(2, 1))
    res = {
        "max_pooling": lambda x: dml.max_pooling(x, (3, 2), output_indices=True, **kw),
        "padding": lambda x: (dml.padding(x, (0, 1, 2, 3), (1, 0, 3, 2), mode="reflection"),
                              dml.padding(x, 1, 2, mode="constant", value=7),
                              dml.padding(x, (0, 1, 9, 1), (1, 0, 3, 12), mode="wrap")),
    }
    if np.dtype(dtype).kind == "f":
        res["average_pooling"] = lambda x: (dml.average_pooling(x, (3, 2), include_padding=True,
                                                                **kw),
                                            dml.average_pooling(x, 2, dilations=(2, 1)))
        res["max_pooling_grad"] = lambda x: (dml.max_pooling_grad(
            x, np.arange(np.prod(dml.pooling_output_sizes(x.shape, (3, 2), **kw)),
                         dtype=np.dtype(dtype).newbyteorder("=")).reshape(
                dml.pooling_output_sizes(x.shape, (3, 2), **kw)), (3, 2), **kw),)
    elif np.dtype(dtype).itemsize == 1:
        res["quantized"] = lambda x: (dml.quantized_linear_average_pooling(
            x, 0.5, None, 0.25, None, (3, 2), include_padding=True, **kw),)
    return res


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def data(dtype, shape=(2, 3, 5, 6)):
    if np.dtype(dtype).kind == "f":
        # Ties and signed zeros included; values that make float sums order-sensitive.
        vals = np.array([1, 2, -0.0, 0.0, 1e8, -1e8, 0.1, 3, 3, -7.5], np.float64)
        with np.errstate(over="ignore"):         # 1e8 is inf in float16
            return RNG.choice(vals, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)


LAYOUTS = {
    "channels_last": lambda x: np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
    "sliced": lambda x: _embed(x, (slice(None), slice(None), slice(1, None, 2),
                                   slice(None, None, 3))),
    "negative_strides": lambda x: np.ascontiguousarray(x[:, ::-1, ::-1, ::-1])[:, ::-1, ::-1,
                                                                                 ::-1],
    "fortran": lambda x: np.asfortranarray(x),
    "read_only": lambda x: _readonly(x),
    "big_endian": lambda x: x.astype(x.dtype.newbyteorder(">")),
}


def _embed(x, sl):
    """x as a strided view into a larger buffer (every 2nd row, every 3rd column)."""
    shape = list(x.shape)
    shape[2], shape[3] = 2 * shape[2] + 1, 3 * shape[3]
    big = np.zeros(shape, x.dtype)
    view = big[sl]
    view[...] = x
    assert not view.flags.c_contiguous
    return view


def _readonly(x):
    y = x.copy()
    y.flags.writeable = False
    return y


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int16, np.uint8,
                                   np.int8, np.uint64])
def test_any_layout_same_bits(layout, dtype):
    x = data(dtype)
    v = LAYOUTS[layout](x)
    assert np.array_equal(v, x)
    before = v.copy()
    for name, f in ops(dtype).items():
        want = as_tuple(f(x))
        got = as_tuple(f(v))
        for g, w in zip(got, want):
            same_bits(g, w)       # indices are logical flat indices, not memory offsets
    assert np.array_equal(O.bits(v.astype(v.dtype.newbyteorder("="))),
                          O.bits(before.astype(before.dtype.newbyteorder("="))))


def test_zero_stride_broadcast_input():
    row = np.array([3, 1, 4, 1, 5, 9], F32)
    b = np.broadcast_to(row, (2, 2, 4, 6))
    assert b.strides[:3] == (0, 0, 0) and not b.flags.writeable
    full = np.ascontiguousarray(b)
    for f in ops(F32).values():
        for g, w in zip(as_tuple(f(b)), as_tuple(f(full))):
            same_bits(g, w)


def test_big_endian_quantized_parameters():
    x = data(np.uint8, (1, 2, 4, 4))
    s = np.array([0.5, 0.25], ">f4").reshape(1, 2, 1, 1)
    want = dml.quantized_linear_average_pooling(x, s.astype("<f4"), None, 1.0, None, 2)
    same_bits(dml.quantized_linear_average_pooling(x, s, None, 1.0, None, 2), want)
    same_bits(dml.quantized_linear_average_pooling(x, s, None, np.array(1.0, ">f8"), None, 2),
              want)


def test_list_and_zero_d_inputs():
    # SPEC 7: "Inputs go through np.asarray (lists and 0-d arrays work where the shape is
    # valid)".
    lst = [[[1.0, 5.0, 2.0, 4.0]]]
    same_bits(dml.max_pooling(lst, 2), dml.max_pooling(np.asarray(lst), 2))
    same_bits(dml.padding([[1, 2], [3, 4]], 1, 1, mode="edge"),
              np.pad(np.asarray([[1, 2], [3, 4]]), 1, mode="edge"))
    same_bits(dml.max_pooling_grad(lst, [[[1.0, 2.0, 3.0]]], 2),
              np.array([[[0, 1.0 + 2.0, 0, 3.0]]]))
    # 0-d scales and zero points: "a scalar, shape ()" (SPEC 7).
    x = np.array([[[10, 20, 30, 40]]], np.uint8)
    same_bits(dml.quantized_linear_average_pooling(x, np.array(0.5), np.array(2, np.uint8),
                                                   np.array(1.0, F32), np.array(1, np.uint8), 2),
              dml.quantized_linear_average_pooling(x, 0.5, 2, 1.0, np.uint8(1), 2))
    # 0-d where the shape is not valid: padding has 1 to 8 dimensions.
    with pytest.raises(dml.UnsupportedError):
        dml.padding(np.float32(1.0), (), ())


@pytest.mark.parametrize("shape", [(0, 2, 4, 4), (2, 0, 4, 4), (0, 0, 3), (0, 1, 2, 2, 2)])
def test_empty_batch_or_channel(shape):
    # SPEC 7: "the functional API returns an empty result when N or C is 0".
    x = np.zeros(shape, F32)
    k = len(shape) - 2
    want = shape[:2] + tuple(s - 1 for s in shape[2:])
    v, i = dml.max_pooling(x, 2, output_indices=True)
    assert v.shape == want and i.shape == want and v.dtype == F32 and i.dtype == np.uint32
    assert dml.average_pooling(x, 2).shape == want
    assert dml.max_pooling_grad(x, np.zeros(want, F32), 2).shape == shape
    assert dml.quantized_linear_average_pooling(x.astype(np.int8), 1.0, 0, 1.0, 0, 2).shape \
        == want
    assert dml.max_pooling(x, (2,) * k, output_sizes=want).shape == want


@pytest.mark.parametrize("shape", [(1, 1, 0, 4), (1, 1, 3, 0), (2, 2, 0)])
def test_empty_spatial_dimension_is_invalid(shape):
    # SPEC 7: "a spatial size of 0 ... is an InvalidArgumentError".
    x = np.zeros(shape, F32)
    with pytest.raises(dml.InvalidArgumentError):
        dml.max_pooling(x, 1)
    with pytest.raises(dml.InvalidArgumentError):
        dml.average_pooling(x, 1)


# --- out= ---------------------------------------------------------------------------------

def strided_out(shape, dtype, kind, fill=99):
    """An out= array of the given logical shape with unusual strides, inside a sentinel-filled
    base buffer; returns (out, base)."""
    if kind == "every_other":
        base = np.full(shape[:-1] + (2 * shape[-1] + 1,), fill, dtype)
        return base[..., 1::2], base
    if kind == "channels_last":
        base = np.full((shape[0],) + shape[2:] + (shape[1],), fill, dtype)
        return base.transpose((0, len(shape) - 1) + tuple(range(1, len(shape) - 1))), base
    if kind == "reversed":
        base = np.full(shape, fill, dtype)
        return base[..., ::-1], base
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["every_other", "channels_last", "reversed"])
def test_out_with_arbitrary_strides(kind):
    # SPEC 4.1: "it writes into a given array of the right shape and dtype (any strides) and
    # returns it"; two outputs: out is a pair (values, indices).
    x = data(F32, (2, 3, 5, 4))
    kw = dict(strides=2, start_padding=1, end_padding=(0, 2))
    want_v, want_i = dml.max_pooling(x, 3, output_indices=True, **kw)
    v, vb = strided_out(want_v.shape, F32, kind)
    i, ib = strided_out(want_v.shape, np.uint32, kind)
    r = dml.max_pooling(x, 3, output_indices=True, out=(v, i), **kw)
    assert r[0] is v and r[1] is i
    same_bits(v, want_v)
    same_bits(i, want_i)
    if kind == "every_other":
        assert (vb[..., 0::2] == 99).all() and (ib[..., 0::2] == 99).all()   # not addressed

    y, yb = strided_out(want_v.shape, F32, kind)
    assert dml.max_pooling(x, 3, out=y, **kw) is y
    same_bits(y, want_v)
    want = dml.average_pooling(x, 3, **kw)
    y, yb = strided_out(want.shape, F32, kind)
    assert dml.average_pooling(x, 3, out=y, **kw) is y
    same_bits(y, want)
    dy = data(F32, want.shape)
    want = dml.max_pooling_grad(x, dy, 3, **kw)
    y, yb = strided_out(want.shape, F32, kind)
    assert dml.max_pooling_grad(x, dy, 3, out=y, **kw) is y
    same_bits(y, want)
    want = dml.padding(x, 1, (0, 1, 2, 3), mode="symmetric")
    y, yb = strided_out(want.shape, F32, kind)
    assert dml.padding(x, 1, (0, 1, 2, 3), mode="symmetric", out=y) is y
    same_bits(y, want)
    xq = data(np.int8, (2, 3, 5, 4))
    want = dml.quantized_linear_average_pooling(xq, 0.5, 1, 0.25, 3, 3, **kw)
    y, yb = strided_out(want.shape, np.int8, kind)
    assert dml.quantized_linear_average_pooling(xq, 0.5, 1, 0.25, 3, 3, out=y, **kw) is y
    same_bits(y, want)


def test_out_selects_quantized_output_type():
    # SPEC 7: "Output type: output_dtype, else out.dtype, else the output zero point's type,
    # else the input's".
    x = np.array([[[10, 20, 30, 40, 50]]], np.int8)
    out = np.zeros((1, 1, 2), np.uint8)
    r = dml.quantized_linear_average_pooling(x, 1.0, 0, 1.0, 0, 2, strides=2, out=out)
    assert r is out and out.tolist() == [[[15, 35]]]


# --- description layer: strided and flat bindings (SPEC 4.2, 7) ----------------------------

def mp2(in_desc, out_desc, idx_desc=None, window=(2, 2)):
    kw = {"output_indices_tensor": idx_desc} if idx_desc is not None else {}
    return dml.compile_operator(dml.MaxPooling2Desc(
        input_tensor=in_desc, output_tensor=out_desc, strides=(1, 1), window_size=window,
        start_padding=(0, 0), end_padding=(0, 0), dilations=(1, 1), **kw))


def test_zero_stride_broadcast_input_as_flat_buffer():
    # SPEC 1.2: "A zero stride broadcasts along that dimension"; flat index over the logical
    # sizes, never the memory strides (SPEC 2).
    buf = np.array([3, 1, 4, 1, 5], F32)
    sizes = (1, 2, 3, 5)
    op = mp2(dml.TensorDesc("FLOAT32", sizes, (0, 0, 0, 1)), dml.TensorDesc("FLOAT32",
                                                                           (1, 2, 2, 4)),
             dml.TensorDesc("UINT32", (1, 2, 2, 4)))
    out = op.execute(input_tensor=buf)
    v, i = dml.max_pooling(np.broadcast_to(buf, sizes), 2, output_indices=True)
    same_bits(out["output_tensor"], v)
    same_bits(out["output_indices_tensor"], i)
    assert out["output_tensor"].flags.c_contiguous


def test_padded_row_output_buffer():
    # SPEC 7: "Elements of an output buffer that its strides do not address are never
    # written"; the minimum buffer is sum((sizes-1)*strides) + 1 = 5 + 1 + 1 = 7 elements.
    x = data(F32, (1, 1, 3, 3))
    want_v, want_i = dml.max_pooling(x, 2, output_indices=True)
    op = mp2(dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
             dml.TensorDesc("FLOAT32", (1, 1, 2, 2), (10, 10, 5, 1)),
             dml.TensorDesc("UINT64", (1, 1, 2, 2), (10, 10, 5, 1)))
    for n in (7, 12):
        buf = np.full(n, -5, F32)
        ibuf = np.full(n, 77, np.uint64)
        op.execute(input_tensor=x, output_tensor=buf, output_indices_tensor=ibuf)
        addressed = [0, 1, 5, 6]
        same_bits(buf[addressed], want_v.reshape(-1))
        same_bits(ibuf[addressed], want_i.reshape(-1).astype(np.uint64))
        rest = np.setdiff1d(np.arange(n), addressed)
        assert (buf[rest] == -5).all() and (ibuf[rest] == 77).all()
    # SPEC 7: "outputs the caller did not bind are new C-contiguous arrays of sizes".
    out = op.execute(input_tensor=x)
    assert out["output_tensor"].shape == (1, 1, 2, 2)
    assert out["output_tensor"].flags.c_contiguous
    same_bits(out["output_tensor"], want_v)
    same_bits(out["output_indices_tensor"], want_i.astype(np.uint64))


def test_flat_buffers_without_strides():
    # SPEC 7: "A 1-D binding whose shape differs from sizes ... is a flat buffer"; no strides
    # means packed row-major (SPEC 1.2).
    x = data(F32, (1, 2, 3, 3))
    op = mp2(dml.TensorDesc("FLOAT32", (1, 2, 3, 3)), dml.TensorDesc("FLOAT32", (1, 2, 2, 2)))
    out = np.full(8, -1, F32)
    r = op.execute(input_tensor=x.reshape(-1), output_tensor=out)
    same_bits(out, dml.max_pooling(x, 2).reshape(-1))
    assert np.shares_memory(r["output_tensor"], out)
    longer = np.full(11, -1, F32)            # larger buffers are fine; the tail is untouched
    op.execute(input_tensor=np.concatenate([x.reshape(-1), [9e9] * 4]).astype(F32),
               output_tensor=longer)
    same_bits(longer[:8], dml.max_pooling(x, 2).reshape(-1))
    assert (longer[8:] == -1).all()


def test_channels_last_strides_in_a_description():
    # SPEC 1.2: "channels-last data is described by strides, not by reordering sizes".
    N, C, H, W = 2, 3, 4, 5
    nhwc = data(F32, (N, H, W, C))
    sizes, strides = (N, C, H, W), (H * W * C, 1, W * C, C)
    desc = dml.AveragePooling1Desc(
        input_tensor=dml.TensorDesc("FLOAT32", sizes, strides),
        output_tensor=dml.TensorDesc("FLOAT32", (N, C, 2, 3), (6 * C, 1, 3 * C, C)),
        strides=(2, 2), window_size=(2, 2), start_padding=(0, 1), end_padding=(1, 0),
        dilations=(1, 1), include_padding=False)
    buf = np.zeros(N * 2 * 3 * C, F32)
    dml.compile_operator(desc).execute(input_tensor=nhwc.reshape(-1), output_tensor=buf)
    want = dml.average_pooling(nhwc.transpose(0, 3, 1, 2), 2, strides=2, start_padding=(0, 1),
                               end_padding=(1, 0))
    same_bits(buf.reshape(N, 2, 3, C).transpose(0, 3, 1, 2), want)


def test_padding_desc_strided_bindings():
    x = data(np.int16, (3, 4))
    desc = dml.Padding1Desc(
        input_tensor=dml.TensorDesc("INT16", (3, 4), (1, 3)),          # column-major input
        output_tensor=dml.TensorDesc("INT16", (5, 7), (8, 1)),         # padded rows
        padding_mode="SYMMETRIC", padding_value_data_type="INT16", padding_value=0,
        start_padding=(1, 2), end_padding=(1, 1))
    buf = np.full(40, 1234, np.int16)
    dml.compile_operator(desc).execute(input_tensor=x.T.reshape(-1), output_tensor=buf)
    got = buf.reshape(5, 8)
    same_bits(got[:, :7], np.pad(x, [(1, 1), (2, 1)], mode="symmetric"))
    assert (got[:, 7] == 1234).all()


def test_quantized_desc_broadcast_scale():
    # A {1, C, 1, 1} scale tensor with zero strides, bound as a one-element buffer.
    x = data(np.uint8, (1, 3, 3, 3))
    one = (1, 1, 1, 1)
    desc = dml.QuantizedLinearAveragePoolingDesc(
        input_tensor=dml.TensorDesc("UINT8", x.shape),
        input_scale_tensor=dml.TensorDesc("FLOAT32", (1, 3, 1, 1), (0, 0, 0, 0)),
        output_scale_tensor=dml.TensorDesc("FLOAT32", one),
        output_tensor=dml.TensorDesc("UINT8", (1, 3, 2, 2)), strides=(1, 1), window_size=(2, 2),
        start_padding=(0, 0), end_padding=(0, 0), dilations=(1, 1), include_padding=False)
    out = dml.compile_operator(desc).execute(input_tensor=x, input_scale_tensor=np.array([0.5],
                                                                                      F32),
                                             output_scale_tensor=np.ones(one, F32))
    same_bits(out["output_tensor"],
              dml.quantized_linear_average_pooling(x, 0.5, None, 1.0, None, 2))


def test_execute_any_layout_bindings():
    # Bindings of the description's sizes may have any NumPy layout (read-only, negative or
    # transposed strides); an output binding is written in place and returned.
    x = data(F32, (2, 3, 4, 5))
    x.flags.writeable = False
    op = mp2(dml.TensorDesc("FLOAT32", (2, 3, 4, 5)), dml.TensorDesc("FLOAT32", (2, 3, 3, 4)),
             dml.TensorDesc("UINT32", (2, 3, 3, 4)))
    want = dml.max_pooling(x, 2, output_indices=True)
    for view in (x, x[:, :, ::-1, :][:, :, ::-1, :], LAYOUTS["channels_last"](x),
                 LAYOUTS["sliced"](x)):
        out = op.execute(input_tensor=view)
        same_bits(out["output_tensor"], want[0])
        same_bits(out["output_indices_tensor"], want[1])
    for kind in ("every_other", "channels_last", "reversed"):
        v, vb = strided_out((2, 3, 3, 4), F32, kind)
        i, ib = strided_out((2, 3, 3, 4), np.uint32, kind)
        out = op.execute(input_tensor=x, output_tensor=v, output_indices_tensor=i)
        same_bits(v, want[0])
        same_bits(i, want[1])
        assert np.shares_memory(out["output_tensor"], v)
        if kind == "every_other":
            assert (vb[..., 0::2] == 99).all()


# --- backends (SPEC 5) ---------------------------------------------------------------------

def test_backends_tuple():
    b = dml.backends()
    assert isinstance(b, tuple) and "reference" in b and all(isinstance(n, str) for n in b)


@pytest.mark.parametrize("name", [n for n in ("no-such-backend", "cuda", "cpu", "numba")
                                  if n not in dml.backends()])
def test_unknown_backend_keyword(name):
    x = data(F32, (1, 1, 3, 3))
    calls = [lambda: dml.max_pooling(x, 2, backend=name),
             lambda: dml.average_pooling(x, 2, backend=name),
             lambda: dml.max_pooling_grad(x, np.ones((1, 1, 2, 2), F32), 2, backend=name),
             lambda: dml.quantized_linear_average_pooling(x.astype(np.uint8), 1.0, None, 1.0,
                                                          None, 2, backend=name),
             lambda: dml.padding(x, 1, 1, backend=name),
             lambda: dml.compile_operator(dml.MaxPoolingDesc(
                 input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
                 output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)), strides=(1, 1),
                 window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0)), backend=name)]
    for call in calls:
        with pytest.raises(dml.UnsupportedError):
            call()


@pytest.mark.parametrize("name", dml.backends())
def test_each_backend_by_keyword(name):
    x = data(F32, (1, 2, 4, 4))
    same_bits(dml.max_pooling(x, 2, backend=name), O.max_pooling(x, 2)[0])


SELECTION_SCRIPT = textwrap.dedent("""
    import os
    import numpy as np
    import dmlops as dml

    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    desc = dml.MaxPoolingDesc(input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
                              output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
                              strides=(1, 1), window_size=(2, 2), start_padding=(0, 0),
                              end_padding=(0, 0))

    def fails(f):
        try:
            f()
        except dml.UnsupportedError as e:
            return str(e)
        return None

    # The environment variable is read at call time (set after import here).
    os.environ["DMLOPS_BACKEND"] = "bogus-env"
    msg = fails(lambda: dml.max_pooling(x, 2))
    assert msg is not None and "bogus-env" in msg, msg
    assert fails(lambda: dml.compile_operator(desc)) is not None
    # backend= wins over the environment.
    dml.max_pooling(x, 2, backend="reference")
    dml.compile_operator(desc, backend="reference").execute(input_tensor=x)
    # set_backend wins over the environment ...
    dml.set_backend("reference")
    dml.max_pooling(x, 2)
    dml.padding(x, 1, 1)
    dml.compile_operator(desc).execute(input_tensor=x)
    # ... and backend= wins over set_backend.
    assert fails(lambda: dml.max_pooling(x, 2, backend="bogus-kw")) is not None
    # An unknown name for set_backend: an UnsupportedError, now or at the next call, never a
    # silent fallback.
    assert fails(lambda: (dml.set_backend("bogus-set"), dml.max_pooling(x, 2))) is not None
    print("SELECTION-OK")
""")


def test_backend_selection_order():
    # SPEC 5: "backend= ... wins, then dml.set_backend(name) (process-wide), then the
    # environment variable DMLOPS_BACKEND (read at call time)". A subprocess keeps the
    # process-wide choice away from the other tests.
    env = dict(os.environ)
    env.pop("DMLOPS_BACKEND", None)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", SELECTION_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "SELECTION-OK" in r.stdout, r.stdout + r.stderr


def test_env_backend_at_startup():
    # DMLOPS_BACKEND set before the process starts: a valid name works, an unknown one fails.
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    code = ("import numpy as np, dmlops as dml\n"
            "x = np.zeros((1, 1, 2, 2), np.float32)\n"
            "try:\n    dml.max_pooling(x, 2)\n    print('RAN')\n"
            "except dml.UnsupportedError:\n    print('UNSUPPORTED')\n")
    for value, want in (("reference", "RAN"), ("bogus", "UNSUPPORTED")):
        env = dict(os.environ, DMLOPS_BACKEND=value)
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.stdout.strip() == want, r.stdout + r.stderr
