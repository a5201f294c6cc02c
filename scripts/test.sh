#!/usr/bin/env bash
# Runs every test of evolve-hud, installing prerequisites first.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's wall time, printed at the end (and on a failure, up to it).
times=()
phase() {
  local name="$1" start=$SECONDS
  shift
  "$@"
  times+=("$(printf '%5d s  %s' $((SECONDS - start)) "$name")")
}
report() { [ ${#times[@]} -eq 0 ] || { echo phases:; printf '%s\n' "${times[@]}"; } >&2; }
scratch=""
trap '[ -z "$scratch" ] || rm -rf "$scratch"; report' EXIT

setup_start=$SECONDS
MODEL="$(scripts/setup.sh --test | tail -n 1)"
export EVOLVE_HUD_TEST_MODEL="$MODEL"
# The realistic model (491 MB, cached after the first run): the HUD quality
# gate, tests/it/hud_quality.rs, runs on it.
EVOLVE_HUD_EVAL_MODEL="$(scripts/fetch-model.sh qwen-coder | tail -n 1)"
export EVOLVE_HUD_EVAL_MODEL
# llama.cpp's own llama-server (built from the llama-cpp-python sdist, cached
# after the first build): the real remote engine of tests/it/engine.rs.
EVOLVE_HUD_LLAMA_SERVER="$(scripts/llama-cpp.sh llama-server | tail -n 1)"
export EVOLVE_HUD_LLAMA_SERVER
# target/release is built for this CPU (-C target-cpu=native): one built on
# another CPU is cleaned first.
scripts/native-cpu.sh target
times+=("$(printf '%5d s  %s' $((SECONDS - setup_start)) "prerequisites and models")")
# The lint gate: formatting, and clippy over every target with warnings as
# errors (about 40 s on 2 cores once the tests' build is there: it reuses
# llama.cpp's build).
phase fmt cargo fmt --all --check
phase clippy cargo clippy --release --locked --workspace --all-targets --features evolve-hud/fault-injection -- -D warnings
# cargo-nextest runs each test of the workspace's crates in a process of its
# own under the time limit in .config/nextest.toml. fault-injection: lets
# tests/it/faults.rs make the model thread panic.
phase "rust tests (build and run)" cargo nextest run --release --locked --workspace --features evolve-hud/fault-injection
# nextest runs no doc tests; those of the lower crates show that a use going
# up a layer does not compile.
phase "doc tests" cargo test --release --locked --doc -p evolve-hud-api -p evolve-hud-core
# The plugin shim: unit, property and fail-open tests, then end to end in the
# real OpenCode with the sidecar just built. They run in a copy of the
# repository as a clone has it (tracked and new files, nothing ignored) in an
# empty temporary folder, so a test that reads anything beside the
# repository fails here; the installed npm packages are linked in.
scratch="$(mktemp -d)"
copy="$scratch/evolve-hud"
mkdir "$copy"
git ls-files -z --cached --others --exclude-standard \
  | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh \
  | tar --null -T - -cf - | tar -xf - -C "$copy"
ln -s "$PWD/plugin-shim/node_modules" "$copy/plugin-shim/node_modules"
export EVOLVE_HUD_BIN="${EVOLVE_HUD_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/release/evolve-hud}"
phase "plugin tests" sh -c 'cd "$1/plugin-shim" && npm test' sh "$copy"
