"""Short examples for the API pages of public names whose docstrings have none.

The autosummary templates (``docs/_templates/autosummary``) add ``API_EXAMPLES[fullname]``
under an "Example" heading of that name's page. ``tests/test_docs.py`` runs each one as a
doctest (one namespace per example) and checks that every public name of ``dmlops``,
``dmlops.torch`` and ``dmlops.onnx`` has an example, in its docstring or here. An entry whose
docstring gains an example of its own may be removed.
"""

from __future__ import annotations

_DESC = """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.{cls}(
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 4, 4)),
...     output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
...     window_size=2, strides=2{extra})
>>> desc.operator_type, desc.operator_type_value
('{op}', {value})
>>> op = dml.compile_operator(desc)
>>> op.execute(input_tensor=np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4))[
...     "output_tensor"][0, 0].tolist()
{result}
"""

API_EXAMPLES: dict[str, str] = {
    # --- the functions --------------------------------------------------------------------
    "dmlops.pyramid": """\
>>> import numpy as np, dmlops
>>> levels = dmlops.pyramid(np.arange(36.0).reshape(6, 6), levels=3)
>>> [level.shape for level in levels]
[(6, 6), (3, 3), (2, 2)]
>>> levels[2].compute().tolist()       # the last block of each row pools its real elements
[[10.5, 13.5], [28.5, 31.5]]
""",
    "dmlops.write_pyramid": """\
>>> import numpy as np, dmlops
>>> import zarr
>>> levels = dmlops.pyramid(np.arange(36.0).reshape(6, 6), levels=3)
>>> dmlops.write_pyramid(levels, "small.zarr")
>>> group = zarr.open_group("small.zarr", mode="r")
>>> [group[name].shape for name in ("0", "1", "2")]
[(6, 6), (3, 3), (2, 2)]
""",
    # --- the DirectML layer ---------------------------------------------------------------
    "dmlops.AveragePoolingDesc": _DESC.format(
        cls="AveragePoolingDesc", extra=", include_padding=False",
        op="DML_OPERATOR_AVERAGE_POOLING", value=56,
        result="[[2.5, 4.5], [10.5, 12.5]]"),
    "dmlops.AveragePooling1Desc": _DESC.format(
        cls="AveragePooling1Desc", extra=", dilations=1, include_padding=False",
        op="DML_OPERATOR_AVERAGE_POOLING1", value=166,
        result="[[2.5, 4.5], [10.5, 12.5]]"),
    "dmlops.MaxPoolingDesc": _DESC.format(
        cls="MaxPoolingDesc", extra="", op="DML_OPERATOR_MAX_POOLING", value=58,
        result="[[5.0, 7.0], [13.0, 15.0]]"),
    "dmlops.MaxPooling1Desc": _DESC.format(
        cls="MaxPooling1Desc", extra="", op="DML_OPERATOR_MAX_POOLING1", value=91,
        result="[[5.0, 7.0], [13.0, 15.0]]"),
    "dmlops.MaxPooling2Desc": _DESC.format(
        cls="MaxPooling2Desc", extra=", dilations=1", op="DML_OPERATOR_MAX_POOLING2",
        value=110, result="[[5.0, 7.0], [13.0, 15.0]]"),
    "dmlops.LpPoolingDesc": _DESC.format(
        cls="LpPoolingDesc", extra=", p=1", op="DML_OPERATOR_LP_POOLING", value=57,
        result="[[10.0, 18.0], [42.0, 50.0]]"),
    "dmlops.LpPooling1Desc": _DESC.format(
        cls="LpPooling1Desc", extra=", dilations=1, p=1", op="DML_OPERATOR_LP_POOLING1",
        value=165, result="[[10.0, 18.0], [42.0, 50.0]]"),
    "dmlops.AveragePoolingGradDesc": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.AveragePoolingGradDesc(       # SPEC 3.2's example
...     input_gradient_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
...     output_gradient_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
...     window_size=2, strides=1, include_padding=False)
>>> dy = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
>>> dml.compile_operator(desc).execute(input_gradient_tensor=dy)[
...     "output_gradient_tensor"][0, 0].tolist()
[[0.25, 0.75, 0.5], [1.0, 2.5, 1.5], [0.75, 1.75, 1.0]]
""",
    "dmlops.MaxPoolingGradDesc": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.MaxPoolingGradDesc(           # SPEC 3.5's example
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
...     input_gradient_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
...     output_gradient_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
...     window_size=2, strides=1)
>>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
>>> dy = np.array([[1, 2], [4, 5]], np.float32).reshape(1, 1, 2, 2)
>>> dml.compile_operator(desc).execute(input_tensor=x, input_gradient_tensor=dy)[
...     "output_gradient_tensor"][0, 0].tolist()
[[0.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 4.0, 5.0]]
""",
    "dmlops.QuantizedLinearAveragePoolingDesc": """\
>>> import numpy as np
>>> import dmlops as dml
>>> scalar = dml.TensorDesc("FLOAT32", (1, 1, 1, 1))
>>> desc = dml.QuantizedLinearAveragePoolingDesc(
...     input_tensor=dml.TensorDesc("UINT8", (1, 1, 2, 2)),
...     input_scale_tensor=scalar, output_scale_tensor=scalar,
...     output_tensor=dml.TensorDesc("UINT8", (1, 1, 1, 1)),
...     window_size=2, strides=1, dilations=1, include_padding=False)
>>> one = np.ones((1, 1, 1, 1), np.float32)
>>> dml.compile_operator(desc).execute(
...     input_tensor=np.array([1, 2, 3, 5], np.uint8).reshape(1, 1, 2, 2),
...     input_scale_tensor=one, output_scale_tensor=one)["output_tensor"].ravel().tolist()
[3]
""",
    "dmlops.MaxUnpoolingDesc": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.MaxUnpoolingDesc(
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 1, 2)),
...     indices_tensor=dml.TensorDesc("UINT32", (1, 1, 1, 2)),
...     output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)))
>>> out = dml.compile_operator(desc).execute(
...     input_tensor=np.array([7, 9], np.float32).reshape(1, 1, 1, 2),
...     indices_tensor=np.array([3, 0], np.uint32).reshape(1, 1, 1, 2))
>>> out["output_tensor"][0, 0].tolist()
[[9.0, 0.0], [0.0, 7.0]]
""",
    "dmlops.RoiPoolingDesc": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.RoiPoolingDesc(
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 4, 4)),
...     roi_tensor=dml.TensorDesc("FLOAT32", (1, 1, 1, 5)),
...     output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
...     spatial_scale=1.0, pooled_size=(2, 2))
>>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
>>> box = np.array([0, 0, 0, 3, 3], np.float32).reshape(1, 1, 1, 5)   # batch, x1, y1, x2, y2
>>> dml.compile_operator(desc).execute(input_tensor=x, roi_tensor=box)[
...     "output_tensor"][0, 0].tolist()
[[5.0, 7.0], [13.0, 15.0]]
""",
    "dmlops.PaddingDesc": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.PaddingDesc(
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 3)),
...     output_tensor=dml.TensorDesc("FLOAT32", (1, 8)),
...     padding_mode="symmetric", padding_value=0.0,
...     start_padding=(0, 2), end_padding=(0, 3))
>>> dml.compile_operator(desc, feature_level="3.1").execute(
...     input_tensor=np.array([[1, 2, 3]], np.float32))["output_tensor"].tolist()
[[2.0, 1.0, 1.0, 2.0, 3.0, 3.0, 2.0, 1.0]]
""",
    "dmlops.Padding1Desc": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.Padding1Desc(
...     input_tensor=dml.TensorDesc("INT8", (1, 3)),
...     output_tensor=dml.TensorDesc("INT8", (1, 6)),
...     padding_mode="constant", padding_value_data_type="INT8", padding_value=-1,
...     start_padding=(0, 1), end_padding=(0, 2))
>>> dml.compile_operator(desc).execute(
...     input_tensor=np.array([[1, 2, 3]], np.int8))["output_tensor"].tolist()
[[-1, 1, 2, 3, -1, -1]]
""",
    "dmlops.DESC_CLASSES": """\
>>> import dmlops as dml
>>> dml.DESC_CLASSES["MAX_POOLING2"] is dml.MaxPooling2Desc
True
>>> len(dml.DESC_CLASSES)
14
""",
    "dmlops.compile_operator": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.AveragePooling1Desc(
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
...     output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
...     window_size=2, strides=1, dilations=1, include_padding=False)
>>> op = dml.compile_operator(desc, feature_level="6.2")    # every rule checked, once
>>> x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
>>> op.execute(input_tensor=x)["output_tensor"][0, 0].tolist()
[[3.0, 4.0], [6.0, 7.0]]
>>> dml.compile_operator(desc, feature_level="6.1")
Traceback (most recent call last):
    ...
