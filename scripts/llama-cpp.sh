#!/usr/bin/env bash
# Builds one of llama.cpp's own tools, llama-bench (the throughput peer) or
# llama-server (the engine peer of `serve --engine`), from the llama.cpp
# sources vendored in the PyPI sdist of llama-cpp-python (nothing of it is
# committed here), and prints the path of the binary. Cached in
# ~/.cache/evolve-hud.
#
#   scripts/llama-cpp.sh llama-bench|llama-server [native|generic]
#   scripts/llama-cpp.sh source     (fetches the sdist; prints its directory)
#
# native builds with GGML_NATIVE=ON (-march=native), generic with it off.
set -euo pipefail
TOOL="${1:?usage: scripts/llama-cpp.sh llama-bench|llama-server|source [native|generic]}"
VARIANT="${2:-native}"
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
CACHE="${EVOLVE_HUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/evolve-hud}"
SRC="$CACHE/llama-cpp-python-$VERSION"
BUILD="$CACHE/llama-cpp-$VERSION-$VARIANT"
BIN="$BUILD/bin/$TOOL"

fetch_source() {
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
}

case "$TOOL" in
  source) fetch_source; echo "$SRC"; exit 0 ;;
  llama-bench) SERVER=OFF ;;
  llama-server) SERVER=ON ;;
  *) echo "error: the tool must be llama-bench or llama-server, not $TOOL" >&2; exit 2 ;;
esac
case "$VARIANT" in
  native) NATIVE=ON ;;
  generic) NATIVE=OFF ;;
  *) echo "error: variant must be native or generic, not $VARIANT" >&2; exit 2 ;;
esac

if [ ! -x "$BIN" ]; then
  fetch_source
  echo "building $TOOL ($VARIANT; several minutes)..." >&2
  # The server is configured in only when asked for: it adds a web UI and
  # its own libraries to the build.
  if [ "$SERVER" = ON ] || [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$SRC/vendor/llama.cpp" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
      -DGGML_NATIVE="$NATIVE" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER="$SERVER" -DBUILD_SHARED_LIBS=OFF >&2
  fi
  cmake --build "$BUILD" --target "$TOOL" -j "$(nproc)" >&2
fi
echo "$BIN"
