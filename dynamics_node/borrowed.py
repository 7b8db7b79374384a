"""Borrowed arrays and structrefs: the kernels' data without numba's reference counting.

numba counts the references to every array and structref a kernel passes on or takes a view of, with an
atomic increment and decrement of its meminfo (a full memory barrier each, ~12 ns). Here the owners of
the data keep it alive instead, and the kernels see it without a meminfo:
- borrowed(tuple): the tuple with its arrays' meminfos NULL (numba skips the counting of NULL ones), for
  the fields of the structrefs (flat.py, flat_checks.py, flat_lcaba.py) and a public call's input vectors
  (compiled_calls.py), which the caller holds during the call;
- Borrowed(ref): a structref as a plain pointer to its fields (BorrowedType); the kernels read m.joint,
  d.S, ... as from the structref. The Borrowed object keeps the structref, FastPath the Borrowed. A fused
  public call on the four-bar counted 32 times without it, 14 with it (its input vectors) and 0 with both.
"""

from numba import typeof, types
from numba.core import cgutils, imputils
from numba.core.extending import (infer_getattr, intrinsic, lower_getattr_generic, models, NativeValue,
                                  register_model, typeof_impl, unbox)
from numba.core.typing.templates import AttributeTemplate


@intrinsic
def borrowed(typingctx, fields):
    """The tuple fields with its arrays' meminfos NULL: numba then skips the counting at every view a kernel
    takes (S[i, j], Xo_E[i], ...), half of the kernels' time before. Whoever passed the arrays keeps them
    alive."""
    def codegen(context, builder, signature, args):
        values = []
        for i, kind in enumerate(signature.args[0]):
            value = builder.extract_value(args[0], i)
            if isinstance(kind, types.Array):
                view = context.make_array(kind)(context, builder, value)
                view.meminfo = cgutils.get_null_value(view.meminfo.type)
                value = view._getvalue()
            values.append(value)
        return context.make_tuple(builder, signature.return_type, values)
    return fields(fields), codegen


class BorrowedType(types.Type):
    """numba type of a Borrowed handle of a structref of type struct_type."""

    def __init__(self, struct_type):
        self.struct_type = struct_type
        super().__init__(name=f'Borrowed({struct_type.name})')


@register_model(BorrowedType)
class _BorrowedModel(models.PrimitiveModel):
    """A pointer to the structref's payload (its fields)."""

    def __init__(self, dmm, fe_type):
        payload = dmm.lookup(fe_type.struct_type.get_data_type()).get_value_type()
        super().__init__(dmm, fe_type, payload.as_pointer())


class Borrowed(int):
    """The kernels' argument for a structref ref (FlatModelRef, FlatDataRef, ...): the address of its fields
    as an int, which numba unboxes without a lookup; it keeps the ref."""

    def __new__(cls, ref):
        handle = super().__new__(cls, ref._meminfo.data)
        handle.ref, handle.numba_type = ref, BorrowedType(typeof(ref))
        return handle


@typeof_impl.register(Borrowed)
def _typeof_borrowed(value, context):
    return value.numba_type


@unbox(BorrowedType)
def _unbox_borrowed(typ, obj, c):
    return NativeValue(c.builder.bitcast(c.pyapi.long_as_voidptr(obj), c.context.get_value_type(typ)))


@infer_getattr
class _BorrowedFields(AttributeTemplate):
    key = BorrowedType

    def generic_resolve(self, typ, attr):
        return typ.struct_type.field_dict.get(attr)


@lower_getattr_generic(BorrowedType)
def _borrowed_field(context, builder, typ, value, attr):
    fields = cgutils.create_struct_proxy(typ.struct_type.get_data_type())(context, builder, ref=value)
    return imputils.impl_ret_borrowed(context, builder, typ.struct_type.field_dict[attr], getattr(fields, attr))
