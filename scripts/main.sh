#!/usr/bin/env bash
# The main job: set up, then check and lower every example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
for f in examples/*.py; do
  echo "== $f"
  .venv/bin/tinyspec check "$f"
  .venv/bin/tinyspec lower "$f"
done