dmlops.errors.UnsupportedError: ...
""",
    "dmlops.CompiledOperator": """\
>>> import numpy as np
>>> import dmlops as dml
>>> desc = dml.MaxPooling2Desc(
...     input_tensor=dml.TensorDesc("FLOAT32", (1, 1, 3, 3)),
...     output_tensor=dml.TensorDesc("FLOAT32", (1, 1, 2, 2)),
...     output_indices_tensor=dml.TensorDesc("UINT32", (1, 1, 2, 2)),
...     window_size=2, strides=1, dilations=1)
>>> op = dml.compile_operator(desc)
>>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
>>> out = op.execute(input_tensor=x)
>>> sorted(out), out["output_indices_tensor"][0, 0].tolist()
(['output_indices_tensor', 'output_tensor'], [[4, 4], [7, 8]])
>>> y = np.empty((1, 1, 2, 2), np.float32)
>>> op.execute(input_tensor=x, output_tensor=y)["output_tensor"] is y   # into a given buffer
True
""",
    "dmlops.DataType": """\
>>> import dmlops as dml
>>> dml.DataType.FLOAT16.value, dml.DataType.FLOAT16.dtype
(2, dtype('float16'))
>>> dml.TensorDesc("DML_TENSOR_DATA_TYPE_UINT8", (1, 4)).data_type   # or "uint8", np.uint8, 5
<DataType.UINT8: 5>
""",
    "dmlops.FeatureLevel": """\
