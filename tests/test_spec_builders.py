"""The spec test builders (tests/builders.py) are legal where they claim to be."""
from __future__ import annotations

import pytest

from builders import KERNELS, PROGRAM_KERNELS, i32, program

from tinyspec import Stage, check

pytestmark = pytest.mark.spec

# ---- the builders' kernels are legal where they claim to be ----

@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_builders_legal_at_kernel(name):
  assert check(KERNELS[name](), Stage.KERNEL) == []


@pytest.mark.parametrize("name", sorted(PROGRAM_KERNELS))
def test_kernel_builders_legal_at_program(name):
  assert check(program(PROGRAM_KERNELS[name](i32)), Stage.PROGRAM) == []
