#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests and the lab's integration tests.
# Installs what is missing first, and takes the lab down afterwards, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh

teardown() {
    if [ -f tests/lab/__main__.py ]; then
        .venv/bin/python -m tests.lab down >/dev/null 2>&1 || true
    fi
}
trap teardown EXIT

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/pytest "$@"
