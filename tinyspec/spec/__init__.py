"""The formal spec: which UOp graphs are legal at each stage of lowering.

Rules live in one module per stage (tensor, kgraph, kernel, program) plus shared.py; each is registered under a
stable id in RULES. check(root, stage) lists every violation, verify(root, stage) raises SpecError on any.
"""
from __future__ import annotations

from tinyspec.spec.base import RULES, Rule, SpecError, Stage, Violation
from tinyspec.spec.engine import check, verify

__all__ = ["Stage", "Violation", "SpecError", "check", "verify", "RULES", "Rule"]
