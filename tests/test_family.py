"""The rest of the pooling family (SPEC 3.2, 3.6, 3.7, 3.8): worked examples, edge rules,
both API layers, feature levels and errors. Randomised checks against independent oracles
are in test_family_properties.py."""

import numpy as np
import pytest

import dmlops as dml
from test_errors import expect

Inv, Uns = dml.InvalidArgumentError, dml.UnsupportedError
F32 = np.float32
BACKENDS = ["reference", "cpu"]


def td(dtype, sizes, strides=None):
    return dml.TensorDesc(dtype, sizes, strides)


def plane(values, dtype=F32):
    a = np.array(values, dtype)
    return a.reshape((1, 1) + a.shape)


# --- AVERAGE_POOLING_GRAD ------------------------------------------------------------------

SPEC_DY = plane([[1, 2], [3, 4]])
SPEC_DX = [[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_average_pooling_grad_spec_example(backend, dtype):
    dx = dml.average_pooling_grad(SPEC_DY.astype(dtype), 2, input_sizes=(3, 3), backend=backend)
    assert dx.dtype == dtype and dx[0, 0].tolist() == SPEC_DX
    full = dml.average_pooling_grad(SPEC_DY.astype(dtype), 2, input_sizes=(1, 1, 3, 3),
                                    backend=backend)
    assert np.array_equal(full, dx)


@pytest.mark.parametrize("backend", BACKENDS)
def test_average_pooling_grad_desc(backend):
    desc = dml.AveragePoolingGradDesc(
        input_gradient_tensor=td("FLOAT32", (1, 1, 2, 2)),
        output_gradient_tensor=td("FLOAT32", (1, 1, 3, 3)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        include_padding=False)
    assert (desc.operator_type, desc.operator_type_value) == (
        "DML_OPERATOR_AVERAGE_POOLING_GRAD", 130)
    op = dml.compile_operator(desc, feature_level="3.0", backend=backend)
    out = op.execute(input_gradient_tensor=SPEC_DY)
    assert out["output_gradient_tensor"][0, 0].tolist() == SPEC_DX


@pytest.mark.parametrize("backend", BACKENDS)
def test_average_pooling_grad_padding_and_phantom(backend):
    # 1-D input 4, window 3, stride 2, padding 1+1: F = 2, F + 1 = 3 reaches a phantom
    dy = np.array([6.0, 6.0, 6.0], F32).reshape(1, 1, 3)
    ex = dml.average_pooling_grad(dy, 3, input_sizes=(4,), strides=2, start_padding=1,
                                  end_padding=1, backend=backend)
    # windows: {pad,0,1} -> 2 real; {1,2,3} -> 3 real; {3,pad,phantom} -> 1 real
    assert ex.ravel().tolist() == [3, 3 + 2, 2, 2 + 6]
    inc = dml.average_pooling_grad(dy, 3, input_sizes=(4,), strides=2, start_padding=1,
                                   end_padding=1, include_padding=True, backend=backend)
    # divisors 3, 3 and 2 (real + padding, the phantom position is not counted)
    assert inc.ravel().tolist() == [2, 2 + 2, 2, 2 + 3]


def test_average_pooling_grad_dilations_are_extended_only():
    dy = np.ones((1, 1, 2, 2), F32)
    dx = dml.average_pooling_grad(dy, 2, input_sizes=(4, 4), dilations=2)
    assert dx[0, 0].tolist() == [[0.25] * 4] * 4
    desc = dml.AveragePoolingGradDesc(
        input_gradient_tensor=td("FLOAT32", (1, 1, 2, 2)),
        output_gradient_tensor=td("FLOAT32", (1, 1, 4, 4)), window_size=(2, 2), dilations=2)
    dml.compile_operator(desc)
    expect(Uns, lambda: dml.compile_operator(desc, "6.4"), words=("dilations", "extended"))


def test_average_pooling_grad_errors():
    dy = np.ones((1, 1, 2, 2), F32)
    expect(Inv, lambda: dml.average_pooling_grad(dy, 2, input_sizes=(4, 4)), [dy],
           words=("dy.shape[2] = 2", "3 (floor) or 4"))
    expect(Inv, lambda: dml.average_pooling_grad(dy, 2, input_sizes=(3, 3, 3)), [dy],
           words=("input_sizes", "expected 2"))
    expect(Inv, lambda: dml.average_pooling_grad(dy, 2, input_sizes=(2, 1, 3, 3)), [dy],
           words=("input_sizes[0] = 2", "dy's N"))
    expect(Inv, lambda: dml.average_pooling_grad(dy, 2, input_sizes=(3, 0)), [dy],
           words=("input_sizes[1] = 0",))
    expect(Uns, lambda: dml.average_pooling_grad(dy.astype(np.int32), 2, input_sizes=(3, 3)),
           words=("INT32",))
    out = np.zeros((1, 1, 3, 3), np.float64)
    expect(Uns, lambda: dml.average_pooling_grad(dy, 2, input_sizes=(3, 3), out=out), [out],
           words=("out", "float64"))
    with pytest.raises(TypeError):
        dml.average_pooling_grad(dy, 2)                  # input_sizes is required


# --- LP_POOLING ----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_lp_pooling_values(backend, dtype):
    x = plane([[1, 0, 3], [0, 0, 4], [6, -8, 8]], dtype)
    assert dml.lp_pooling(x, 2, backend=backend)[0, 0].tolist() == [[1, 5], [10, 12]]
    assert dml.lp_pooling(x, 2, p=1, backend=backend)[0, 0].tolist() == [[1, 7], [14, 20]]
    # p = 3 of (3, 4, 5): 216^(1/3) = 6
    y = dml.lp_pooling(np.array([3, 4, 5], dtype).reshape(1, 1, 3), 3, p=3, backend=backend)
    assert y.ravel().tolist() == [6]


@pytest.mark.parametrize("backend", BACKENDS)
def test_lp_pooling_scaling_neither_underflows_nor_overflows(backend):
    # float32: 1e-30 squared underflows and 1e30 squared overflows; the scaled sum does not
    for v in (1e-30, 1e30, 1e-44):
        x = np.full((1, 1, 4), v, F32)
        y = dml.lp_pooling(x, 4, p=2, backend=backend)
        assert y.ravel()[0] == np.float32(2 * np.float64(np.float32(v))), v
    tiny = np.full((1, 1, 2), 6e-8, np.float16)          # float16 subnormals
    assert dml.lp_pooling(tiny, 2, p=2, backend=backend).ravel()[0] == np.float16(
        np.sqrt(2) * np.float64(np.float16(6e-8)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_lp_pooling_special_values(backend):
    x = np.array([1, np.inf, 2, -np.inf, 3, np.nan, 0, 0], F32).reshape(1, 1, 8)
    y = dml.lp_pooling(x, 2, strides=2, p=2, backend=backend).ravel()
    assert y[0] == np.inf and y[1] == np.inf and np.isnan(y[2]) and y[3] == 0
    assert not np.signbit(y[3])
    # a window with no real element (all padding) gives 0
    z = dml.lp_pooling(np.ones((1, 1, 1), F32), 2, start_padding=3, end_padding=0,
                       strides=1, backend=backend).ravel()
    assert z.tolist() == [0, 0, 1]


@pytest.mark.parametrize("p", [0, -1, 2.0, True, "2", None])
def test_lp_pooling_bad_p(p):
    x = np.ones((1, 1, 3, 3), F32)
    expect(Inv, lambda: dml.lp_pooling(x, 2, p=p), [x], words=("lp_pooling", "p = "))


def test_lp_pooling_desc_and_levels():
    x = plane([[1, 0, 3], [0, 0, 4], [6, -8, 8]])
    kw = dict(input_tensor=td("FLOAT32", (1, 1, 3, 3)), output_tensor=td("FLOAT32", (1, 1, 2, 2)),
              strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0), p=2)
    d0 = dml.LpPoolingDesc(**kw)
    d1 = dml.LpPooling1Desc(**kw, dilations=(1, 1))
    assert (d0.operator_type_value, d1.operator_type_value) == (57, 165)
    y0 = dml.compile_operator(d0, "1.0").execute(input_tensor=x)["output_tensor"]
    y1 = dml.compile_operator(d1, "6.2").execute(input_tensor=x)["output_tensor"]
    assert y0[0, 0].tolist() == y1[0, 0].tolist() == [[1, 5], [10, 12]]
    expect(Uns, lambda: dml.compile_operator(d1, "6.1"), words=("LP_POOLING1", "6.2"))
    expect(Inv, lambda: dml.compile_operator(dml.LpPoolingDesc(**{**kw, "p": 0})),
           words=("LP_POOLING", "p = 0"))
    expect(Uns, lambda: dml.compile_operator(d0, "1.0").execute(
        input_tensor=x, output_tensor=np.zeros((1, 1, 2, 2), np.float64)), words=("float64",))
    expect(Uns, lambda: dml.compile_operator(dml.LpPoolingDesc(**{
        **kw, "input_tensor": td("FLOAT64", (1, 1, 3, 3)),
        "output_tensor": td("FLOAT64", (1, 1, 2, 2))}), "6.4"), words=("FLOAT64",))


# --- MAX_UNPOOLING -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("idt", [np.uint32, np.uint64, np.int32, np.int64])
def test_max_unpooling_later_wins_and_empty_skipped(backend, idt):
    x = np.array([1, 2, 3, 4, 5], F32).reshape(1, 1, 5)
    idx = np.array([4, 0, 4, 2, 0], idt).reshape(1, 1, 5)
    y = dml.max_unpooling(x, idx, (1, 1, 6), backend=backend)
    assert y.ravel().tolist() == [5, 0, 4, 0, 3, 0]
    if idt is not np.int32:
        empty = {np.uint32: 2**32 - 1, np.uint64: 2**64 - 1, np.int64: -1}[idt]
        idx[0, 0, 1] = np.array(empty).astype(idt)
        idx[0, 0, 4] = np.array(empty).astype(idt)
        y = dml.max_unpooling(x, idx, (1, 1, 6), backend=backend)
        assert y.ravel().tolist() == [0, 0, 4, 0, 3, 0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int8, np.uint16, np.int64])
def test_max_unpooling_round_trip(backend, dtype):
    rng = np.random.default_rng(7)
    x = rng.permutation(2 * 3 * 6 * 4).astype(dtype).reshape(2, 3, 6, 4)
    y, i = dml.max_pooling(x, 2, strides=2, output_indices=True)
    back = dml.max_unpooling(y, i, x.shape, backend=backend)
    mask = np.zeros(x.size, bool)
    mask[i.ravel()] = True
    assert np.array_equal(back.ravel(), np.where(mask, x.ravel(), 0).astype(dtype))
    # indices may cross planes: one sequential pass, later still wins
    cross = i.copy()
    cross[0, 0, 0, 0] = x.size - 1
    z = dml.max_unpooling(y, cross, x.shape, backend=backend)
    winner = y.ravel()[-1] if i.ravel()[-1] == x.size - 1 else y[0, 0, 0, 0]
    assert z.ravel()[-1] == winner
    assert z.ravel()[i[0, 0, 0, 0]] == 0 or i[0, 0, 0, 0] == x.size - 1


def test_max_unpooling_bad_index_raises_before_writing():
    x = np.ones((1, 1, 2, 2), F32)
    out = np.full((1, 1, 3, 3), 7, F32)
    for bad, idt in ((9, np.uint32), (2**32 - 2, np.uint32), (-2, np.int64), (-1, np.int32)):
        idx = np.array([0, 1, bad, 3]).astype(idt).reshape(1, 1, 2, 2)
        msg = expect(Inv, lambda: dml.max_unpooling(x, idx, (1, 1, 3, 3), out=out),
                     [x, idx, out], words=("max_unpooling", "indices[0, 0, 1, 0]", "9 elements"))
        assert str(np.array(bad).astype(idt)) in msg


def test_max_unpooling_shape_and_type_errors():
    x = np.ones((1, 2, 2, 2), F32)
    idx = np.zeros((1, 2, 2, 2), np.uint32)
    expect(Inv, lambda: dml.max_unpooling(x, idx[:, :, :1], (1, 2, 4, 4)), [x, idx],
           words=("indices", "sizes"))
    expect(Inv, lambda: dml.max_unpooling(x, idx, (1, 3, 4, 4)), words=("output_sizes[1] = 3",))
    expect(Inv, lambda: dml.max_unpooling(x, idx, (4, 4)), words=("output_sizes", "expected 4"))
    expect(Uns, lambda: dml.max_unpooling(x, idx.astype(np.int16), (1, 2, 4, 4)),
           words=("INT16",))
    expect(Uns, lambda: dml.max_unpooling(x, idx.astype(np.float32), (1, 2, 4, 4)),
           words=("FLOAT32",))
    expect(Uns, lambda: dml.max_unpooling(x, idx[0], (1, 2, 4, 4)), words=("3-D",))
    expect(Uns, lambda: dml.max_unpooling(x[0, 0], idx[0, 0], (4, 4)), words=("2-D",))


def test_max_unpooling_desc_and_levels():
    def desc(data="FLOAT32", idx="UINT32", rank=4):
        s = (1, 1) + (2,) * (rank - 2)
        o = (1, 1) + (4,) * (rank - 2)
        return dml.MaxUnpoolingDesc(input_tensor=td(data, s), indices_tensor=td(idx, s),
                                    output_tensor=td(data, o))
    d = desc()
    assert (d.operator_type, d.operator_type_value) == ("DML_OPERATOR_MAX_UNPOOLING", 92)
    x = np.array([1, 2, 3, 4], F32).reshape(1, 1, 2, 2)
    idx = np.array([0, 5, 10, 15], np.uint32).reshape(1, 1, 2, 2)
    y = dml.compile_operator(d, "2.0").execute(input_tensor=x, indices_tensor=idx)
    assert np.array_equal(y["output_tensor"].ravel(), np.diag([1, 2, 3, 4]).ravel())
    expect(Uns, lambda: dml.compile_operator(d, "1.0"), words=("MAX_UNPOOLING", "2.0"))
    expect(Uns, lambda: dml.compile_operator(desc("INT8"), "4.1"), words=("INT8", "5.0"))
    dml.compile_operator(desc("INT8"), "5.0")
    expect(Uns, lambda: dml.compile_operator(desc(idx="UINT64"), "4.1"), words=("UINT64",))
    expect(Uns, lambda: dml.compile_operator(desc(idx="INT64"), "6.4"), words=("INT64",))
    expect(Uns, lambda: dml.compile_operator(desc(rank=5), "6.4"), words=("5-D",))
    dml.compile_operator(desc(rank=5))
    dml.compile_operator(desc("FLOAT64", "INT64", rank=3))
    bad = np.array([0, 5, 16, 15], np.uint32).reshape(1, 1, 2, 2)
    out = np.full((1, 1, 4, 4), 3, F32)
    expect(Inv, lambda: dml.compile_operator(d).execute(input_tensor=x, indices_tensor=bad,
                                                        output_tensor=out),
           [out], words=("indices_tensor[0, 0, 1, 0] = 16",))


# --- ROI_POOLING ---------------------------------------------------------------------------

X16 = np.arange(16, dtype=F32).reshape(1, 1, 4, 4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_roi_pooling_bins(backend, dtype):
    x = X16.astype(dtype)
    rois = np.array([[0, 0, 0, 3, 3], [0, 1, 1, 2, 2], [0, 2, 0, 3, 0]], dtype)
    y = dml.roi_pooling(x, rois, spatial_scale=1.0, pooled_size=(2, 2), backend=backend)
    assert y.shape == (3, 1, 2, 2) and y.dtype == dtype
    assert y[0, 0].tolist() == [[5, 7], [13, 15]]
    assert y[1, 0].tolist() == [[5, 6], [9, 10]]
    # a 1-row region in 2 bins: rows [0, 1) and [0, 1) (floor / ceil of 0.5 and 1)
    assert y[2, 0].tolist() == [[2, 3], [2, 3]]
    same = dml.roi_pooling(x, rois.reshape(1, 1, 3, 5), spatial_scale=1.0, pooled_size=2,
                           backend=backend)
    assert np.array_equal(same, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_roi_pooling_rounding_scale_batch_and_clipping(backend):
    x = np.stack([X16[0], -X16[0]])                       # N = 2
    # scale 0.5: corners 1*0.5 = 0.5 -> 1, 5*0.5 = 2.5 -> 3 (half away from zero)
    y = dml.roi_pooling(x, np.array([[0, 1, 1, 5, 5]], F32), spatial_scale=0.5,
                        pooled_size=(1, 1), backend=backend)
    assert y.ravel().tolist() == [15]
    # batch 1.9 truncates to 1; -0.5 truncates to 0
    y = dml.roi_pooling(x, np.array([[1.9, 0, 0, 1, 1], [-0.5, 0, 0, 1, 1]], F32),
                        spatial_scale=1.0, pooled_size=(1, 1), backend=backend)
    assert y.ravel().tolist() == [0, 5]
    # negative corners round away from zero (-1.5 -> -2); bins clipped; empty bins give 0
    y = dml.roi_pooling(x, np.array([[0, -1.5, -1.5, 0, 0]], F32), spatial_scale=1.0,
                        pooled_size=(3, 3), backend=backend)
    assert y[0, 0].tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
    # an inverted box has width and height 1 at (x1, y1)
    y = dml.roi_pooling(x, np.array([[0, 2, 3, 0, 0]], F32), spatial_scale=1.0,
                        pooled_size=(2, 2), backend=backend)
    assert y[0, 0].tolist() == [[14, 14], [14, 14]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_roi_pooling_nan_and_ties(backend):
    x = np.array([[-0.0, 0.0, np.nan], [1, np.nan, 1]], F32).reshape(1, 1, 2, 3)
    rois = np.array([[0, 0, 0, 1, 0], [0, 0, 0, 2, 1]], F32)
    y = dml.roi_pooling(x, rois, spatial_scale=1.0, pooled_size=(1, 1), backend=backend)
    assert np.signbit(y[0, 0, 0, 0]) and y[0, 0, 0, 0] == 0       # first of the tied zeros
    assert np.isnan(y[1, 0, 0, 0])


def test_roi_pooling_errors():
    x = X16
    rois = np.array([[0, 0, 0, 3, 3]], F32)
    kw = dict(spatial_scale=1.0, pooled_size=(2, 2))
    for b in (1.0, -1.0, 5.5):
        expect(Inv, lambda: dml.roi_pooling(x, np.array([[b, 0, 0, 1, 1]], F32), **kw),
               [x], words=("roi_pooling", "rois[0]", "batch index", "[0, 1)"))
    expect(Inv, lambda: dml.roi_pooling(x, np.array([[np.nan, 0, 0, 1, 1]], F32), **kw),
           words=("NaN",))
    expect(Inv, lambda: dml.roi_pooling(x, np.array([[0, np.inf, 0, 1, 1]], F32), **kw),
           words=("x1", "finite"))
    for s in (0.0, -1.0, float("nan"), float("inf"), 1e39, True, "1"):
        expect(Inv, lambda: dml.roi_pooling(x, rois, spatial_scale=s, pooled_size=2),
               words=("spatial_scale",))
    for ps, word in (((0, 2), "pooled_size[0] = 0"), ((2, 2, 2), "expected 2"),
                     (2.0, "pooled_size")):
        expect(Inv, lambda: dml.roi_pooling(x, rois, spatial_scale=1.0, pooled_size=ps),
               words=(word,))
    expect(Inv, lambda: dml.roi_pooling(x, rois[:, :4], **kw), words=("(R, 5)",))
    expect(Uns, lambda: dml.roi_pooling(x, rois.astype(np.float64), **kw),
           words=("rois", "FLOAT64", "must match"))
    expect(Uns, lambda: dml.roi_pooling(x[0], rois, **kw), words=("3-D",))
    out = np.zeros((1, 1, 2, 2), F32)
    bad = np.array([[3, 0, 0, 3, 3]], F32)
    expect(Inv, lambda: dml.roi_pooling(x, bad, out=out, **kw), [x, bad, out],
           words=("batch index 3.0",))


def test_roi_pooling_desc_and_levels():
    def desc(dt="FLOAT32", out=(2, 1, 2, 2), scale=1.0):
        return dml.RoiPoolingDesc(input_tensor=td(dt, (1, 1, 4, 4)),
                                  roi_tensor=td(dt, (1, 1, 2, 5)), output_tensor=td(dt, out),
                                  spatial_scale=scale, pooled_size=(2, 2))
    d = desc()
    assert (d.operator_type, d.operator_type_value) == ("DML_OPERATOR_ROI_POOLING", 59)
    rois = np.array([0, 0, 0, 3, 3, 0, 1, 1, 2, 2], F32).reshape(1, 1, 2, 5)
    y = dml.compile_operator(d, "1.0").execute(input_tensor=X16, roi_tensor=rois)
    assert y["output_tensor"].ravel().tolist() == [5, 7, 13, 15, 5, 6, 9, 10]
    expect(Inv, lambda: dml.compile_operator(desc(out=(2, 1, 3, 2))),
           words=("output_tensor.sizes", "[2, 1, 2, 2]"))
    expect(Inv, lambda: dml.compile_operator(desc(scale=0.0)), words=("spatial_scale",))
    expect(Uns, lambda: dml.compile_operator(desc("FLOAT64", (2, 1, 2, 2)), "6.4"),
           words=("FLOAT64",))
    dml.compile_operator(desc("FLOAT64"))
    bad_roi = dml.RoiPoolingDesc(input_tensor=td("FLOAT32", (1, 1, 4, 4)),
                                 roi_tensor=td("FLOAT32", (1, 2, 2, 5)),
                                 output_tensor=td("FLOAT32", (2, 1, 2, 2)),
                                 spatial_scale=1.0, pooled_size=(2, 2))
    expect(Inv, lambda: dml.compile_operator(bad_roi), words=("roi_tensor.sizes",))
    mixed = dml.RoiPoolingDesc(input_tensor=td("FLOAT32", (1, 1, 4, 4)),
                               roi_tensor=td("FLOAT16", (1, 1, 2, 5)),
                               output_tensor=td("FLOAT32", (2, 1, 2, 2)),
                               spatial_scale=1.0, pooled_size=(2, 2))
    expect(Uns, lambda: dml.compile_operator(mixed), words=("roi_tensor", "FLOAT16"))


# --- dmlops run ----------------------------------------------------------------------------

def _model_errors():
    from test_cli import example
    unpool = example("max_unpooling.json")
    unpool["commands"] = unpool["commands"][1:]             # indices from the resource
    unpool["resources"]["indices"]["initialValues"] = [0, 5, 99, 3]
    roi = example("roi_pooling.json")
    roi["resources"]["rois"]["initialValues"] = [0, 0, 0, 3, 3, 2, 1, 1, 2, 2]
    roi_size = example("roi_pooling.json")
    del roi_size["dispatchables"]["roi_pool"]["desc"]["PooledSize"]["Width"]
    lp = example("lp_pooling.json")
    del lp["dispatchables"]["l2_pool"]["desc"]["P"]
    grad = example("average_pooling_grad.json")
    grad["dispatchables"]["avg_grad"]["desc"]["Dilations"] = [1, 3]
    return [
        (unpool, "commands[0].bindings.IndicesTensor", "= 99 is outside"),
        (roi, "commands[0].bindings.ROITensor", "batch index 2.0"),
        (roi_size, "dispatchables.roi_pool.desc.PooledSize.Width", "missing"),
        (lp, "dispatchables.l2_pool.desc.P", "missing"),
        (grad, "dispatchables.avg_grad.desc.WindowSize[1]", "dilation 3"),
    ]


@pytest.mark.parametrize("number", range(5))
def test_run_errors_name_the_json_location(number, capsys, tmp_path):
    from test_cli import run_cli, write_model
    model, where, what = _model_errors()[number]
    rc, out, err = run_cli(capsys, "run", str(write_model(tmp_path, model)))
    assert rc == 2 and where in err and what in err, err
