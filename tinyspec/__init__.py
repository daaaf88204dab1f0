"""tinyspec: an executable spec, reference lowering, runtimes and fuzzers for a tinygrad-style UOp IR."""
from tinyspec.dtype import DType, dtypes
from tinyspec.spec import SpecError, Stage, Violation, check, verify
from tinyspec.uop import GroupOp, Ops, UOp

from tinyspec.autograd import gradient

__all__ = ["DType", "dtypes", "UOp", "Ops", "GroupOp", "Stage", "check", "verify", "SpecError", "Violation", "gradient"]
