#!/usr/bin/env bash
# Runs every test of evolve-hud, installing prerequisites first.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="$(scripts/setup.sh | tail -n 1)"
export EVOLVE_HUD_TEST_MODEL="$MODEL"
cargo test --release --locked