>>> import dmlops as dml
>>> hex(dml.FeatureLevel.L6_4)
'0x6400'
>>> len(dml.FeatureLevel)
15
""",
    "dmlops.PaddingMode": """\
>>> import numpy as np
>>> import dmlops as dml
>>> x = np.array([1, 2, 3], np.float32)
>>> dml.padding(x, 1, 1, mode=dml.PaddingMode.WRAP).tolist()   # or "wrap", "DML_PADDING_MODE_WRAP", 4
[3.0, 1.0, 2.0, 3.0, 1.0]
""",
    # --- errors ---------------------------------------------------------------------------
    "dmlops.DmlError": """\
>>> import numpy as np
>>> import dmlops as dml
>>> try:
...     dml.max_pooling(np.zeros((1, 1, 2, 2), np.float32), 3)
... except dml.DmlError as e:
...     print(type(e).__name__)
InvalidArgumentError
""",
    "dmlops.InvalidArgumentError": """\
>>> import numpy as np
>>> import dmlops as dml
>>> x = np.zeros((1, 1, 9, 9), np.float32)
>>> dml.max_pooling(x, 3, strides=2, start_padding=1, end_padding=1, output_sizes=(5, 7))
Traceback (most recent call last):
    ...
dmlops.errors.InvalidArgumentError: max_pooling: output_sizes[1] = 7 does not fit: ...
>>> issubclass(dml.InvalidArgumentError, ValueError)
True
""",
    "dmlops.UnsupportedError": """\
