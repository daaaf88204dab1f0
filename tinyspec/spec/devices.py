"""Devices as the fused checks read them (spec/fast.py): cheaply, passed up a chain of single-source nodes, cached on the nodes.

tensor.one_device's fast predicate reads a device where it is cheap: the walk passes it up a chain of single-source nodes
(a view's device is its source's), a binary's test caches its own, and device_of derives one down a chain of single-source
nodes to a cached one; only where none is cached is it derived in full (UOp.device).
"""
from __future__ import annotations

from tinyspec.uop import Malformed, OWN_DEVICE, UOp

UNKNOWN = object()  # a device not known yet (none cached on the node)
MIXED = object()    # what same_device gives sources on two devices


def device_of(u: UOp) -> object:
  """u.device, cheaply above a node whose device is cached: down a chain of ops of one source (views, unary ALUs, casts,
  REDUCE...), whose device is their source's, as the device rule derives it; each node of the chain gets it cached. Only
  what the chain ends on, when nothing below it has a device cached yet, is derived in full (UOp.device)."""
  d = u._cache.get("device", UNKNOWN)
  if d is UNKNOWN:
    chain = []
    while len(u.src) == 1 and u.op not in OWN_DEVICE:  # storage has no source; a COPY's device is its arg, a GETTUPLE's its body output's
      chain.append(u)
      u = u.src[0]
      if (d := u._cache.get("device", UNKNOWN)) is not UNKNOWN: break
    d = u.device if d is UNKNOWN or isinstance(d, Malformed) else d
    for x in chain: x._cache["device"] = d
  return None if isinstance(d, Malformed) else d


def same_device(u: UOp, a: UOp, b: UOp, da: object = UNKNOWN, db: object = UNKNOWN) -> object:
  """tensor.one_device of two sources: u's device (the first source's that has one, as the device rule derives it, cached
  on u for the tests of its users) when a and b are on one device or one of them has none, else MIXED. da and db are
  their devices when the caller knows them."""
  if da is UNKNOWN: da = device_of(a)
  if db is UNKNOWN: db = device_of(b)
  if da is None: d = db
  elif db is None or da == db: d = da
  else: return MIXED
  u._cache["device"] = d
  return d


def one_device3(u: UOp, c: UOp, a: UOp, b: UOp) -> bool:
  """tensor.one_device for WHERE's three sources (u's device cached, as same_device does)."""
  ds = [d for d in (device_of(c), device_of(a), device_of(b)) if d is not None]
  for d in ds[1:]:
    if d != ds[0]: return False
  u._cache["device"] = ds[0] if ds else None
  return True
