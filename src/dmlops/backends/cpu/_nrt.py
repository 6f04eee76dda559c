"""Arrays without reference counting, for the kernels' inner calls.

Numba counts references to an array with atomic updates of a counter the array's views
share. A function called per output row updates the counters of every array it receives,
and when the threads share those arrays (the input, the window geometry) the updates
contend for one cache line: that cost dwarfed the work of a short row. A kernel therefore
hands its helpers ``borrowed`` views: the same memory, with no counter to update. The caller
keeps the originals alive for the whole call, so nothing is freed early.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def borrowed(typingctx, arr):
    """A view of ``arr`` without a reference counter (its updates become no-ops)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        view = cgutils.create_struct_proxy(arr)(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return arr(arr), codegen
