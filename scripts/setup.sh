#!/usr/bin/env bash
# Installs what building evolve-hud needs on a Debian/Ubuntu machine: cmake
# and clang for llama.cpp (libclang for its bindings).
#
#   scripts/setup.sh          build prerequisites only
#   scripts/setup.sh --test   also what the tests need: cargo-nextest, Node.js
#                             and the shim's npm packages (OpenCode included),
#                             tmux (terminal UI tests), Chromium (a real
#                             browser for the web-page tests), qemu-user (an
#                             older CPU to start the native build on), the `openai`
#                             Python client; prints the test model's path last
#
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST=0
[ "${1:-}" != --test ] || TEST=1

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v clang >/dev/null || need+=(clang)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
command -v python3 >/dev/null || need+=(python3 python3-pip)
if [ "$TEST" = 1 ]; then
  command -v node >/dev/null || need+=(nodejs)
  command -v npm >/dev/null || need+=(npm)
  command -v tmux >/dev/null || need+=(tmux)
  [ -x /usr/bin/chromium ] || need+=(chromium)
  # An older CPU to start the native build on (tests/it/serve.rs).
  [ "$(uname -m)" != x86_64 ] || command -v qemu-x86_64 >/dev/null || need+=(qemu-user)
fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "installing ${need[*]}..." >&2
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >&2
fi
command -v cargo >/dev/null || { echo "error: cargo not found; install Rust from rustup.rs" >&2; exit 1; }
[ "$TEST" = 1 ] || exit 0

# The test runner: every test in its own process under a time limit.
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "installing cargo-nextest..." >&2
  cargo install --locked cargo-nextest >&2
fi
# The official OpenAI client, a real client of the chat API in tests/it/serve.rs.
python3 -c 'import openai' 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check "openai==3.54.0" >&2 ||
  python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "openai==3.54.0" >&2

node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || { echo "error: the plugin shim's tests need Node.js 20 or newer (found $(node --version))" >&2; exit 1; }
# The shim's dev packages: TypeScript, tsx, fast-check and OpenCode itself.
# (`npm install`, not `npm ci`: the lock file pins the versions, and npm ci
# refuses a lock without the optional packages of other platforms.)
(cd plugin-shim && npm install --no-audit --no-fund --loglevel=error >&2)

scripts/fetch-test-model.sh