>>> import numpy as np
>>> import dmlops as dml
>>> dml.max_pooling(np.zeros((1, 1, 4, 4), np.complex64), 2)
Traceback (most recent call last):
    ...
dmlops.errors.UnsupportedError: ...
>>> issubclass(dml.UnsupportedError, TypeError)
True
""",
    # --- backends and threads -------------------------------------------------------------
    "dmlops.set_backend": """\
>>> import dmlops as dml
>>> dml.set_backend("reference")        # process-wide; backend= on a call still wins
>>> dml.get_backend()
'reference'
>>> dml.set_backend(None)               # back to DMLOPS_BACKEND or the default
""",
    "dmlops.get_backend": """\
>>> import dmlops as dml
>>> dml.get_backend() in dml.backends()
True
""",
    "dmlops.set_num_threads": """\
>>> import dmlops as dml
>>> dml.set_num_threads(1)
>>> dml.get_num_threads()
1
>>> dml.set_num_threads(None)           # back to DMLOPS_NUM_THREADS or the usable CPUs
""",
    "dmlops.get_num_threads": """\
>>> import dmlops as dml
>>> dml.get_num_threads() >= 1
True
""",
    "dmlops.__version__": """\
>>> import dmlops
>>> dmlops.__version__                  # doctest: +ELLIPSIS
'...'
""",
}

_TORCH_X = """\
>>> import torch
>>> import dmlops.torch as dt
>>> x = torch.tensor([[1., 2., 3.], [2., 4., 2.], [5., 6., 7.]]).reshape(1, 1, 3, 3)
"""

API_EXAMPLES.update({
    "dmlops.torch.max_pooling": _TORCH_X + """\
>>> x.requires_grad_()
tensor(...)
>>> y = dt.max_pooling(x, [2, 2])
>>> y.sum().backward()          # MAX_POOLING_GRAD: each window's 1 to its maximum
>>> x.grad[0, 0].tolist()
[[0.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 1.0, 1.0]]
""",
    "dmlops.torch.average_pooling": _TORCH_X + """\
>>> dt.average_pooling(x, [2, 2])[0, 0].tolist()
[[2.25, 2.75], [4.25, 4.75]]
""",
    "dmlops.torch.lp_pooling": _TORCH_X + """\
>>> dt.lp_pooling(x, [3, 3], p=1)[0, 0].tolist()
[[32.0]]
""",
    "dmlops.torch.max_unpooling": _TORCH_X + """\
>>> y, i = dt.max_pooling(x, [2, 2], output_indices=True)
>>> dt.max_unpooling(y, i, [1, 1, 3, 3])[0, 0].tolist()
[[0.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 6.0, 7.0]]
""",
    "dmlops.torch.padding": """\
>>> import torch
>>> import dmlops.torch as dt
>>> dt.padding(torch.tensor([[1., 2., 3.]]), [0, 2], [0, 2], mode="symmetric").tolist()
[[2.0, 1.0, 1.0, 2.0, 3.0, 3.0, 2.0]]
""",
    "dmlops.torch.padding_grad": """\
>>> import torch
>>> import dmlops.torch as dt
>>> dy = torch.tensor([[[1., 2., 3., 4., 5., 6.]]])    # SPEC 3.10's example
>>> dt.padding_grad(dy, [1, 1, 3], [0, 0, 2], [0, 0, 1], mode="reflection").tolist()
[[[3.0, 12.0, 6.0]]]
""",
    "dmlops.torch.max_pooling_grad": _TORCH_X + """\
>>> dy = torch.tensor([[1., 2.], [4., 5.]]).reshape(1, 1, 2, 2)   # SPEC 3.5's example
>>> dt.max_pooling_grad(x, dy, [2, 2])[0, 0].tolist()
[[0.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 4.0, 5.0]]
""",
    "dmlops.torch.average_pooling_grad": """\
