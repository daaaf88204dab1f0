#!/usr/bin/env bash
# The test command: set up, lint, then the whole suite (spec and slow tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest -n 2 -q "$@"
