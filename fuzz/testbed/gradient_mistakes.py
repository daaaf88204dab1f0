"""Mistakes in the gradient rules, for the "gradient rule" mutants of fuzz.testbed.mutants: each function is the broken
replacement of one rule of autograd.pm_gradient."""
from __future__ import annotations

import math

from tinyspec.autograd import full_like
from tinyspec.uop import Ops, UOp


def sin_grad_sign(ctx: UOp, x: UOp) -> tuple[UOp]:
  return (x.alu(Ops.SUB, full_like(x, math.pi / 2)).alu(Ops.SIN).alu(Ops.MUL, ctx),)  # sin(x - pi/2) = -cos(x)


def max_grad_ties_full(ctx: UOp, ret: UOp) -> tuple[UOp, UOp]:
  a, b = ret.src
  zero = full_like(ctx, 0.0)
  return a.alu(Ops.CMPLT, b).where(zero, ctx), b.alu(Ops.CMPLT, a).where(zero, ctx)  # a tie gives the whole gradient to both


def log2_grad_times_ln2(ctx: UOp, x: UOp) -> tuple[UOp]:
  return (ctx.alu(Ops.MUL, x.alu(Ops.MUL, full_like(x, math.log(2))).alu(Ops.RECIP)).alu(Ops.MUL, full_like(x, math.log(2) ** 2)),)  # ln2 twice


def reduce_max_grad_all(ctx: UOp, ret: UOp) -> tuple[UOp]:
  x = ret.src[0]
  n = ret.arg[1]
  if n == 0: return (ctx,)
  dims = x.shape[:n]
  return (x.eq(ret.expand(dims)).cast(x.dtype).alu(Ops.MUL, ctx.expand(dims)),)  # every maximum gets the whole gradient, not a share


def sqrt_grad_no_half(ctx: UOp, ret: UOp) -> tuple[UOp]:
  return (ctx.alu(Ops.MUL, ret.alu(Ops.RECIP)),)  # 1 / sqrt(x), missing the 1/2
