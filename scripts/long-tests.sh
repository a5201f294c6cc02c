#!/usr/bin/env bash
# The long runs kept out of CI: the full load test (50 sessions x 200 syncs
# with chat completions against the real model) and every cargo-fuzz target
# for FUZZ_MINUTES each (default 10). Fuzzing needs the nightly toolchain and
# cargo-fuzz (`rustup toolchain install nightly`, `cargo install cargo-fuzz`).
#
#   scripts/long-tests.sh             load, then fuzz
#   scripts/long-tests.sh load        the load test only
#   scripts/long-tests.sh fuzz [T..]  fuzz targets only (all, or those named)
#
# A crash leaves its input in fuzz/artifacts/<target>/; copy it into
# fuzz/regressions/<target>/ and `cargo test --test it fuzz_regressions::` replays
# it on every run from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_MINUTES="${FUZZ_MINUTES:-10}"
what="${1:-all}"
[ $# -gt 0 ] && shift

run_load() {
  scripts/native-cpu.sh target
  EVOLVE_HUD_TEST_MODEL="${EVOLVE_HUD_TEST_MODEL:-$(scripts/fetch-test-model.sh)}" \
  EVOLVE_HUD_LOAD_SYNCS="${EVOLVE_HUD_LOAD_SYNCS:-200}" \
    cargo test --release --locked --test it load:: -- --nocapture
}

# Seeds: the real OpenCode message arrays, the saved regressions, and a tiny
# valid GGUF (one f32 tensor) next to the first 4 KiB of the real model.
seed() {
  local target="$1" dir="fuzz/corpus/$1"
  mkdir -p "$dir"
  cp fuzz/regressions/"$target"/* "$dir"/ 2>/dev/null || true
  case "$target" in
    hud_requests)
      local fixtures="${EVOLVE_HUD_FIXTURES:-tests/fixtures/opencode-1.18.33}"
      for f in "$fixtures"/*/transform-*.json; do
        [ -e "$f" ] || continue
        python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["output"]["messages"]))' "$f" \
          > "$dir/$(basename "$(dirname "$f")")-$(basename "$f")"
      done ;;
    gguf_check)
      python3 - "$dir/tiny.gguf" <<'PY'
import struct, sys
def s(t): b = t.encode(); return struct.pack("<Q", len(b)) + b
kv = s("general.architecture") + struct.pack("<I", 8) + s("llama")
kv += s("general.alignment") + struct.pack("<I", 4) + struct.pack("<I", 32)
tensor = s("t") + struct.pack("<I", 1) + struct.pack("<Q", 4) + struct.pack("<I", 0) + struct.pack("<Q", 0)
head = b"GGUF" + struct.pack("<IQQ", 3, 1, 2) + kv + tensor
head += b"\0" * (-len(head) % 32)
open(sys.argv[1], "wb").write(head + struct.pack("<4f", 1, 2, 3, 4))
PY
      head -c 4096 "${EVOLVE_HUD_TEST_MODEL:-$(scripts/fetch-test-model.sh)}" > "$dir/model-head.gguf" ;;
    clean_text)
      printf '\x50plain text' > "$dir/plain"
      printf '\x20\x1b[31mred\x1b[0m </evolve-hud> <EVOLVE-HUD v=1>\x00' > "$dir/escapes" ;;
  esac
}

run_fuzz() {
  local targets=("$@") crashed=()
  [ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
  mkdir -p fuzz/artifacts
  for target in "${targets[@]}"; do
    seed "$target"
    echo "== fuzzing $target for $FUZZ_MINUTES min"
    local log="fuzz/artifacts/$target.log"
    if ! (cd fuzz && cargo +nightly fuzz run "$target" -- \
      -max_total_time=$((FUZZ_MINUTES * 60)) -max_len=65536 -print_final_stats=1) > "$log" 2>&1; then
      crashed+=("$target")
    fi
    grep -E "^#[0-9]+ +DONE|^stat::number_of_executed_units|^stat::new_units_added|panicked at|^SUMMARY|Test unit written" "$log" || true
  done
  if [ ${#crashed[@]} -gt 0 ]; then
    echo "crashes in: ${crashed[*]} (inputs under fuzz/artifacts/, logs fuzz/artifacts/*.log)" >&2
    exit 1
  fi
}

case "$what" in
  load) run_load ;;
  fuzz) run_fuzz "$@" ;;
  all) run_load; run_fuzz ;;
  *) echo "usage: $0 [load | fuzz [target...]]" >&2; exit 2 ;;
esac
