#!/usr/bin/env bash
# Builds one of llama.cpp's own tools, llama-bench (the throughput peer) or
# llama-server (the engine peer of `serve --engine`), from the llama.cpp
# sources vendored in the PyPI sdist of llama-cpp-python (nothing of it is
# committed here), and prints the path of the binary. Cached in
# ~/.cache/evolve-hud.
#
#   scripts/llama-cpp.sh llama-bench|llama-server [native|generic] [sdist|linked]
#   scripts/llama-cpp.sh source [sdist|linked]
#       (fetches the sdist if needed; prints the llama.cpp source directory)
#
# native builds with GGML_NATIVE=ON (-march=native) minus ggml's AMX kernels
# (they crash on AMX CPUs at the first decode, upstream llama.cpp issue
# 20824; evolve-hud is built without them too), generic with it off. A
# native build is cached per CPU (scripts/native-cpu.sh): one made on
# another CPU may use instructions this one lacks.
# linked builds the tool from the llama.cpp that evolve-hud itself links
# (vendored in the llama-cpp-sys-2 crate of Cargo.lock) instead of the
# sdist's: the same kernels as ours, to tell a gap of llama.cpp versions
# from one of evolve-hud's own. That llama-bench also takes LLAMA_BENCH_CTX,
# the KV cells of its context (default: the test's tokens, as upstream).
set -euo pipefail
TOOL="${1:?usage: scripts/llama-cpp.sh llama-bench|llama-server [native|generic] [sdist|linked], or source [sdist|linked]}"
if [ "$TOOL" = source ]; then
  VARIANT=native
  FROM="${2:-sdist}"
else
  VARIANT="${2:-native}"
  FROM="${3:-sdist}"
fi
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
BUILT_FOR="$VARIANT"
[ "$VARIANT" != native ] || [ "$TOOL" = source ] || BUILT_FOR="native-$("$(dirname "$0")"/native-cpu.sh key)"
CACHE="${EVOLVE_HUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/evolve-hud}"
SRC="$CACHE/llama-cpp-python-$VERSION"
case "$FROM" in
  sdist)
    LLAMA_SRC="$SRC/vendor/llama.cpp"
    BUILD="$CACHE/llama-cpp-$VERSION-$BUILT_FOR-noamx"
    ;;
  linked)
    manifest="$(cargo metadata --manifest-path "$(dirname "$0")/../Cargo.toml" --format-version 1 --locked |
      python3 -c 'import json, sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "llama-cpp-sys-2"))')"
    crate="$(dirname "$manifest")"
    [ "$TOOL" != source ] || { echo "$crate/llama.cpp"; exit 0; }
    [ "$TOOL" = llama-bench ] || { echo "error: only llama-bench is built from the linked llama.cpp" >&2; exit 2; }
    BUILD="$CACHE/$(basename "$crate")-$BUILT_FOR-noamx"
    # The crate ships llama.cpp's libraries without its tools: a copy of
    # them takes llama-bench's sources from the sdist, which use only the
    # public API and the common library.
    LLAMA_SRC="$CACHE/$(basename "$crate")-src"
    grep -qs LLAMA_BENCH_CTX "$LLAMA_SRC/tools/llama-bench/llama-bench.cpp" || copy_linked=1
    ;;
  *) echo "error: the source must be sdist or linked, not $FROM" >&2; exit 2 ;;
esac
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
  source) fetch_source; echo "$LLAMA_SRC"; exit 0 ;;
  llama-bench) SERVER=OFF ;;
  llama-server) SERVER=ON ;;
  *) echo "error: the tool must be llama-bench or llama-server, not $TOOL" >&2; exit 2 ;;
esac
# The same flags as evolve-hud's build (.cargo/config.toml).
NO_AMX=""
[ "$(uname -m)" != x86_64 ] || NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
case "$VARIANT" in
  native) NATIVE=ON ;;
  generic) NATIVE=OFF ;;
  *) echo "error: variant must be native or generic, not $VARIANT" >&2; exit 2 ;;
esac

if [ ! -x "$BIN" ] || [ -n "${copy_linked:-}" ]; then
  fetch_source
  if [ -n "${copy_linked:-}" ]; then
    rm -rf "$LLAMA_SRC"
    cp -r "$crate/llama.cpp" "$LLAMA_SRC"
    chmod -R u+w "$LLAMA_SRC"
    rm -rf "$LLAMA_SRC/tools"
    mkdir -p "$LLAMA_SRC/tools"
    cp -r "$SRC/vendor/llama.cpp/tools/llama-bench" "$LLAMA_SRC/tools/"
    echo 'add_subdirectory(llama-bench)' > "$LLAMA_SRC/tools/CMakeLists.txt"
    # One addition: LLAMA_BENCH_CTX sets the context's KV cells, which
    # llama-bench sizes to the test's own tokens (128 for tg128), so that it
    # can run with the cache evolve-hud keeps (--ctx, 4096 by default).
    sed -i 's|^\( *cparams.n_ctx *= \)\(n_prompt + n_gen + n_depth\);|\1getenv("LLAMA_BENCH_CTX") ? (uint32_t) atoi(getenv("LLAMA_BENCH_CTX")) : \2;|' \
      "$LLAMA_SRC/tools/llama-bench/llama-bench.cpp"
    grep -q LLAMA_BENCH_CTX "$LLAMA_SRC/tools/llama-bench/llama-bench.cpp" ||
      { echo "error: llama-bench's context size was not found to patch" >&2; exit 1; }
  fi
  echo "building $TOOL ($VARIANT; several minutes)..." >&2
  # The server is configured in only when asked for: it adds a web UI and
  # its own libraries to the build.
  if [ "$SERVER" = ON ] || [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$LLAMA_SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
      -DGGML_NATIVE="$NATIVE" -DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX" -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER="$SERVER" -DLLAMA_BUILD_APP=OFF -DBUILD_SHARED_LIBS=OFF >&2
  fi
  cmake --build "$BUILD" --target "$TOOL" -j "$(nproc)" >&2
fi
echo "$BIN"