>>> import torch
>>> import dmlops.torch as dt
>>> dy = torch.tensor([[1., 2.], [3., 4.]]).reshape(1, 1, 2, 2)   # SPEC 3.2's example
>>> dt.average_pooling_grad(dy, [2, 2], input_sizes=[1, 1, 3, 3])[0, 0].tolist()
[[0.25, 0.75, 0.5], [1.0, 2.5, 1.5], [0.75, 1.75, 1.0]]
""",
    "dmlops.torch.roi_pooling": """\
>>> import torch
>>> import dmlops.torch as dt
>>> x = torch.arange(16.).reshape(1, 1, 4, 4)
>>> rois = torch.tensor([[0., 0., 0., 3., 3.]])         # batch, x1, y1, x2, y2
>>> dt.roi_pooling(x, rois, spatial_scale=1.0, pooled_size=[2, 2])[0, 0].tolist()
[[5.0, 7.0], [13.0, 15.0]]
""",
    "dmlops.torch.quantized_linear_average_pooling": """\
>>> import torch
>>> import dmlops.torch as dt
>>> x = torch.tensor([1, 2, 3, 5], dtype=torch.uint8).reshape(1, 1, 2, 2)
>>> zero = torch.tensor(0, dtype=torch.uint8)           # zero points in their tensor's type
>>> dt.quantized_linear_average_pooling(x, 1.0, zero, 1.0, zero, [2, 2]).ravel().tolist()
[3]
""",
    "dmlops.torch.MaxPool": """\
>>> import torch
>>> from dmlops.torch import MaxPool
>>> pool = MaxPool(3, strides=2, start_padding=1, end_padding=0)   # asymmetric padding
>>> pool(torch.randn(2, 8, 9, 9)).shape
torch.Size([2, 8, 4, 4])
""",
    "dmlops.torch.AvgPool": """\
>>> import torch
>>> from dmlops.torch import AvgPool
>>> pool = AvgPool(2, strides=2, start_padding=1, include_padding=True)
>>> pool(torch.ones(1, 1, 3, 3))[0, 0].tolist()    # padding counted in the divisor
[[0.25, 0.5], [0.5, 1.0]]
""",
    "dmlops.torch.LpPool": """\
>>> import torch
>>> from dmlops.torch import LpPool
>>> LpPool(2, p=2)(torch.full((1, 1, 2, 2), 3.0)).item()       # sqrt(4 * 9)
6.0
""",
    "dmlops.torch.MaxUnpool": """\
>>> import torch
>>> import dmlops
>>> from dmlops.torch import MaxUnpool
>>> x = torch.tensor([[1., 2.], [4., 3.]]).reshape(1, 1, 2, 2)
>>> y, i = dmlops.max_pooling(x, 2, output_indices=True)
>>> MaxUnpool()(y, i, [1, 1, 2, 2])[0, 0].tolist()
[[0.0, 0.0], [4.0, 0.0]]
""",
    "dmlops.torch.Pad": """\
>>> import torch
>>> from dmlops.torch import Pad
>>> Pad(2, mode="wrap")(torch.tensor([[[1., 2., 3.]]])).tolist()     # the spatial dimension
[[[2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0]]]
""",
})

_ONNX_NODE = """\
>>> import numpy as np
>>> import onnx
>>> from onnx import TensorProto, helper
>>> import dmlops.onnx
>>> node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], name="pool")
>>> graph = helper.make_graph(
...     [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2])])
>>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
>>> x = np.array([[1, 2, 3], [2, 4, 2], [5, 6, 7]], np.float32).reshape(1, 1, 3, 3)
"""

API_EXAMPLES.update({
    "dmlops.onnx.DmlBackend": _ONNX_NODE + """\
