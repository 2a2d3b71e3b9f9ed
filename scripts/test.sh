#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: the runtime's C tests (plain and ThreadSanitizer
# builds), then the Python and end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=.venv/bin/python  # the virtual environment setup.sh installed rclify into
echo "== runtime tests"
make -s -C runtime test
echo "== python and end-to-end tests"
"$PY" -m pytest -q "$@"
