#!/usr/bin/env bash
# The main job on the bundled example fleet: bring the lab up (simulated GPU hosts on
# loopback with real sshd, Docker and a LiteLLM proxy), then validate, plan, apply and
# inventory desired/ against it. The lab stays up afterwards; take it down with
#   .venv/bin/python -m tests.lab down
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
fleet=.venv/bin/fleet

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "bring the lab up"
.venv/bin/python -m tests.lab up
# shellcheck disable=SC1091
source .lab/env

step "fleet validate"
$fleet validate
if $fleet --help | grep -q " plan "; then
    step "fleet plan"
    $fleet plan || [ $? -eq 2 ]
fi
if $fleet --help | grep -q " apply "; then
    step "fleet apply --auto-approve"
    $fleet apply --auto-approve
fi
if $fleet --help | grep -q " inventory "; then
    step "fleet inventory"
    $fleet inventory
fi
if $fleet --help | grep -q " check "; then
    step "fleet plan (again: nothing to do)"
    $fleet plan
fi
printf '\nThe lab is still up (see .lab/). Take it down with: .venv/bin/python -m tests.lab down\n'
