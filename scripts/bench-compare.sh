#!/usr/bin/env bash
# Measures evolve-hud's throughput against llama.cpp's own llama-bench on the
# same model, threads and machine, in the same run: both tools alternate,
# ROUNDS times, for the default (generic x86-64) and the native-tuned builds.
#
#   scripts/bench-compare.sh [model.gguf]        (default: the test model)
#   THREADS=2 REPS=5 ROUNDS=2 VARIANTS="generic native" scripts/bench-compare.sh
#
# The generic evolve-hud is built into $GENERIC_TARGET_DIR (target/generic)
# with RUSTFLAGS=-Ctarget-cpu=x86-64, overriding .cargo/config.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${1:-$(scripts/fetch-test-model.sh)}"
THREADS="${THREADS:-2}"
REPS="${REPS:-5}"
ROUNDS="${ROUNDS:-2}"
VARIANTS="${VARIANTS:-generic native}"
GENERIC_TARGET_DIR="${GENERIC_TARGET_DIR:-target/generic}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

for variant in $VARIANTS; do
  if [ "$variant" = native ]; then
    cargo build --release --locked >&2
    ours=target/release/evolve-hud
  else
    RUSTFLAGS="-C target-cpu=x86-64" CARGO_TARGET_DIR="$GENERIC_TARGET_DIR" cargo build --release --locked >&2
    ours="$GENERIC_TARGET_DIR/release/evolve-hud"
  fi
  theirs="$(scripts/llama-cpp.sh llama-bench "$variant")"
  for round in $(seq "$ROUNDS"); do
    echo "$variant round $round: llama-bench..." >&2
    "$theirs" -m "$MODEL" -t "$THREADS" -p 512 -n 128 -r "$REPS" -fa 0 -o json > "$OUT/llama-$variant-$round.json" 2>/dev/null
    echo "$variant round $round: evolve-hud bench..." >&2
    "$ours" bench -m "$MODEL" --threads "$THREADS" -p 512 -n 128 -r "$REPS" --nice 0 --e2e-requests 0 --json \
      > "$OUT/ours-$variant-$round.json" 2>/dev/null
  done
done

python3 - "$OUT" "$THREADS" <<'PY'
import json, glob, os, statistics, sys
out, threads = sys.argv[1], sys.argv[2]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    tool, variant, _ = os.path.basename(path)[:-5].split("-")
    data = json.load(open(path))
    if tool == "llama":
        for r in data:
            test = f"pp{r['n_prompt']}" if r["n_gen"] == 0 else f"tg{r['n_gen']}"
            rows.setdefault((variant, test), {}).setdefault(tool, []).append(r["avg_ts"])
    else:
        for r in data["results"]:
            rows.setdefault((variant, r["test"]), {}).setdefault(tool, []).append(r["avg_ts"])
print(f"| build | test | llama-bench t/s | evolve-hud t/s | ratio |  ({threads} threads)")
print("| --- | --- | ---: | ---: | ---: |")
for (variant, test), tools in sorted(rows.items()):
    theirs, ours = statistics.mean(tools.get("llama", [0])), statistics.mean(tools.get("ours", [0]))
    ratio = ours / theirs if theirs else float("nan")
    print(f"| {variant} | {test} | {theirs:.1f} | {ours:.1f} | {ratio:.3f} |")
PY
