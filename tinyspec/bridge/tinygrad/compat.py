"""Which tinygrad the bridge runs on, and the places tinygrad versions differ for it: the one module that knows.

The bridge works on tinygrad 0.14.0 (PyPI) and on tinygrad's repository at commit a9069c17 (whose pyproject still
says 0.13.0 though it is newer), and tries any other. A tinygrad is identified by what it has (`FEATURES`, detected on
the imported module), not by its number: `identify` names it by the KNOWN version whose features it has exactly; a
number (the module's `__version__`, else the installed distribution of the directory it was imported from) only tells
releases apart. An unknown tinygrad gets one warning line (`warn_if_unknown`), never a refusal: whatever the bridge
does not know of it is reported as untranslatable (op, stage, count) or as a stage not captured, and the rest is checked.

What differs between 0.14.0 and a9069c17, and what the bridge does about it:
- a9069c17 adds Ops.WAIT (and so renumbers the Ops after ENDIF): the translation table has no rule for it, so a WAIT
  would be counted and named as untranslatable; nothing of the bridge reads an op's number.
- UOp.placeholder: 0.14.0 draws a slot when none is given and takes tag=; a9069c17 needs the slot and has no tag (its
  runtime tags with rtag): the bridge makes no placeholder. The runtime's own programs are tagged in both (capture
  keeps only untagged ASTs).
- PYLITERAL's dtype rule, STACK/CAST/CUSTOM_FUNCTION consts made with explicit dtypes, the GETTUPLE-on-UNSHARD
  rewrite of schedule/multi.py, codegen/decomp/dtype.py's float decomposition patterns, Muon's weight decay in
  nn/optim.py, the HCQ runtime's renames (make_buf -> make_signal): forms and numbers the rules already translate, or
  nothing the bridge touches.
- The hooks (tinygrad.tensor.transform_to_call, the function tinygrad.schedule.rangeify.get_kernel_graph calls,
  tinygrad.codegen.do_to_program) are where they were in both; `hook_target` looks each up, and one missing in another
  version is named once (`missing_hook`) and its stage is not captured, instead of the capture failing.
"""
from __future__ import annotations

import functools
import importlib.metadata
import inspect
import sys
import types
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


class TinygradMissingError(ImportError):
  """No tinygrad can be imported: the bridge needs one (pip install 'tinyspec[tinygrad]')."""


class TinygradVersionWarning(UserWarning):
  """The imported tinygrad is none of the versions the bridge is tested on."""


# ---- features: each a question about the imported tinygrad, with the version that answers yes ----
def _has_wait(tg: Any) -> bool:
  # a9069c17: Ops.WAIT (0.14.0 has none)
  return hasattr(tg.Ops, "WAIT")


def _placeholder_needs_slot(tg: Any) -> bool:
  # a9069c17: UOp.placeholder(shape, dtype, slot, ...) with no default slot and no tag= (0.14.0: slot=None, tag=None)
  try: params = inspect.signature(tg.UOp.placeholder).parameters
  except (AttributeError, TypeError, ValueError): return False
  return "slot" in params and params["slot"].default is inspect.Parameter.empty and "tag" not in params


FEATURES: dict[str, Callable[[Any], bool]] = {"Ops.WAIT": _has_wait, "placeholder needs a slot": _placeholder_needs_slot}
# the versions the bridge is tested on, by the features they have
KNOWN: dict[str, frozenset[str]] = {"0.14.0": frozenset(), "a9069c17": frozenset({"Ops.WAIT", "placeholder needs a slot"})}
RELEASES = frozenset({"0.14.0"})   # KNOWN names that are release numbers (a commit's pyproject number says nothing)


@dataclass(frozen=True)
class Tinygrad:
  """The imported tinygrad: where from, the number it states (None: none), what it has, and its name."""
  path: str
  number: str | None
  features: frozenset[str]
  identity: str      # a KNOWN name, or "unknown (...)" naming the number and the path
  known: bool


def features_of(tg: Any) -> frozenset[str]:
  """The FEATURES tg has; tg is anything with tinygrad's `Ops` and `UOp` as attributes (a namespace will do)."""
  return frozenset(name for name, has in FEATURES.items() if has(tg))


def identify(features: frozenset[str], number: str | None, path: str) -> tuple[str, bool]:
  """(identity, known): the KNOWN version whose features are exactly `features`; a release only when the stated number
  (if any) agrees, a commit whatever its pyproject says. Anything else is "unknown (number, path)"."""
  for name, has in KNOWN.items():
    if has == features and (name not in RELEASES or number in (None, name)): return name, True
  return f"unknown ({'tinygrad ' + number if number else 'no version number'}, {path})", False


