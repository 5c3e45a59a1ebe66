#!/usr/bin/env bash
# Install what fleet, its tests and its lab need, on a fresh Debian machine, as root.
# Idempotent and quick when everything is already there. Called by test.sh and demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv"
    "$python" -m venv .venv
fi
stamp=.venv/.fleet-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: installing fleet and its development tools into .venv"
    .venv/bin/pip install --quiet --disable-pip-version-check -e '.[dev]' 2>&1 \
        | grep -v "^WARNING: Location" || true
    .venv/bin/python -c "import fleet, reconciler" 
    echo "$want" > "$stamp"
fi
# Bytecode for the project's own modules, as a regular (non-editable) install has: an
# editable install leaves none, and with PYTHONDONTWRITEBYTECODE set (as on CI runners)
# every `fleet` command would compile its modules again (~20 ms of a 0.17 s start-up).
.venv/bin/python -m compileall -q fleet reconciler >/dev/null
if [ -f tests/lab/install.sh ]; then
    bash tests/lab/install.sh
fi
