"""Sharded against one device: a metamorphic relation of the multi pass (tinyspec/lower/multi.py).

A tensor case and its twin on the other side of the relation must give the same results:

- a case with MULTIs has a one-device twin (`one_device_twin`): every MULTI replaced by the value it means on one device
  (its shards side by side along its axis, or replica 0), every COPY to one of the MULTIs' devices dropped and every
  PARAM standing for a value there moved to the case's home device, so the twin never meets the multi pass;
- an ordinary one-device case (no COPY, no assign, no buffer read inside a call body) has a sharded twin
  (`sharded_twin`): every input tensor (a BUFFER, or a RESHAPE of one) sharded over SHARD_DEVICES along an axis of size
  2 or more (picked by the case number), replicated when it has none. The relation applies when the twin is legal at
  TENSOR and the multi pass places it (a MultiError means it does not).

The twin is lowered once, through the whole pipeline, and evaluated on the reference evaluator; its results are compared
with the case's reference results by fuzz.check.agree (an all-reduce sums per shard and then across shards: float sums
in another order, within its tolerances).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from tinyspec.frontend.devices import shard as shard_tensor
from tinyspec.frontend.tensor import Tensor
from tinyspec.lower.multi import concat
from tinyspec.rewrite import PatternMatcher, UPat, graph_rewrite
from tinyspec.uop import Ops, UOp, substitute, walk

SHARD_DEVICES = ("CPU:0", "CPU:1")
HOME = "CPU"  # the frontend's default device, where a case's inputs live


def multi_devices(root: UOp) -> frozenset[str]:
  """The devices the MULTIs of root (call bodies included) have shards on."""
  return frozenset(s.device for u in root.toposort() if u.op is Ops.MULTI for s in u.src)


# ---- the one-device twin: a substitute pass ----
# ctx: (the MULTIs' devices, the home device)
def _one_value(m: UOp) -> UOp: return m.src[0] if m.arg is None else concat(m.src, m.arg)


def _param_home(ctx: tuple[frozenset[str], str], p: UOp) -> UOp: return p.replace(arg=dataclasses.replace(p.arg, device=ctx[1]))


def _copy_rule(ctx: tuple[frozenset[str], str], c: UOp) -> UOp | None:
  if c.arg in ctx[0]: return c.src[0] if c.src[0].device in (ctx[1], None) else c.replace(arg=ctx[1])
  if c.src[0].device == c.arg: return c.src[0]
  return None


pm_one_device = PatternMatcher([
  ("twin_multi", UPat(Ops.MULTI, name="m"), _one_value),
  # a copy onto a shard's device goes home instead (none when the value is home already), and so does a copy home
  ("twin_copy", UPat(Ops.COPY, name="c"), _copy_rule),
  ("twin_param_home", UPat(Ops.PARAM, name="p"), lambda ctx, p: _param_home(ctx, p) if p.arg.device in ctx[0] else None),
], "pm_one_device")


def one_device_twin(root: UOp, home: str = HOME) -> UOp:
  """root with every MULTI its one-device value, on `home` (see the module docstring)."""
  return graph_rewrite(root, pm_one_device, (multi_devices(root), home), bottom_up=True)


# ---- the sharded twin ----
def _outside_calls(u: UOp) -> Sequence[UOp]: return u.src[1:] if u.op is Ops.CALL else u.src


def _applies(root: UOp) -> bool:
  """The sharded twin of root is defined: no device moves or MULTIs, no assign (storage is on one device), and no call
  body that reads a BUFFER itself (its args are sharded, the buffer it reads is not)."""
  nodes = root.toposort()
  if any(u.op in (Ops.COPY, Ops.MULTI, Ops.AFTER, Ops.STORE) for u in nodes): return False
  outside = set(walk((root,), _outside_calls))
  return not any(u.op is Ops.BUFFER and u not in outside for u in nodes)


def _inputs(root: UOp) -> list[UOp]:
  """The input tensors of root outside call bodies: RESHAPEs of BUFFERs, and BUFFERs read flat, in walk order."""
  nodes = list(walk((root,), _outside_calls))
  views = [u for u in nodes if u.op is Ops.RESHAPE and u.src[0].op is Ops.BUFFER]
  flat = {u.src[k] for u in nodes if u.op is not Ops.RESHAPE for k in range(len(u.src)) if u.src[k].op is Ops.BUFFER}
  return views + [u for u in nodes if u in flat]


def _sharded(x: UOp, k: int, devices: Sequence[str]) -> UOp:
  """Input x over the devices: along an axis of size 2 or more, the k-th of them cyclically; replicated if none."""
  axes = [a for a, d in enumerate(x.shape) if d >= len(devices)]
  t = shard_tensor(Tensor(x), devices, axes[k % len(axes)] if axes else None)
  return t.uop


def sharded_twin(root: UOp, index: int = 0, devices: Sequence[str] = SHARD_DEVICES) -> UOp | None:
  """root with every input sharded over the devices (the module docstring), the axes picked by index; None when the
  relation does not apply."""
  if not _applies(root): return None
  ins = _inputs(root)
  if not ins: return None
  return substitute(root, {x: _sharded(x, index + k, devices) for k, x in enumerate(ins)}, into_calls=False)
