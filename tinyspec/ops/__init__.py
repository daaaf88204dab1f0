"""One meaning per op: dtype classes, scalar (C) meaning, numpy meaning, z3 meaning, interval bounds, C spelling."""
from tinyspec.ops.classes import DTYPE_CLASS, accepts, class_name, dtype_error

__all__ = ["DTYPE_CLASS", "accepts", "class_name", "dtype_error"]
