"""Memory hints: streaming (non-temporal) stores for long runs of output that nothing reads
back soon, and prefetches of input that a kernel reads next.

An ordinary store first reads its cache line from memory (to own it), so writing a large
output moves each byte twice. A non-temporal store writes whole lines straight to memory
without that read: for an output much larger than the caches it saves a third of a copy's
traffic and half of a fill's. LLVM emits one for a vector store marked ``!nontemporal``
(x86 ``vmovntps``, which needs the address aligned to the vector), so ``stream_copy``
copies a run scalar by scalar up to the first aligned address, then a vector at a time,
then the rest. Streaming stores are weakly ordered: a kernel calls ``fence()`` before it
returns, so that its results are visible to the thread that waits for it.

A kernel that reads a block of input, then works on it from the cache, leaves the memory
idle while it works: the hardware fetches ahead only while reads go on. ``prefetch`` asks
for the lines of a span the kernel reads next (into the L2 cache), a little at a time while
it works, so that the memory keeps streaming.

    >>> import numpy as np
    >>> from numba import njit
    >>> @njit
    ... def copy(dst, src):
    ...     stream_copy(dst, 0, src, 0, src.shape[0], True)
    ...     fence()
    >>> src = np.arange(100, dtype=np.float32)
    >>> dst = np.zeros(100, np.float32)
    >>> copy(dst, src)
    >>> bool((dst == src).all())
    True
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

VECTOR = 32          # bytes a streamed store writes (and its alignment): one AVX register
LONG = 64            # the fewest elements worth streaming (shorter runs store as usual)
BIG = 8 << 20        # the fewest output bytes worth streaming (smaller may stay in cache)
LINE = 64            # bytes a prefetch asks for: one cache line


@intrinsic
def _store_vector(typingctx, dst, di, src, si):
    """``dst[di:di + n] = src[si:si + n]`` as one non-temporal vector store (``n`` elements
    of ``VECTOR`` bytes; ``dst``'s address there must be aligned to ``VECTOR``)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array)
            and dst.dtype == src.dtype):
        return None

    def codegen(context, builder, sig, args):
        d, i, s, j = args
        elt = context.get_data_type(dst.dtype)
        lanes = VECTOR // context.get_abi_sizeof(elt)
        vec = ir.VectorType(elt, lanes)
        dptr = cgutils.get_item_pointer(context, builder, sig.args[0],
                                        context.make_array(sig.args[0])(context, builder, d),
                                        [i], wraparound=False)
        sptr = cgutils.get_item_pointer(context, builder, sig.args[2],
                                        context.make_array(sig.args[2])(context, builder, s),
                                        [j], wraparound=False)
        value = builder.load(builder.bitcast(sptr, vec.as_pointer()), align=1)
        store = builder.store(value, builder.bitcast(dptr, vec.as_pointer()), align=VECTOR)
        store.set_metadata("nontemporal",
                           builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return types.none(dst, di, src, si), codegen


@intrinsic
def _address(typingctx, a):
    """The address of ``a``'s first element. (``a.ctypes.data`` makes a ctypes object;
    where Numba does not prune its reference count's atomic updates, as in a row loop
    measured once, each waits like a fence for every streamed store in flight.)"""
    if not isinstance(a, types.Array):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        return builder.ptrtoint(data, context.get_value_type(types.uint64))

    return types.uint64(a), codegen


@intrinsic
def fence(typingctx):
    """A full memory fence (``mfence``): orders the streaming stores before it."""
    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def _prefetch_line(typingctx, a, i):
    """A hint to fetch the cache line of ``a[i]`` into the L2 cache (x86 ``prefetcht1``);
    never faults."""
    if not isinstance(a, types.Array) or not isinstance(i, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = builder.module.declare_intrinsic(
            "llvm.prefetch", (), ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]))
        # read, locality 2 (L2), data cache
        builder.call(fn, [ptr, i32(0), i32(2), i32(1)])
        return context.get_dummy_value()

    return types.none(a, i), codegen


def _item(a):  # pragma: no cover - replaced by the overload
    raise NotImplementedError


@overload(_item)
def _item_impl(a):
    """``a.itemsize`` as a constant (the attribute is read at run time, and divisions by it
    would be real ones)."""
    size = a.dtype.bitwidth // 8
    return lambda a: size


@njit(inline="always")
def stream_copy(dst, d0, src, s0, n, stream):
    """``dst[d0:d0 + n] = src[s0:s0 + n]`` (1-D contiguous arrays of one type), streamed
    where asked, the run is long (``LONG``) and the address allows; call ``fence()``
    after. (Unsigned indices: no checks for negative ones, and plain loops vectorise.)"""
    item = _item(dst)
    lanes = VECTOR // item
    i = 0
    u, v = np.uint64(d0), np.uint64(s0)
    at, ui, uv = _address(dst), np.uint64(item), np.uint64(VECTOR)
    if stream and n >= LONG and at % ui == 0:
        head = np.int64(((uv - (at + u * ui) % uv) % uv) // ui)
        for k in range(np.uint64(head)):
            dst[u + k] = src[v + k]
        i = head
        while i + lanes <= n:
            _store_vector(dst, u + np.uint64(i), src, v + np.uint64(i))
            i += lanes
    for k in range(np.uint64(i), np.uint64(n)):
        dst[u + k] = src[v + k]


@njit(inline="always")
def prefetch(a, lo, hi):
    """Hints the cache lines of ``a[lo:hi]`` (a 1-D contiguous array; the span clamped to
    it) to be fetched: the loads that follow find them in cache. Changes nothing else."""
    step = max(1, LINE // _item(a))
    for i in range(max(lo, 0), min(hi, a.shape[0]), step):
        _prefetch_line(a, i)
