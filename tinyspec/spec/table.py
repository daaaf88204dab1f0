"""Rule tables: for each op, the rules a node of that op must pass. A table is frozen, and compiles its fused checks
(spec/fast.py) when it is built: a table with one rule more is a new table, compiled anew."""
from __future__ import annotations

from typing import Any, Iterable, NoReturn

from tinyspec.spec.base import Rule
from tinyspec.spec.fast import Compiled, compile_table
from tinyspec.uop import Ops


class Table(dict):
  """A frozen rule table (a dict that refuses changes) and its compiled fused checks: `compiled`, and `fused`, the check
  of each op by op value (None: the rules decide)."""

  def __init__(self, entries: Iterable[tuple[Ops, tuple[Rule, ...]]] = ()):
    super().__init__(entries)
    self.compiled: Compiled = compile_table(self)
    self.fused = self.compiled.fused

  def _frozen(self, *a: Any, **kw: Any) -> NoReturn:
    raise TypeError("a rule table is frozen: build a new one (spec.table.table with base=, or Table.with_rules)")
  __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = __ior__ = _frozen  # type: ignore[assignment]

  def with_rules(self, ops: Iterable[Ops] | Ops, *rules: Rule) -> Table:
    """This table with rules added to each of ops: a new table."""
    return table((ops, rules), base=self)


def table(*entries: tuple[Iterable[Ops] | Ops, Iterable[Rule]], base: dict | None = None) -> Table:
  """A rule table: for each op, the rules a node of that op must pass. Later entries add to earlier ones."""
  out: dict[Ops, list[Rule]] = {op: list(rs) for op, rs in (base or {}).items()}
  for ops, rules in entries:
    for op in ((ops,) if isinstance(ops, Ops) else ops):
      out.setdefault(op, []).extend(rules)
  return Table((op, tuple(rs)) for op, rs in out.items())
