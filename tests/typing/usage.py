"""A typed use of the public API: tests/test_typing.py type-checks this file with
``mypy --strict`` (every ``assert_type`` must hold) and runs it (every call must work).

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray
from typing_extensions import assert_type

import dmlops as dml

F32 = NDArray[np.float32]
Indices = NDArray[Union[np.uint32, np.uint64, np.int64]]


def functions() -> None:
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)

    assert_type(dml.average_pooling(x, 2, strides=2, include_padding=True), F32)
    assert_type(dml.lp_pooling(x, (2, 2), p=1, dilations=1), F32)
    assert_type(dml.max_pooling(x, 2), F32)
    assert_type(dml.max_pooling(x, 2, output_indices=False), F32)
    y, i = dml.max_pooling(x, 2, output_indices=True, indices_dtype="uint64")
    assert_type(y, F32)
    assert_type(i, Indices)
    flag = bool(len(x))         # known at run time only: either result
    assert_type(dml.max_pooling(x, 2, output_indices=flag), Union[F32, tuple[F32, Indices]])
    assert_type(dml.max_pooling(x, 2, output_indices=True, indices_dtype=np.uint64,
                                out=(np.empty_like(y), np.empty_like(i))), tuple[F32, Indices])

    assert_type(dml.max_pooling_grad(x, y, 2), F32)
    assert_type(dml.average_pooling_grad(y, 2, input_sizes=(4, 4)), F32)
    assert_type(dml.max_unpooling(y, i, (1, 1, 4, 4)), F32)
    rois = np.array([[0, 0, 0, 3, 3]], np.float32)
    assert_type(dml.roi_pooling(x, rois, spatial_scale=1.0, pooled_size=(2, 2)), F32)

    q = np.array([[10, 20], [30, 41]], np.uint8).reshape(1, 1, 2, 2)
    assert_type(dml.quantized_linear_average_pooling(q, 0.5, 0, 0.25, 3, 2),
                NDArray[Union[np.int8, np.uint8]])

    v = np.array([1, 2, 3], np.int8)
    assert_type(dml.padding(v, 2, 2, mode="reflection"), NDArray[np.int8])
    assert_type(dml.padding(v, [1], [1], mode="DML_PADDING_MODE_WRAP"), NDArray[np.int8])
    assert_type(dml.padding(v, 1, 1, mode=dml.PaddingMode.EDGE, value=-1), NDArray[np.int8])
    assert_type(dml.padding(v, 1, 1, mode=2), NDArray[np.int8])
    assert_type(dml.padding([1.0, 2.0], 1, 1, out=np.empty(4)), NDArray[Any])   # array-likes

    assert_type(dml.pooling_output_sizes((1, 1, 9, 9), 3, strides=2, ceil_mode=True),
                tuple[int, ...])
    assert_type(dml.onnx_pads((1, 1, 5, 5), 2, auto_pad="SAME_UPPER"),
                tuple[tuple[int, ...], tuple[int, ...]])
    assert_type(dml.explain_text("average_pooling", (1, 1, 5), 2, strides=2, ceil_mode=True),
                str)
    assert_type(dml.explain("padding", (3,), 5, 5, mode="symmetric"), Figure)


def description_layer() -> None:
    desc = dml.MaxPooling2Desc(
        input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
        output_tensor=dml.TensorDesc(np.float32, (1, 1, 2, 2)),
        output_indices_tensor=dml.TensorDesc(dml.DataType.UINT32, (1, 1, 2, 2)),
        strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
        dilations=(1, 1))
    op = dml.compile_operator(desc, feature_level="6.4")
    assert_type(op, dml.CompiledOperator)
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    assert_type(op.execute(input_tensor=x), dict[str, NDArray[Any]])
    pad = dml.Padding1Desc(input_tensor=dml.TensorDesc("INT8", (3,)),
                           output_tensor=dml.TensorDesc("INT8", (5,)),
                           padding_mode="symmetric", start_padding=(1,), end_padding=(1,))
    for level in (dml.FeatureLevel.L5_0, "DML_FEATURE_LEVEL_6_4", 0x6400, None, "extended"):
        dml.compile_operator(pad, feature_level=level)


def settings() -> None:
    assert_type(dml.backends(), tuple[str, ...])
    assert_type(dml.get_backend(), str)
    dml.set_backend("reference")
    dml.set_backend(None)
    dml.set_num_threads(2)
    assert_type(dml.get_num_threads(), int)
    dml.set_num_threads(None)
    try:
        dml.padding(np.zeros(3), 1, 1, mode="constant", value=float("nan"), backend="cuda")
    except dml.UnsupportedError as e:
        assert_type(e, dml.UnsupportedError)


class LazyArray:
    """Stands in for a Dask array (what the functions need of one: chunks and a graph)."""

    chunks: tuple[tuple[int, ...], ...] = ((1,),)

    def __dask_graph__(self) -> dict[str, Any]:
        return {}


class Tensor:
    """Stands in for a PyTorch tensor."""

    requires_grad = False

    def detach(self) -> Tensor:
        return self

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return None


def other_array_kinds(lazy: LazyArray, tensor: Tensor) -> None:
    """(Type-checked only: a Dask array in gives a Dask array out, a tensor a tensor.)"""
    assert_type(dml.average_pooling(lazy, 2, chunks="auto"), LazyArray)
    assert_type(dml.max_pooling(lazy, 2, output_indices=True), tuple[LazyArray, LazyArray])
    assert_type(dml.padding(tensor, 1, 1, mode="edge"), Tensor)
    assert_type(dml.max_pooling_grad(np.zeros((1, 1, 2, 2)), lazy, 2), LazyArray)


if __name__ == "__main__":
    functions()
    description_layer()
    settings()
