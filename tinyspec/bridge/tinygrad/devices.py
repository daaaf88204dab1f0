"""tinygrad's device tuples as read off its nodes: how many devices a node is over, the slots a call's args take once each
arg over a tuple is one arg per device (tinyspec's storage is on one device), the launches of a kernel over a tuple, and
the axis a sharded arg is split along. Nothing here translates: the rules and the Translator ask these questions."""
from __future__ import annotations

from typing import Any


def multi_count(u: Any) -> int | None:
  """The number of devices of a kernel-graph node over a device tuple (multi-device storage, an MSTACK of per-device
  storage, an AFTER or CALL of them), else None."""
  while u.op.name == "AFTER": u = u.src[0]
  if u.op.name == "MSTACK": return len(u.src)
  if u.op.name == "CALL": return next((n for a in u.src[1:] if (n := multi_count(a)) is not None), None)
  d = getattr(u.arg, "device", None) if u.op.name in ("PARAM", "BUFFER") else None
  return len(d) if isinstance(d, tuple) else None


def expanded_slots(counts: list[int | None]) -> dict[int, int]:
  """Arg k of a call over n_k devices (None: one) -> its first slot once every arg over a device tuple is one arg per
  device, in order (arg k's device j at slot expanded[k] + j)."""
  out, nxt = {}, 0
  for k, n in enumerate(counts):
    out[k], nxt = nxt, nxt + (n or 1)
  return out


def graph_slots(kg: Any) -> dict[int, int] | None:
  """expanded_slots of a kernel graph's own top-level PARAMs (outside kernel bodies), when one is over a device tuple
  and its slots are 0..n-1: the graph of a call checked on its own (tinygrad's all-reduce), its args not at hand."""
  counts: dict[int, int | None] = {}
  for u in kg.toposort(gate=lambda x: not (x.op.name == "SINK" and type(x.arg).__name__ == "KernelInfo")):
    if u.op.name == "PARAM" and getattr(u.arg, "slot", -1) >= 0: counts[u.arg.slot] = multi_count(u)
  if not any(n is not None for n in counts.values()) or sorted(counts) != list(range(len(counts))): return None
  return expanded_slots([counts[k] for k in range(len(counts))])


def launches(root: Any) -> tuple[int | None, ...]:
  """The devices a kernel AST or PROGRAM runs on, as the Translator's shard: (None,) for one device; for storage over a device tuple
  one number per device. tinygrad 0.14 keeps such a kernel one AST over multi-device PARAMs, and its runtime launches it
  once per device on that device's buffers (tinygrad.engine.realize.unwrap_multi), which is what each translation is."""
  devs = {len(d) for x in root.toposort() if x.op.name in ("PARAM", "BUFFER") and isinstance(d := getattr(x.arg, "device", None), tuple)}
  return tuple(range(devs.pop())) if len(devs) == 1 else (None,)


def param_axis(u: Any) -> int | None:
  """The axis a PARAM standing for a sharded call arg is split along (tinygrad's ParamArg.axis), None otherwise."""
  return getattr(u.arg, "axis", None) if u.op.name == "PARAM" else None
