#!/usr/bin/env bash
# Set up a fresh machine: system packages (as root, when missing), the virtualenv, the package.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cc >/dev/null || need_apt+=(gcc)
# the other C compilers the CPU backend can use: clang, and tcc (fast compiles for fuzzing)
command -v clang >/dev/null || need_apt+=(clang)
command -v tcc >/dev/null || need_apt+=(tcc)
command -v dot >/dev/null || need_apt+=(graphviz)
# an OpenCL platform: Debian's PoCL (the PyPI wheel's LLVM cannot build kernels on every CPU). pyopencl's wheel
# brings its own ICD loader, which reads /etc/OpenCL/vendors; the system loader is for other OpenCL clients.
if [ ! -e /etc/OpenCL/vendors/pocl.icd ]; then need_apt+=(pocl-opencl-icd ocl-icd-libopencl1); fi
# a headless browser: the fuzz report's tests open the page in Debian's chromium
[ -x /usr/bin/chromium ] || command -v chromium >/dev/null || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${need_apt[*]} with apt-get"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "setup: missing ${need_apt[*]} (not root or no apt-get); the parts that need them will say so"
  fi
fi

if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
stamp=.venv/.tinyspec-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  # pip's own chatter goes to a log, shown only when the install fails
  log=.venv/install.log
  if ! { .venv/bin/pip install -q --upgrade pip && .venv/bin/pip install -q -e '.[dev,tinygrad]'; } >"$log" 2>&1; then
    cat "$log"; echo "setup: pip install failed (log above, kept in $log)"; exit 1
  fi
  touch "$stamp"
fi
# one line on the OpenCL backend: the device it runs on, or why its tests will skip
.venv/bin/python -c 'from tinyspec.runtime.opencl import available; ok, why = available(); print("setup: opencl", "ok:" if ok else "unavailable:", why)' || true
