"""Borrowed arrays and structrefs: the kernels' data without numba's reference counting.

numba counts the references to every array and structref a kernel passes on or takes a view of,
with an atomic increment and decrement of its meminfo (a full memory barrier each). Here the owners
of the data keep it alive instead, and the kernels see it without a meminfo:
- BorrowedArray: the type of an array numba does not count at all: its data model has no meminfo to
  count, so numba emits no NRT_incref/NRT_decref call for it or for its views. borrowed(tuple)
  gives the fields of the structrefs (flat/model.py, flat/checks.py, flat/lcaba.py) this type, with
  NULL meminfos (numba's no-op calls on NULL meminfos would also keep LLVM from holding values in
  registers across them);
- Borrowed(ref): a structref as a plain pointer to its fields (BorrowedType); the kernels read
  m.joint, d.S, ... as from the structref. The Borrowed object keeps the structref, FastPath the
  Borrowed;
- INPUT_VECTOR: the BorrowedArray type of the kernels' vector arguments from Python. numba's own
  unboxing allocates a meminfo for every NumPy array passed in and checks neither its dtype (an
  int64 array would be read as float64) nor its number of dimensions (a 2-d array would overrun the
  1-d array's struct), which Python would have to check before every call. INPUT_VECTOR
  takes the caller's array without a meminfo and refuses anything but a float64 vector with
  NotAFloat64Vector (a TypeError), in a few native instructions.
"""

import ctypes
import sys

import numpy as np
from llvmlite import ir
from numba import typeof, types
from numba.core import cgutils, imputils
from numba.core.errors import NumbaTypeError
from numba.core.extending import (box, infer_getattr, intrinsic, lower_getattr_generic, models,
                                  NativeValue, register_model, typeof_impl, unbox)
from numba.core.typing.templates import AttributeTemplate

# NumPy's C ABI on 64-bit CPython (numpy/ndarraytypes.h; the same from NumPy 1.7 to 2.x, since
# compiled extensions read these fields directly): PyArrayObject_fields.nd and .descr,
# PyArray_Descr.byteorder and .type_num, as byte offsets (little-endian hosts). _check_numpy_abi()
# verifies them on the running NumPy at import.
ARRAY_ND, ARRAY_DESCR, DESCR_BYTEORDER, DESCR_TYPE_NUM = 24, 56, 26, 28
NPY_DOUBLE, NON_NATIVE = 12, ord('>')  # the type_num of float64; the byte order of a swapped array
NPY_MAXDIMS = 64


class BorrowedArray(types.Array):
    """numba type of an array whose owner keeps it alive: numba emits no reference counting for it
    nor for its views (copy()), and its meminfo is NULL."""

    def __init__(self, dtype, ndim, layout, readonly=False, aligned=True, name=None):
        super().__init__(dtype, ndim, layout, readonly=readonly, aligned=aligned,
                         name=name or f'borrowed {"readonly " if readonly else ""}'
                                      f'array({dtype}, {ndim}d, {layout})')

    def copy(self, dtype=None, ndim=None, layout=None, readonly=None):
        view = super().copy(dtype, ndim, layout, readonly)
        return BorrowedArray(view.dtype, view.ndim, view.layout, not view.mutable, view.aligned)

    # in the names of the structref types, which key numba's cache: not an Array's
    def __repr__(self):
        return 'Borrowed' + super().__repr__()


@register_model(BorrowedArray)
class _BorrowedArrayModel(models.ArrayModel):
    """An array's struct with nothing for numba to count: no meminfo among its members."""

    def traverse(self, builder):
        return []


@box(BorrowedArray)
def _box_borrowed_array(typ, value, c):
    """Refused when a kernel compiles: Python would get an array without an owner of its memory."""
    raise NumbaTypeError(f'{typ} cannot go back to Python, its memory belongs to another array; '
                         'return a copy')


@intrinsic
def borrowed(typingctx, fields):
    """The tuple fields with its arrays as BorrowedArray, their meminfos NULL: numba then skips the
    counting at every view a kernel takes (S[i, j], Xo_E[i], ...), half of the kernels' time
    before. Whoever passed the arrays keeps them alive."""
    def as_borrowed(kind):
        if isinstance(kind, types.Array) and not isinstance(kind, BorrowedArray):
            return BorrowedArray(kind.dtype, kind.ndim, kind.layout, not kind.mutable,
                                 kind.aligned)
        return kind

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
    return types.BaseTuple.from_types([as_borrowed(kind) for kind in fields])(fields), codegen


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
    """The kernels' argument for a structref ref (FlatModelRef, FlatDataRef, ...): the address of
    its fields as an int, which numba unboxes without a lookup; it keeps the ref."""

    def __new__(cls, ref):
        handle = super().__new__(cls, ref._meminfo.data)
        handle.ref, handle.numba_type = ref, BorrowedType(typeof(ref))
        return handle


@typeof_impl.register(Borrowed)
def _typeof_borrowed(value, context):
    return value.numba_type


