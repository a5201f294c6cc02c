#!/usr/bin/env bash
# Builds llama.cpp's own llama-bench from the llama.cpp sources vendored in
# the PyPI sdist of llama-cpp-python (nothing of it is committed here), and
# prints the path of the binary. Cached in ~/.cache/evolve-hud.
#
#   scripts/llama-bench.sh [native|generic]    (default: native)
#
# native builds with GGML_NATIVE=ON (-march=native), generic with it off.
set -euo pipefail
VARIANT="${1:-native}"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${EVOLVE_HUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/evolve-hud}"
SRC="$CACHE/llama-cpp-python-$VERSION"
BUILD="$CACHE/llama-bench-$VERSION-$VARIANT"
BIN="$BUILD/bin/llama-bench"

case "$VARIANT" in
  native) NATIVE=ON ;;
  generic) NATIVE=OFF ;;
  *) echo "error: variant must be native or generic, not $VARIANT" >&2; exit 2 ;;
esac

if [ ! -x "$BIN" ]; then
  if [ ! -d "$SRC/vendor/llama.cpp/tools/llama-bench" ]; then
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    echo "fetching the llama-cpp-python $VERSION sdist..." >&2
    python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$tmp" "llama-cpp-python==$VERSION" >&2
    mkdir -p "$CACHE"
    tar -xzf "$tmp"/llama_cpp_python-"$VERSION".tar.gz -C "$tmp"
    rm -rf "$SRC"
    mv "$tmp/llama_cpp_python-$VERSION" "$SRC"
  fi
  echo "building llama-bench ($VARIANT; a few minutes)..." >&2
  cmake -S "$SRC/vendor/llama.cpp" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE="$NATIVE" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF >&2
  cmake --build "$BUILD" --target llama-bench -j "$(nproc)" >&2
fi
echo "$BIN"
