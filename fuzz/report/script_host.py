"""A host that runs standalone scripts (fuzz.report.standalone) in forked children of one warm process.

Run as `python -c "<this file's text>" SCRIPT...` with the tinygrad to use first on PYTHONPATH (tinyspec is not
imported: a script that needed it would fail). It imports numpy and tinygrad once, then for each script forks a child
that runs it with runpy and prints one JSON line: {"script", "status", "error", "seconds"}. Each child starts from the
same state (no script sees what another compiled or allocated), as a fresh process would, less the imports. tinygrad
reads DEV, NOOPT and its other context variables when it is first imported, which a child's import no longer does, so
the child applies the script's own `os.environ["NAME"] = "value"` lines to them first (tinygrad.helpers.Context).
Standard library only: it runs under whichever tinygrad is on the path.
"""
import json
import os
import re
import runpy
import signal
import sys
import time

import numpy  # noqa: F401  warm: what every script imports

ENV_LINE = re.compile(r'^os\.environ\["(\w+)"\] = "([^"]*)"', re.M)
TIMEOUT = 600  # seconds a script may take (SIGALRM ends it)


def run_child(path: str, out: int) -> None:
  """In the forked child: run the script, write what it ended with to out, exit with its status. Never returns."""
  status, error = 0, ""
  try:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    with open(path, encoding="utf-8") as f: env = dict(ENV_LINE.findall(f.read()))
    os.environ.update(env)
    from tinygrad.helpers import Context, ContextVar
    known = {k: (int(v) if isinstance(ContextVar._cache[k].value, int) else v) for k, v in env.items() if k in ContextVar._cache}
    with Context(**known): runpy.run_path(path, run_name="__main__")
  except SystemExit as e:
    status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
  except BaseException as e:  # the script's own failure: what a fresh process would print last
    status, error = 1, f"{type(e).__name__}: {e}"
  os.write(out, error.encode("utf-8", "replace")[:4000])
  os._exit(status)


def main(paths: list) -> None:
  import tinygrad  # noqa: F401  warm, as numpy above
  from tinygrad.helpers import Context  # noqa: F401
  for path in paths:
    r, w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
      os.close(r)
      signal.alarm(TIMEOUT)
      run_child(path, w)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536): chunks.append(chunk)
    os.close(r)
    _, how = os.waitpid(pid, 0)
    status = os.waitstatus_to_exitcode(how)
    error = b"".join(chunks).decode("utf-8", "replace") or (f"killed by signal {-status}" if status < 0 else "")
    print(json.dumps({"script": path, "status": status, "error": error, "seconds": time.monotonic() - start}), flush=True)


if __name__ == "__main__":
  main(sys.argv[1:])
