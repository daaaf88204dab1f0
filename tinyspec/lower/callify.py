"""callify (TENSOR -> TENSOR): resolve value calls.

inline (default): GETTUPLE(CALL(TUPLE(v0, ...), a0, ...), i) becomes v_i with every PARAM slot k of the body
replaced by a_k (flat: RESHAPE(a_k, (size,)) when a_k is not already of shape (size,)). The rewrite is bottom-up, so
calls nested in a body are resolved before the body is substituted into its caller: a PARAM always belongs to the
innermost body it is reached from, and substitution never enters a nested CALL's body (src[0]).

precompile: value calls stay; rangeify lowers each body into its own kernel graph. Both modes fold GETTUPLE of a bare
TUPLE.
"""
from __future__ import annotations

from tinyspec.lower.base import LowerOptions, Pass, Tables, Trace
from tinyspec.rewrite import PatternMatcher, UPat
from tinyspec.spec import Stage
from tinyspec.uop import Ops, UOp, substitute, walk


def flat_arg(a: UOp, size: int) -> UOp:
  """What PARAM of `size` elements stands for when bound to arg a: a itself when flat, else its flat reshape."""
  if a.size != size: raise ValueError(f"call arg of shape {a.shape} ({a.size} elements) bound to a PARAM of {size} elements")
  return a if a.shape == (size,) else a.reshape((size,))


def substitute_params(body: UOp, args: tuple[UOp, ...]) -> UOp:
  """body with each PARAM slot k it owns replaced by args[k]. Nested CALL bodies own their PARAMs and are kept."""
  mapping: dict[UOp, UOp] = {}
  for u in walk((body,), lambda u: u.src[1:] if u.op is Ops.CALL else u.src):
    if u.op is not Ops.PARAM: continue
    if u.arg.slot >= len(args): raise ValueError(f"PARAM slot {u.arg.slot} of a call body, but the call has {len(args)} args")
    mapping[u] = flat_arg(args[u.arg.slot], u.arg.size)
  return substitute(body, mapping, into_calls=False)


def _inline_call(g: UOp, call: UOp) -> UOp:
  body = call.src[0]
  if not 0 <= g.arg < len(body.src): raise ValueError(f"GETTUPLE index {g.arg} of a call returning {len(body.src)} values")
  return substitute_params(body.src[g.arg], call.src[1:])


def tuple_element(g: UOp, t: UOp) -> UOp:
  """Element g.arg of the TUPLE t that GETTUPLE g reads; ValueError naming the index when there is none."""
  if not 0 <= g.arg < len(t.src): raise ValueError(f"GETTUPLE index {g.arg} of a TUPLE of {len(t.src)} values")
  return t.src[g.arg]


pm_fold_tuple = PatternMatcher([
  ("gettuple_of_tuple", UPat(Ops.GETTUPLE, src=(UPat(Ops.TUPLE, name="t"),), name="g"), tuple_element),
], "callify_fold")

pm_inline = PatternMatcher([
  ("inline_gettuple_of_call", UPat(Ops.GETTUPLE, src=(UPat(Ops.CALL, src=(UPat(Ops.TUPLE),), allow_any_len=True, name="call"),), name="g"),
   _inline_call),
], "callify_inline")


def run(root: UOp, options: LowerOptions, trace: Trace, tables: Tables) -> UOp:
  fold = tables["callify_fold"]
  if options.callify == "inline": return trace.rewrite(root, tables["callify_inline"] + fold, bottom_up=True)
  if options.callify == "precompile": return trace.rewrite(root, fold, bottom_up=True)
  raise ValueError(f"unknown callify mode {options.callify!r}; expected 'inline' or 'precompile'")


CALLIFY = Pass("callify", Stage.TENSOR, Stage.TENSOR, run, (pm_inline, pm_fold_tuple))