@unbox(BorrowedType)
def _unbox_borrowed(typ, obj, c):
    return NativeValue(c.builder.bitcast(c.pyapi.long_as_voidptr(obj),
                                         c.context.get_value_type(typ)))


@infer_getattr
class _BorrowedFields(AttributeTemplate):
    key = BorrowedType

    def generic_resolve(self, typ, attr):
        return typ.struct_type.field_dict.get(attr)


@lower_getattr_generic(BorrowedType)
def _borrowed_field(context, builder, typ, value, attr):
    fields = cgutils.create_struct_proxy(typ.struct_type.get_data_type())(
        context, builder, ref=value)
    return imputils.impl_ret_borrowed(context, builder, typ.struct_type.field_dict[attr],
                                      getattr(fields, attr))


class NotAFloat64Vector(TypeError):
    """What a kernel's entry point raises for an INPUT_VECTOR argument that is not a float64 NumPy
    vector."""


class InputVector(BorrowedArray):
    """numba type of a float64 vector (any layout, read only) passed in from Python
    (INPUT_VECTOR)."""

    def __init__(self):
        super().__init__(types.float64, 1, 'A', readonly=True, name='InputVector')

    def __repr__(self):
        return 'InputVector()'


register_model(InputVector)(_BorrowedArrayModel)
INPUT_VECTOR = InputVector()
# room for the shape and strides of any array
_ANY_ARRAY = types.Array(types.float64, NPY_MAXDIMS, 'A')


@unbox(InputVector)
def _unbox_input_vector(typ, obj, c):
    """The array obj without a meminfo (the caller holds it) if it is a 1-d float64 NumPy array in
    native byte order, else NotAFloat64Vector. numba's numba_adapt_ndarray checks that obj is an
    array and reads its data, shape and strides (compactly: a vector's stride follows its
    length)."""
    builder, i32 = c.builder, ir.IntType(32)
    scratch = c.context.make_array(_ANY_ARRAY)(c.context, c.builder)
    adapt = cgutils.get_or_insert_function(builder.module,
                                           ir.FunctionType(i32, [c.pyapi.pyobj, c.pyapi.voidptr]),
                                           'numba_adapt_ndarray')
    is_array = builder.icmp_signed(
        '==', builder.call(adapt, (obj, builder.bitcast(scratch._getpointer(), c.pyapi.voidptr))),
        i32(0))
    accepted = cgutils.alloca_once_value(builder, cgutils.false_bit)
    with builder.if_then(is_array):
        descr = _field(builder, obj, ARRAY_DESCR, ir.IntType(8).as_pointer())
        float64 = builder.and_(
            builder.icmp_signed('==', _field(builder, descr, DESCR_TYPE_NUM, i32),
                                i32(NPY_DOUBLE)),
            builder.icmp_unsigned('!=', _field(builder, descr, DESCR_BYTEORDER, ir.IntType(8)),
                                  ir.IntType(8)(NON_NATIVE)))
        builder.store(builder.and_(float64,
                                   builder.icmp_signed('==', _field(builder, obj, ARRAY_ND, i32),
                                                       i32(1))),
                      accepted)
    refused = builder.not_(builder.load(accepted))
    vector = c.context.make_array(typ)(c.context, builder)
    with builder.if_else(refused, likely=False) as (refuse, accept):
        with refuse:
            error = c.pyapi.unserialize(c.pyapi.serialize_object(NotAFloat64Vector))
            c.pyapi.err_set_string(error, 'expected a float64 NumPy vector')
            c.pyapi.decref(error)
        with accept:
            length, stride = (builder.extract_value(scratch.shape, i) for i in (0, 1))
            c.context.populate_array(vector, data=scratch.data,
                                     shape=cgutils.pack_array(builder, [length]),
                                     strides=cgutils.pack_array(builder, [stride]),
                                     itemsize=scratch.itemsize, meminfo=None, parent=obj)
    return NativeValue(vector._getvalue(), is_error=refused)


def _field(builder, pointer, offset, kind):
    """The value of type kind at byte offset of pointer."""
    address = builder.gep(builder.bitcast(pointer, ir.IntType(8).as_pointer()),
                          [ir.IntType(64)(offset)])
    return builder.load(builder.bitcast(address, kind.as_pointer()))


def _check_numpy_abi():
    x = np.zeros(1)
    found = (ctypes.c_int.from_address(id(x) + ARRAY_ND).value,
             ctypes.c_void_p.from_address(id(x) + ARRAY_DESCR).value,
             ctypes.c_char.from_address(id(x.dtype) + DESCR_BYTEORDER).value,
             ctypes.c_int.from_address(id(x.dtype) + DESCR_TYPE_NUM).value, sys.byteorder)
    if found != (1, id(x.dtype), b'=', NPY_DOUBLE, 'little'):
        raise ImportError(f'NumPy {np.__version__} lays out its arrays unlike ARRAY_ND, '
                          f'ARRAY_DESCR, ... of {__name__} (found {found}); the compiled kernels '
                          'cannot read its arrays')


_check_numpy_abi()
