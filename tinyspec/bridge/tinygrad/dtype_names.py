"""tinygrad's dtypes by name, as tinyspec's: what a tinygrad node's dtype translates to, and the dtype a weak one (a
Python literal's, committed by its consumer) takes when nothing else decides it."""
from __future__ import annotations

from typing import Any

from tinyspec.dtype import DType, dtypes


DTYPES: dict[str, DType] = {"bool": dtypes.bool, "char": dtypes.int8, "signed char": dtypes.int8, "short": dtypes.int16,
                            "int": dtypes.int32, "long": dtypes.int64, "uchar": dtypes.uint8, "unsigned char": dtypes.uint8,
                            "ushort": dtypes.uint16, "unsigned short": dtypes.uint16, "uint": dtypes.uint32,
                            "unsigned int": dtypes.uint32, "ulong": dtypes.uint64, "unsigned long": dtypes.uint64,
                            "float": dtypes.float32, "double": dtypes.float64, "void": dtypes.void, "index": dtypes.index,
                            # the small floats by tinygrad's names; its float8_e4m3 has no infinity (float_to_fp8 gives NaN
                            # for one), which is float8_e4m3fn; its fnuz fp8 dtypes are named as ml_dtypes names them
                            "half": dtypes.float16, "__bf16": dtypes.bfloat16, "float8_e4m3": dtypes.float8_e4m3fn,
                            "float8_e5m2": dtypes.float8_e5m2, "float8_e4m3fnuz": dtypes.float8_e4m3fnuz,
                            "float8_e5m2fnuz": dtypes.float8_e5m2fnuz}


WEAK_DEFAULT = {"weakint": dtypes.index, "weakfloat": dtypes.float32}


def is_weak(dt: Any) -> bool: return dt.name in WEAK_DEFAULT
