#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests and the lab's integration tests.
# Installs what is missing first, and takes the lab down afterwards, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh

# The tests run on FLEET_TEST_WORKERS pytest-xdist workers (0: one process), each with
# its own lab (.lab-gw0, .lab-gw1, ...; see tests/lab/fixtures.py): the lab tests spend
# much of their time waiting on engines, health gates and the proxy. Three labs side by
# side left a third of two cores idle; four keep them 90-99% busy (measured on the same
# idle machine: 595 s on three workers, 531 s on four; two took 16 min where three took
# 10.5 on an earlier, busier day). Files go to the workers in collection order, the
# longest lab modules first (tests/conftest.py), not xdist's default by number of tests.
workers=${FLEET_TEST_WORKERS:-4}

teardown() {
    [ -f tests/lab/__main__.py ] || return 0
    local dirs=(.lab-gw*/)
    [ "$workers" = 0 ] && dirs=(.lab/)
    for dir in "${dirs[@]}"; do
        [ -f "$dir/state.json" ] || continue
        FLEET_LAB_DIR="$PWD/${dir%/}" .venv/bin/python -m tests.lab down >/dev/null 2>&1 || true
    done
}
trap teardown EXIT

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
if [ "$workers" = 0 ]; then
    .venv/bin/pytest "$@"
else
    .venv/bin/pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
fi
