"""TENSOR rules for gradient graphs: the form of a backward value call (tinyspec.autograd.backward_call).

A backward call is a value CALL named "<forward name>.grad": CALL(TUPLE(d_0..d_{n-1}), a_0..a_{n-1}, g_0..g_{m-1}),
where a_0..a_{n-1} are the forward call's inputs (its args, then any BUFFERs its body reads directly) and g_j the
gradient of its output j. Its result slots are source positions: slot k is the gradient for input a_k, flat, with
a_k's element count and dtype, and there are exactly as many slots as inputs (the output gradients follow the
inputs, so there is at least one arg more than slots). The TENSOR table (spec/tensor.py) holds the rule.
"""
from __future__ import annotations

from tinyspec.spec.base import Ctx, Finding, rule, safe_repr
from tinyspec.spec.shared import is_value, shape_ok, what
from tinyspec.uop import UOp, is_value_call

GRAD_SUFFIX = ".grad"


def _is_backward(u: UOp) -> bool:
  return isinstance(u.arg, str) and u.arg.endswith(GRAD_SUFFIX) and is_value_call(u)


@rule("gradient.backward_slots", "A backward call (a value CALL named '<name>.grad') has one result slot per forward input (the "
      "forward args, then the BUFFERs the forward body reads): its TUPLE has fewer slots than the call has args (the forward "
      "inputs come first, then one gradient per forward output), and slot k is flat (shape (size,)) with the element count "
      "and dtype of arg k.")
def backward_slots(u: UOp, cx: Ctx) -> list[Finding] | str | None:
  if not _is_backward(u): return None
  slots, args = u.src[0].src, u.src[1:]
  if len(slots) >= len(args):
    return (f"backward call {safe_repr(u.arg)} returns {len(slots)} slot(s) but has only {len(args)} arg(s); at {cx.sname} a backward call takes the "
            "forward args and then one gradient per forward output, and returns one slot per forward arg")
  out: list[Finding] = []
  for k, (d, a) in enumerate(zip(slots, args)):
    if not is_value(d) or not shape_ok(d) or not shape_ok(a) or a.shape is None: continue
    if d.shape != (a.size,) or d.dtype != a.dtype:
      out.append(((0, k), d, "gradient.backward_slots",
                  f"slot {k} of backward call {safe_repr(u.arg)} is {what(d)} of {d.dtype.name} {d.shape} but arg {k} is {a.dtype.name} of "
                  f"{a.size} element(s); at {cx.sname} slot k is the flat gradient for arg k, shape ({a.size},) and dtype {a.dtype.name}"))
  return out or None

