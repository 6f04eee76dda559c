"""Arrays without reference counting, for the kernels' inner calls.

Numba counts references to an array with atomic updates of a counter the array's views
share. A function called per output row updates the counters of every array it receives,
and when the threads share those arrays (the input, the window geometry) the updates
contend for one cache line: that cost dwarfed the work of a short row. A kernel therefore
hands its helpers ``borrowed`` arrays: the same memory, typed ``Borrowed``, whose data model
holds no counter, so that Numba emits no reference-count calls for them at all. (A null
counter alone left a call per array and per inlined helper, each clobbering registers: int8
pooling of 112-wide planes ran 1.4x faster without them.) The caller keeps the originals
alive for the whole call, so nothing is freed early.
"""

from __future__ import annotations

from numba.core import cgutils, types
from numba.core.datamodel import models
from numba.extending import intrinsic, lower_cast, register_model


class Borrowed(types.Array):
    """An array type whose values carry no reference counter: views of memory that the
    caller keeps alive. Everything that takes an array takes one; views of it (slices) are
    plain arrays again, with a null counter."""

    def __init__(self, dtype, ndim, layout, readonly=False, aligned=True):
        kind = "readonly borrowed" if readonly else "borrowed"
        super().__init__(dtype, ndim, layout, readonly=readonly, aligned=aligned,
                         name=f"{kind} array({dtype}, {ndim}d, {layout})")


@register_model(Borrowed)
class _BorrowedModel(models.StructModel):
    # an array's layout, with an untyped pointer where the counter was: the same LLVM type,
    # so a cast either way is the value itself
    def __init__(self, dmm, fe_type):
        members = [
            ("meminfo", types.voidptr),
            ("parent", types.pyobject),
            ("nitems", types.intp),
            ("itemsize", types.intp),
            ("data", types.CPointer(fe_type.dtype)),
            ("shape", types.UniTuple(types.intp, fe_type.ndim)),
            ("strides", types.UniTuple(types.intp, fe_type.ndim)),
        ]
        super().__init__(dmm, fe_type, members)


@lower_cast(Borrowed, types.Array)
@lower_cast(types.Array, Borrowed)
def _same_value(context, builder, fromty, toty, val):
    return val


@intrinsic
def borrowed(typingctx, arr):
    """``arr`` as a ``Borrowed`` array (its counter nulled: a slice of it counts nothing)."""
    if isinstance(arr, Borrowed):
        return arr(arr), lambda context, builder, sig, args: args[0]
    if not isinstance(arr, types.Array):
        return None
    out = Borrowed(arr.dtype, arr.ndim, arr.layout, readonly=not arr.mutable,
                   aligned=arr.aligned)

    def codegen(context, builder, sig, args):
        view = cgutils.create_struct_proxy(arr)(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return out(arr), codegen
