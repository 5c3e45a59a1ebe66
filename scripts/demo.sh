#!/usr/bin/env bash
# The main job on the bundled example fleet, in the lab: simulated GPU hosts on loopback
# with real sshd, Docker engines, compose and a LiteLLM proxy behind an nginx front (apply
# changes the proxy blue/green behind it: watch its gateway steps). It copies desired/ into a
# scratch fleet repository (.lab/demo, its own Git repo, so apply's inventory commit lands
# there and not in this checkout) with the example's host addresses replaced by the lab's
# (each lab has its own slot of addresses, so it runs beside other labs on the machine),
# then runs validate, plan, apply, inventory, check and plan again. The lab stays up
# afterwards; take it down with
#   .venv/bin/python -m tests.lab down
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
fleet="$PWD/.venv/bin/fleet"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "bring the lab up"
.venv/bin/python -m tests.lab up
# shellcheck disable=SC1091
source .lab/env

demo=.lab/demo
rm -rf "$demo" && mkdir -p "$demo" && cp -r desired "$demo/desired"
.venv/bin/python -m tests.lab rewrite-desired "$demo/desired"
git -C "$demo" init -q
git -C "$demo" add desired
git -C "$demo" -c user.name=fleet-demo -c user.email=demo@fleet.invalid commit -qm "desired fleet"
cd "$demo"

step "fleet validate"
$fleet validate
step "fleet plan (exit 2: changes pending)"
$fleet plan || [ $? -eq 2 ]
step "fleet apply --auto-approve"
$fleet apply --auto-approve
step "fleet inventory"
$fleet inventory
step "fleet check (the committed inventory matches the live fleet)"
$fleet check
step "fleet plan (again: nothing to do)"
$fleet plan
printf '\nThe fleet repository is %s; its inventory commit: %s\n' "$demo" \
    "$(git log -1 --format='%h %s')"
printf 'The lab is still up. Take it down with: .venv/bin/python -m tests.lab down\n'
