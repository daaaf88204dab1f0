#!/usr/bin/env bash
# The main job: set up, then a short fuzz campaign (60 s by default) on the reference pipeline, every case also
# compiled and run on the CPU backend with the fastest C compiler present. Findings are
# minimized into corpus/, the campaign resumes where the last one stopped, and build/fuzz-report/index.html
# shows its progress. Extra arguments go to `tinyspec fuzz` (e.g. --seconds 600, --backends reference,cpu,opencl).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/tinyspec fuzz --seconds 60 --workers 2 --corpus corpus --report build/fuzz-report "$@"
