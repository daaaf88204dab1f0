"""Shared fixtures. Backends that need something from the system skip with the reason the runtime gives."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def opencl() -> str:
  """The OpenCL device's name; skips (with available()'s one-line reason) where there is no OpenCL platform."""
  from tinyspec.runtime.opencl import available
  ok, why = available()
  if not ok: pytest.skip(f"OpenCL unavailable: {why}")
  return why
