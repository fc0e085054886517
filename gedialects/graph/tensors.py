"""Tensor values: element types <-> numpy dtypes, and constant attributes
(`dense<...>`, `dense_resource<key>` blobs) <-> numpy arrays."""

from __future__ import annotations

import re

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    Builtin,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

_UI8 = IntegerType(8, Signedness.UNSIGNED)

_TO_NUMPY: list[tuple[Attribute, np.dtype]] = [
    (f32, np.dtype(np.float32)),
    (f16, np.dtype(np.float16)),
    (f64, np.dtype(np.float64)),
    (i64, np.dtype(np.int64)),
    (i32, np.dtype(np.int32)),
    (i16, np.dtype(np.int16)),
    (i8, np.dtype(np.int8)),
    (_UI8, np.dtype(np.uint8)),
    (i1, np.dtype(np.bool_)),
]

SMALL_CONSTANT_ELEMENTS = 16
"""Constants up to this many elements print inline as `dense<...>`."""


def numpy_dtype(element_type: Attribute) -> np.dtype:
    for t, d in _TO_NUMPY:
        if t == element_type:
            return d
    raise ValueError(f"element type {element_type} has no numpy equivalent")


def element_type(dtype: np.dtype) -> Attribute:
    for t, d in _TO_NUMPY:
        if d == np.dtype(dtype):
            return t
    raise ValueError(f"numpy dtype {dtype} has no graph element type")


def tensor_type(array: np.ndarray) -> TensorType:
    return TensorType(element_type(array.dtype), array.shape)


def _resources() -> OpAsmDialectInterface:
    interface = Builtin.get_interface(OpAsmDialectInterface)
    assert interface is not None
    return interface


class ArrayBlob:
    """A blob held as an array, turned into MLIR's hex text only when printed.

    xDSL keeps blobs as hex strings; a model's weights would be hexed at
    import and decoded again to run (seconds for VGG's 0.5 GB). The printer
    only formats the value and tests its truth, which this type provides.
    """

    def __init__(self, array: np.ndarray):
        self.array = array

    def __str__(self) -> str:
        data = self.array.astype(np.uint8) if self.array.dtype == np.bool_ else self.array
        align = max(4, data.dtype.itemsize)
        return "0x" + align.to_bytes(4, "little").hex() + data.tobytes().hex()

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731

    def __len__(self) -> int:
        """Characters of the hex text, without building it ("0x", the
        alignment word, two per byte)."""
        return 2 + 8 + 2 * self.array.nbytes

    def __bool__(self) -> bool:
        return True


_decoded: dict[str, tuple[str, np.ndarray]] = {}


def resource_array(attr: DenseResourceAttr) -> np.ndarray:
    """The array behind a dense_resource (blob: 4-byte alignment, then data)."""
    key = attr.resource_handle.data
    blob = _resources().lookup(key)
    if not blob:
        raise KeyError(f"dense_resource<{key}> has no blob in dialect_resources")
    if isinstance(blob, ArrayBlob):
        return blob.array
    cached = _decoded.get(key)
    if cached is not None and cached[0] is blob:
        return cached[1]
    assert isinstance(attr.type, TensorType)
    dtype = numpy_dtype(attr.type.element_type)
    raw = bytes.fromhex(blob[10:])
    shape = tuple(attr.type.get_shape())
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) != expected:
        raise ValueError(
            f"dense_resource<{key}> holds {len(raw)} bytes, its type needs {expected}"
        )
    array = np.frombuffer(raw, dtype=dtype).reshape(shape)
    _decoded[key] = (blob, array)
    return array


def contiguous(array: np.ndarray) -> np.ndarray:
    """A C-contiguous array of the same shape. Unlike np.ascontiguousarray,
    which returns at least 1-d, a 0-d array stays 0-d (a scalar index must
    stay a `tensor<i64>`, not become a `tensor<1xi64>`)."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(array.shape)


def resource_attr(name: str, array: np.ndarray) -> DenseResourceAttr:
    """Store `array` as a blob under a key derived from `name`."""
    key = re.sub(r"[^A-Za-z0-9_.]", "_", name) or "blob"
    if not re.match(r"[A-Za-z_]", key):
        key = "_" + key
    interface = _resources()
    key = interface.declare_resource(key)
    interface._blob_storage[key] = ArrayBlob(contiguous(array))  # type: ignore[assignment]
    return DenseResourceAttr.from_params(key, tensor_type(array))


def release_resources(keys: list[str]) -> None:
    """Forget blobs (they live in the process-wide builtin dialect)."""
    storage = _resources()._blob_storage  # xDSL offers no public removal
    for k in keys:
        storage.pop(k, None)
        _decoded.pop(k, None)


def dense_attr(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    data = contiguous(array)
    if data.dtype == np.bool_:
        data = data.astype(np.int8)
    return DenseIntOrFPElementsAttr(tensor_type(array), BytesAttr(data.tobytes()))


def constant_attr(name: str, array: np.ndarray) -> DenseIntOrFPElementsAttr | DenseResourceAttr:
    """Inline small constants, put weights in blobs."""
    if array.size <= SMALL_CONSTANT_ELEMENTS:
        return dense_attr(array)
    return resource_attr(name, array)


def attr_array(attr: Attribute) -> np.ndarray:
    """The numpy value of a constant attribute."""
    if isinstance(attr, DenseResourceAttr):
        return resource_array(attr)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        t = attr.get_type()
        assert isinstance(t, TensorType)
        dtype = numpy_dtype(t.element_type)
        shape = tuple(t.get_shape())
        raw = attr.data.data
        storage = np.int8 if dtype == np.bool_ else dtype
        flat = np.frombuffer(raw, dtype=storage)
        n = int(np.prod(shape))
        if flat.size == 1 and n != 1:
            flat = np.repeat(flat, n)
        return flat.astype(dtype, copy=False).reshape(shape)
    raise TypeError(f"{attr} is not a tensor constant")


def is_float(element: Attribute) -> bool:
    return isinstance(element, Float16Type | Float32Type | Float64Type)


def tensor_nbytes(ttype: TensorType) -> int:
    """Bytes of a static tensor type's elements."""
    n = 1
    for d in ttype.get_shape():
        n *= d
    return n * numpy_dtype(ttype.element_type).itemsize
