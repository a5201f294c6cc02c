#!/usr/bin/env bash
# Runs every test of evolve-hud, installing prerequisites first.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="$(scripts/setup.sh | tail -n 1)"
export EVOLVE_HUD_TEST_MODEL="$MODEL"
# fault-injection: lets tests/faults.rs make the model thread panic.
cargo test --release --locked --features fault-injection
# The plugin shim: unit, property and fail-open tests, then end to end in the
# real OpenCode with the sidecar just built.
(cd plugin-shim && npm test)
