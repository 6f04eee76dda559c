"""What every call of a function does (SPEC 4.1), beside its planner in ``functional``: its
array arguments read (NumPy as they are, other libraries' arrays through DLPack, PyTorch
tensors in place: ``input_array``, ``results_as_given``), its outputs made where not given
(``make_outputs``), its backend chosen and its kernel run (``execute``), and the same call on
Dask arrays, validated and planned at once and computed lazily (``lazy_result``).

    >>> import numpy as np
    >>> from dmlops._calling import input_array
    >>> input_array([[1, 2], [3, 4]], "max_pooling").dtype
    dtype('int64')
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from . import _dask
from ._args import dtype_of
from ._plancache import planned
from .backends import resolve as resolve_backend
from .dtypes import NATIVE_DTYPES
from .errors import DmlError, InvalidArgumentError, Names
from .tensor import check_fits_memory, check_no_overlap, native, new_array, with_native_outputs

if TYPE_CHECKING:
    from types import ModuleType

    from numpy.typing import NDArray

    from ._call import Call
    from ._types import Chunks

_F = TypeVar("_F", bound=Callable[..., Any])


def not_lazy(x: object, names: Names, field: str) -> None:
    """CuPy arrays are unsupported until their backend exists (SPEC 5); Dask arrays where an
    argument must stay NumPy (SPEC 6: ROI boxes, quantization scales and zero points)."""
    module = type(x).__module__.split(".")[0]
    if module == "dask":
        raise names.unsupported(lambda n: f"{n(field)} is a Dask array; ROI boxes and quantization "
                                          f"scales and zero points stay NumPy (SPEC 6): pass "
                                          f"{field}.compute()")
    if module in ("cupy", "cupyx"):
        raise names.unsupported(lambda n: f"{n(field)} is a {module} array; {module} inputs arrive "
                                          f"with a later version of dmlops (pass a NumPy array)")


def input_array(x: object, op: str, field: str = "x") -> NDArray[Any]:
    """The array argument ``field`` as a NumPy array of a supported data type (an array that
    speaks DLPack, such as a PyTorch tensor, read in place: ``from_dlpack``). Checked on
    every call, argument by argument (a later argument is not converted when an earlier one
    is wrong), before the call is planned."""
    if type(x) is not np.ndarray:       # (a NumPy array is neither lazy nor converted)
        not_lazy(x, Names(op), field)
        if hasattr(x, "__dlpack__") and not isinstance(x, (np.ndarray, np.generic)):
            x = from_dlpack(x, Names(op), field)
        try:
            x = np.asarray(x)
        except (ValueError, TypeError) as e:    # (ragged nested lists, among others)
            raise Names(op).invalid(lambda n: f"{n(field)} cannot be read as an array: "
                                              f"{e}") from None
    if x.dtype not in NATIVE_DTYPES:    # (the others need normalising, or are errors)
        dtype_of(x.dtype, Names(op), field)
    return x


def from_dlpack(x: Any, names: Names, field: str) -> NDArray[Any]:
    """An array of another library that speaks DLPack (a PyTorch tensor, a JAX array) as a
    NumPy view of its memory, no copy; on the CPU only, and not a tensor that needs a
    gradient (dmlops's results would not take part in its graph)."""
    try:
        device = x.__dlpack_device__()
    except (AttributeError, TypeError, ValueError, BufferError):
        device = None
    if device is not None and int(device[0]) != 1:      # (kDLCPU)
        raise names.unsupported(lambda n: f"{n(field)} lives on device {tuple(device)} (DLPack's "
                                          f"numbering); dmlops reads CPU memory: pass "
                                          f"{field}.cpu()")
    if getattr(x, "requires_grad", False):
        raise names.unsupported(lambda n: f"{n(field)} requires a gradient; dmlops's results would "
                                          f"not take part in autograd: pass {field}.detach()")
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise names.unsupported(lambda n: f"{n(field)} ({type(x).__module__}.{type(x).__name__}, "
                                          f"dtype {getattr(x, 'dtype', '?')}) cannot be read in "
                                          f"place as a NumPy array: {e}") from None


def is_torch(x: object) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def torch_module() -> Any:
    """The torch module (imported already where a tensor is an argument)."""
    return sys.modules.get("torch") or importlib.import_module("torch")


def in_autograd(args: Sequence[Any], kw: dict[str, Any]) -> bool:
    """Whether a tensor argument requires a gradient (or torch.compile traces the call)."""
    torch = torch_module()
    if torch.compiler.is_compiling():
        return True
    tensor = torch.Tensor
    for a in (*args, *kw.values()):
        kind = type(a)
        if kind is tensor:
            if a.requires_grad:
                return True
        elif kind not in _PLAIN and is_torch(a) and getattr(a, "requires_grad", False):
            return True
    return False


_PLAIN = frozenset((int, float, bool, str, type(None), tuple, list))     # (never torch's)


def tensor_view(x: Any) -> NDArray[Any] | None:
    """A plain CPU tensor that NumPy can view as a NumPy view of its memory, no copy (what
    ``from_dlpack`` gives, at a third of its cost: issue 44); None for any other tensor,
    which ``from_dlpack`` reads or refuses with its messages."""
    if type(x) is not torch_module().Tensor:
        return None
    try:
        return cast("NDArray[Any]", x.numpy())      # (refuses gradients, devices, bfloat16, ...)
    except Exception:
        return None


def as_tensor(r: Any) -> Any:
    """A new result as a tensor sharing its memory: ``torch.from_numpy`` for a writeable
    NumPy array (what ``torch.from_dlpack`` gives, at half its cost), else DLPack."""
    if type(r) is np.ndarray and r.flags.writeable:
        return torch_module().from_numpy(r)
    return torch_module().from_dlpack(r)


def results_as_given(fn: _F) -> _F:
    """PyTorch tensors in, PyTorch tensors out: where the first array argument is a tensor,
    new results come back as tensors sharing their memory (``as_tensor``, no copy);
    tensors given as ``out`` are written in place and returned as given. Any other input
    gives NumPy results."""
    first = next(iter(inspect.signature(fn).parameters))

    @functools.wraps(fn)
    def call(*args: Any, **kw: Any) -> Any:
        x = args[0] if args else kw.get(first)
        out = kw.get("out")
        if type(x) is np.ndarray and (out is None or type(out) is np.ndarray):
            return fn(*args, **kw)      # (the usual call: nothing to do)
        given = out if isinstance(out, (tuple, list)) else (out,)
        if not is_torch(x) and not any(is_torch(o) for o in given):
            return fn(*args, **kw)
        if out is None and in_autograd(args, kw):
            # a result that takes part in autograd: the torch op, whose backward is
            # dmlops's own (dmlops.torch, loaded here at the first such call)
            ops = sys.modules.get("dmlops.torch")
            if ops is None:
                ops = importlib.import_module("dmlops.torch")
            if kw.pop("backend", None) is not None or kw.pop("chunks", None) is not None:
                raise Names(fn.__name__).unsupported(
                    lambda n: f"{n('backend')}= and {n('chunks')}= are for NumPy and Dask "
                              f"inputs; a tensor that requires a gradient runs on the cpu "
                              f"backend")
            return getattr(ops, fn.__name__)(*args, **kw)
        if out is not None:
            names = Names(fn.__name__)
            views = [from_dlpack(o, names, "out") if is_torch(o) else o for o in given]
            kw["out"] = type(out)(views) if isinstance(out, (tuple, list)) else views[0]
        elif kw.get("chunks") is None:      # (the usual tensor call: x read here)
            view = tensor_view(x)
            if view is not None:
                if args:
                    args = (view, *args[1:])
                else:
                    kw[first] = view
        result = fn(*args, **kw)
        several = isinstance(result, tuple)
        results = result if several else (result,)
        if _dask.is_dask(results[0]):
            return result
        final = []
        for k, r in enumerate(results):
            g = given[k] if out is not None and k < len(given) else None
            if g is not None:
                final.append(g if is_torch(g) else r)      # (as given)
            elif is_torch(x):
                final.append(as_tensor(r))
            else:
                final.append(r)
        return tuple(final) if several else final[0]
    return cast("_F", call)


def make_outputs(call: Call, outs: Sequence[Any], inputs: Sequence[NDArray[Any]]
                 ) -> list[NDArray[Any]]:
    """The outputs: those given, and new C-contiguous arrays for the others. A given one
    must share no memory with an input or another output: what memory an array uses is the
    one thing a kept plan cannot know, so this is checked on every call."""
    if len(outs) == 1:      # (the usual call, checked with less work)
        (out,), ((label, shape, dtype),) = outs, call.outputs
        if out is None:
            return [new_array(shape, dtype, call.names, label)]
        for a in inputs:
            if np.may_share_memory(out, a):     # (perhaps: the exact check, the message)
                check_no_overlap(call.names, zip(call.inputs, inputs), ((label, out),))
        return [out]
    ys, given = [], []
    new = [(label, shape, dtype) for out, (label, shape, dtype) in zip(outs, call.outputs)
           if out is None]
    if len(new) > 1:        # (each might fit the memory, and all of them not)
        check_fits_memory(new, call.names)
    for out, (label, shape, dtype) in zip(outs, call.outputs):
        if out is None:
            ys.append(new_array(shape, dtype, call.names, label))
        else:
            ys.append(out)
            given.append((label, out))
    if given:
        check_no_overlap(call.names, zip(call.inputs, inputs), given)
    return ys


def kernels_of(call: Call, backend: str | None) -> ModuleType:
    """The backend's kernels, resolved on every call (``set_backend`` and
    ``DMLOPS_BACKEND`` may change between calls; ``reraise``, written out: this runs on
    every call)."""
    try:
        return resolve_backend(backend)[1]
    except DmlError as e:
        raise type(e)(f"{call.names.op}: {e}") from None


def execute(call: Call, backend: str | None, x: NDArray[Any], ys: list[NDArray[Any]],
             extra: dict[str, NDArray[Any]] | None = None) -> None:
    """Run a planned pooling or padding call on ``backend``, through the backend's runner
    for the layout the call was planned for (``prepare_pooling`` / ``prepare_padding``,
    where it has them): prepared at the call's first run and kept with the plan, so that a
    repeated small call spends its time in the kernel."""
    kernels = kernels_of(call, backend)
    run = call.runners.get(kernels)
    if run is None:
        run = call.runners[kernels] = _prepare(call, kernels, x)
    x = native(x)
    run_kernel(ys, lambda o: run(x, o, extra), call.names)


def _prepare(call: Call, kernels: ModuleType, x: NDArray[Any]) -> Callable[..., None]:
    """The backend's runner of the plan (``prepare_pooling``, ``prepare_padding``), else
    the plan run by itself."""
    plan = call.plan
    prepare = getattr(kernels, plan.prepared_by, None) if plan.prepared_by else None
    run = None if prepare is None else prepare(plan, x)
    if run is None:
        return lambda x, outputs, extra: plan.run(kernels, x, outputs, extra, call.names)
    return cast("Callable[..., None]", run)


def run_kernel(outputs: list[NDArray[Any]], run: Callable[[list[NDArray[Any]]], object],
               names: Names) -> None:
    if 0 in outputs[0].shape:
        return
    try:
        with_native_outputs(outputs, run)
    except MemoryError as e:        # (a kernel's scratch, proportional to an output's row)
        raise InvalidArgumentError(f"{names.op}: out of memory running the kernel for outputs of "
                                   f"shapes {[list(o.shape) for o in outputs]}: "
                                   f"{e or 'std::bad_alloc'}") from None


def lazy_call(op: str, arrays: Sequence[tuple[str, Any]], out: object, backend: str | None,
              chunks: Chunks | None, plan: Callable[..., Call], params: dict[str, Any]
              ) -> tuple[Call, ModuleType, list[NDArray[Any]], list[Any]]:
    """A call with a Dask operand validated and planned now, as in memory (a Dask operand
    by a stand-in of its shape and type, a NumPy one as it is): ``(call, kernels, stand-ins,
    operands as Dask arrays)``. ``arrays``: (field, array) in the plan's order. ``chunks=``
    is for Dask inputs only, ``out=`` for NumPy ones."""
    import dask.array as da

    names = Names(op)
    if not any(_dask.is_dask(a) for _, a in arrays):
        field, a = arrays[0]
        raise names.invalid(lambda n: f"{n('chunks')} = {chunks!r} is for Dask inputs; "
                                      f"{n(field)} is a {type(a).__name__}")
    if out is not None:
        raise names.unsupported(lambda n: f"{n('out')} = an array is for NumPy inputs: a Dask "
                                          f"input gives a new lazy array (store it with "
                                          f"dask.array.store)")
    stands, lazy = [], []
    for field, a in arrays:
        if _dask.is_dask(a):
            stands.append(_dask.stand_in(a, names, field))
            lazy.append(a)
        else:
            stands.append(input_array(a, op, field))
            lazy.append(da.from_array(stands[-1], chunks=-1))
    call = planned(plan, (*stands, None), params)
    return call, kernels_of(call, backend), stands, lazy


def lazy_result(op: str, arrays: Sequence[tuple[str, Any]], out: object, backend: str | None,
                chunks: Chunks | None, plan: Callable[..., Call], params: dict[str, Any],
                build: Callable[..., Any]) -> Any:
    """A function of Dask arrays: validated and planned now (``lazy_call``), then
    ``build(call, kernels, *operands as Dask arrays)`` makes the lazy result. An empty output
    (N or C 0) is made at once, as in memory, where no kernel runs."""
    import dask.array as da

    call, kernels, _, lazy = lazy_call(op, arrays, out, backend, chunks, plan, params)
    if any(0 in shape for _, shape, _ in call.outputs):
        ys = [da.from_array(np.zeros(shape, dtype)) for _, shape, dtype in call.outputs]
        return tuple(ys) if len(ys) > 1 else ys[0]
    return build(call, kernels, *lazy)


def lazy_pooling(op: str, x: Any, out: object, backend: str | None, chunks: Chunks | None,
                 plan: Callable[..., Call], params: dict[str, Any]) -> Any:
    """A pooling function of a Dask array (the plan's ``lazy``)."""
    def build(call: Call, kernels: ModuleType, x: Any) -> Any:
        ys = call.plan.lazy(x, {}, call, kernels, chunks, call.names)
        return tuple(ys) if len(ys) > 1 else ys[0]
    return lazy_result(op, [("x", x)], out, backend, chunks, plan, params, build)


def lazy_grad(op: str, arrays: Sequence[tuple[str, Any]], out: object, backend: str | None,
              chunks: Chunks | None, plan: Callable[..., Call], params: dict[str, Any]) -> Any:
    """A gradient of Dask arrays (the plan's ``lazy``): ``x`` and ``dy``, or ``dy``."""
    def build(call: Call, kernels: ModuleType, *lazy: Any) -> Any:
        x, dy = (None, lazy[0]) if len(lazy) == 1 else lazy
        return call.plan.lazy(x, {"dy": dy}, call, kernels, chunks, call.names)[0]
    return lazy_result(op, arrays, out, backend, chunks, plan, params, build)
