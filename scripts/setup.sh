#!/usr/bin/env bash
# Installs what building and testing evolve-hud needs on a Debian/Ubuntu
# machine: cmake and clang for llama.cpp (libclang for its bindings), and
# the real test model. Idempotent; prints the model path last.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v clang >/dev/null || need+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
command -v python3 >/dev/null || need+=(python3 python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "installing ${need[*]}..." >&2
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >&2
fi
command -v cargo >/dev/null || { echo "error: cargo not found; install Rust from rustup.rs" >&2; exit 1; }

scripts/fetch-test-model.sh
