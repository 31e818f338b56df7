"""A cache prefetch hint for compiled kernels (numba has none of its own).

``prefetch(array, i)`` asks the processor to start loading ``array[i]`` into its caches and returns at once;
it never changes a result. Kernels that read many short, scattered vectors one after another use it to overlap
the next vector's memory latency with the current one's arithmetic.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

# llvm.prefetch(address, rw = 0 read, locality = 3 keep in all levels, cache type = 1 data).
_READ, _KEEP_EVERYWHERE, _DATA_CACHE = 0, 3, 1


@intrinsic
def prefetch(typingctx, array, index):
    """Hint that ``array[index]`` (a 1-d array, a valid index) will be read soon; returns None."""
    if not isinstance(array, types.Array) or array.ndim != 1 or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        array_type, index_type = signature.args
        view = context.make_array(array_type)(context, builder, args[0])
        position = context.cast(builder, args[1], index_type, types.intp)
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, [position])
        byte_pointer_type = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        hint_type = ir.FunctionType(ir.VoidType(), [byte_pointer_type, int32, int32, int32])
        hint = cgutils.get_or_insert_function(builder.module, hint_type, "llvm.prefetch.p0i8")
        builder.call(hint, [builder.bitcast(pointer, byte_pointer_type), int32(_READ), int32(_KEEP_EVERYWHERE),
                            int32(_DATA_CACHE)])
        return context.get_dummy_value()

    return types.none(array, index), codegen