>>> from dmlops.onnx import DmlBackend
>>> DmlBackend.supports_device("CPU"), DmlBackend.is_compatible(model)
(True, True)
>>> DmlBackend.run_model(model, [x])["y"][0, 0].tolist()
[[4.0, 4.0], [6.0, 7.0]]
""",
    "dmlops.onnx.DmlBackendRep": _ONNX_NODE + """\
>>> rep = dmlops.onnx.prepare(model)         # a DmlBackendRep: every node checked once
>>> y, = rep.run([x])
>>> rep.run({"x": x})["y"][0, 0].tolist()
[[4.0, 4.0], [6.0, 7.0]]
""",
    "dmlops.onnx.prepare": _ONNX_NODE + """\
>>> rep = dmlops.onnx.prepare(model, backend="reference")
>>> rep.run([x])[0][0, 0].tolist()
[[4.0, 4.0], [6.0, 7.0]]
""",
    "dmlops.onnx.run_model": _ONNX_NODE + """\
>>> dmlops.onnx.run_model(model, [x])[0][0, 0].tolist()
[[4.0, 4.0], [6.0, 7.0]]
""",
    "dmlops.onnx.run_node": _ONNX_NODE + """\
>>> y, = dmlops.onnx.run_node(node, [x])
>>> y[0, 0].tolist()
[[4.0, 4.0], [6.0, 7.0]]
""",
    "dmlops.onnx.supports_device": """\
>>> import dmlops.onnx
>>> dmlops.onnx.supports_device("CPU"), dmlops.onnx.supports_device("CUDA")
(True, False)
""",
    "dmlops.onnx.is_compatible": _ONNX_NODE + """\
>>> dmlops.onnx.is_compatible(model), dmlops.onnx.is_compatible(b"not a model")
(True, False)
""",
    "dmlops.onnx.SUPPORTED_OPS": """\
>>> import dmlops.onnx
>>> sorted(op for domain, op in dmlops.onnx.SUPPORTED_OPS)      # (domain, op_type) keys
['AveragePool', 'Constant', 'GlobalAveragePool', 'GlobalMaxPool', 'LpPool', 'MaxPool', 'MaxUnpool', 'Pad', 'QLinearAveragePool']
""",
})

# One-line descriptions for the API pages of names whose docstring is empty (the torch ops
# defined by torch.library, ONNX's Backend classmethods) and of the data objects, whose
# docstrings would be their type's. A docstring of the object's own comes first on its page.
API_SUMMARIES: dict[str, str] = {
    "dmlops.DESC_CLASSES": "Each operator's description class, keyed by its DirectML name "
                           "without the ``DML_OPERATOR_`` prefix.",
    "dmlops.__version__": "The version of the installed package.",
    "dmlops.onnx.SUPPORTED_OPS": "The ONNX nodes ``dmlops.onnx`` runs, keyed by "
                                 "``(domain, op_type)`` (``''`` is ONNX's default domain).",
    "dmlops.onnx.prepare": "Check every node of ``model`` once and return a "
                           ":class:`DmlBackendRep` that runs it (``onnx.backend`` API).",
    "dmlops.onnx.run_model": "Run ``model`` on ``inputs`` once: ``prepare(model).run(inputs)``.",
    "dmlops.onnx.supports_device": "Whether the backend runs on ``device``: true for "
                                   "``\"CPU\"`` only.",
    "dmlops.torch.padding_grad": ":func:`dmlops.padding_grad` as a differentiable op "
                                 "(backward: ``padding``, constant 0).",
    "dmlops.torch.max_pooling_grad": ":func:`dmlops.max_pooling_grad` as a torch op.",
    "dmlops.torch.average_pooling_grad": ":func:`dmlops.average_pooling_grad` as a "
                                         "torch op.",
    "dmlops.torch.roi_pooling": ":func:`dmlops.roi_pooling` as a differentiable op "
                                "(backward: each bin's ``dy`` to its winner).",
    "dmlops.torch.quantized_linear_average_pooling":
        ":func:`dmlops.quantized_linear_average_pooling` as a torch op (no gradient: "
        "quantized values).",
}