def stated_number(module: Any) -> str | None:
  """The version number the imported tinygrad states: its `__version__`, else that of the installed distribution of
  the directory it was imported from (a source tree on PYTHONPATH has none, whatever else is installed)."""
  if isinstance(v := getattr(module, "__version__", None), str): return v
  where = Path(module.__file__).resolve().parent.parent
  for dist in importlib.metadata.distributions(path=[str(where)]):
    if (dist.metadata["Name"] or "").lower() == "tinygrad": return dist.version
  return None


_found: Tinygrad | None = None


def imported() -> Tinygrad:
  """The tinygrad `import tinygrad` gives in this process (raises TinygradMissingError when there is none)."""
  global _found
  if _found is None:
    try:
      import tinygrad
      from tinygrad.uop.ops import Ops, UOp
    except ImportError as e:
      raise TinygradMissingError(f"tinyspec.bridge.tinygrad needs tinygrad, which cannot be imported ({e}): "
                                 "pip install 'tinyspec[tinygrad]'") from None
    path = str(Path(tinygrad.__file__).resolve().parent)
    number = stated_number(tinygrad)
    feats = features_of(types.SimpleNamespace(Ops=Ops, UOp=UOp))
    name, known = identify(feats, number, path)
    _found = Tinygrad(path, number, feats, name, known)
  return _found


def missing() -> str | None:
  """Why the bridge cannot run here (no tinygrad importable), or None."""
  try: imported()
  except TinygradMissingError as e: return str(e)
  return None


def identity() -> str:
  """The imported tinygrad's name, as findings record it: a KNOWN version, or "unknown (number, path)"."""
  return imported().identity


_warned: dict = {}


def warn_if_unknown() -> None:
  """One warning line, once per process, when the imported tinygrad is no KNOWN version."""
  tg = imported()
  if tg.known: return
  msg = (f"tinyspec.bridge.tinygrad: the tinygrad imported from {tg.path} ({'version ' + tg.number if tg.number else 'no version number'}) "
         f"is none of the versions it is tested on ({', '.join(KNOWN)}, told apart by their features); it runs, and reports "
         "what it does not know as untranslatable or not captured")
  # filename/lineno of no source file: the warning is printed as one line, with no source line under it
  warnings.warn_explicit(msg, TinygradVersionWarning, filename="tinyspec", lineno=0, registry=_warned)


# ---- hooks ----
_missing_hooks: dict[str, None] = {}


def hook_target(module: Any, name: str) -> Any:
  """module.name, the tinygrad function a capture hook wraps, or None (once named on stderr) when this tinygrad has
  none there (another version moved it): that stage is then not captured."""
  fn = getattr(module, name, None)
  if fn is None: missing_hook(f"{getattr(module, '__name__', module)}.{name}")
  return fn


def closure_cell(fn: Any, cell: str) -> Any:
  """The closure cell `cell` of fn (a decorated tinygrad function holds the function it calls there), or None (once
  named on stderr) when fn has no such cell in this tinygrad."""
  code = getattr(fn, "__code__", None)
  if code is None or cell not in code.co_freevars or fn.__closure__ is None:
    missing_hook(f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)} (closure cell {cell!r})")
    return None
  return fn.__closure__[code.co_freevars.index(cell)]


def missing_hook(where: str) -> None:
  if where in _missing_hooks: return
  _missing_hooks[where] = None
  print(f"tinyspec: tinygrad {identity()} has no {where}: what it makes is not captured", file=sys.stderr)


def missing_hooks() -> list[str]:
  """Every hook target this tinygrad lacked, in the order first looked up."""
  return list(_missing_hooks)


def tolerant(wrapper: Callable, orig: Callable, where: str) -> Callable:
  """wrapper, called only with arguments its signature takes; a call it cannot take (the hooked function's signature
  changed in another tinygrad) goes to orig, and the hook is named missing: tinygrad still runs, unrecorded."""
  try: sig = inspect.signature(wrapper)
  except (TypeError, ValueError): return wrapper

  def call(*args: Any, **kwargs: Any) -> Any:
    try: sig.bind(*args, **kwargs)
    except TypeError:
      missing_hook(f"{where} with the arguments the capture knows")
      return orig(*args, **kwargs)
    return wrapper(*args, **kwargs)
  return functools.update_wrapper(call, orig)   # tinygrad's tracing names a rewrite group by its function's __name__


def source_location(file: str) -> str:
  """A tinygrad source file as `tinygrad/...`, relative to where the imported tinygrad lives (site-packages or a
  source tree on PYTHONPATH alike); a file elsewhere by its own name."""
  p = Path(file).resolve()
  root = Path(imported().path).parent
  try: return p.relative_to(root).as_posix()
  except ValueError: return p.name
