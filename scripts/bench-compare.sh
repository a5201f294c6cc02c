#!/usr/bin/env bash
# Measures evolve-hud's throughput against llama.cpp's own llama-bench on the
# same models, threads and machine, in the same run: both tools alternate,
# ROUNDS times per model, and the ratio table is printed at the end.
#
#   scripts/bench-compare.sh [model.gguf ...]
#       (default: SmolLM2-135M, the test model, and Qwen2.5-Coder-0.5B)
#   THREADS=2 REPS=5 ROUNDS=2 VARIANTS="native generic" scripts/bench-compare.sh
#   OURS=path/evolve-hud THEIRS=path/llama-bench VARIANTS=cuda GPU_LAYERS=99 \
#     FLASH_ATTN="off on" scripts/bench-compare.sh model.gguf
#       (prebuilt binaries, as on a GPU machine: see scripts/device-bench.sh;
#       LINKED_BENCH=path/llama-bench names a prebuilt linked peer)
#   VARIANTS="native portable" scripts/bench-compare.sh
#       (portable: scripts/portable.sh, the binary of the npm package, every CPU
#       variant of ggml as a module, against the same native peers)
#
# With LINKED=1 (the default unless THEIRS is given) llama-bench also runs
# built from the llama.cpp evolve-hud links (scripts/llama-cpp.sh ... linked),
# with a context of CTX KV cells (default 4096, evolve-hud's --ctx; upstream
# llama-bench makes it only as large as the test, 128 cells for tg128).
#
# evolve-hud runs with the flags a user gets (its default --nice 0 included);
# llama-bench with the same flash-attention setting (FLASH_ATTN, default off,
# what evolve-hud's `auto` does on CPU) and GPU layers (GPU_LAYERS, default 0).
#
# The generic evolve-hud is built into $GENERIC_TARGET_DIR (target/generic)
# with RUSTFLAGS=-Ctarget-cpu=x86-64, overriding .cargo/config.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  MODELS=("$@")
else
  MODELS=("$(scripts/fetch-test-model.sh | tail -n 1)" "$(scripts/fetch-model.sh qwen-coder | tail -n 1)")
fi
THREADS="${THREADS:-2}"
REPS="${REPS:-5}"
ROUNDS="${ROUNDS:-2}"
VARIANTS="${VARIANTS:-native}"
GPU_LAYERS="${GPU_LAYERS:-0}"
CTX="${CTX:-4096}"
FLASH_ATTN="${FLASH_ATTN:-off}"
GENERIC_TARGET_DIR="${GENERIC_TARGET_DIR:-target/generic}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# With both native and portable, the portable binary runs as one more tool
# in the native build's rounds: every tool alternates with every other.
portable_bin=""
if [[ " $VARIANTS " == *" portable "* && " $VARIANTS " == *" native "* && -z "${OURS:-}" ]]; then
  portable_bin="$(scripts/portable.sh target/dyn/portable)"
  VARIANTS="$(echo " $VARIANTS " | sed 's/ portable / /')"
fi

for variant in $VARIANTS; do
  if [ -n "${OURS:-}" ]; then
    ours="$OURS"
  elif [ "$variant" = native ]; then
    scripts/native-cpu.sh target
    cargo build --release --locked >&2
    ours=target/release/evolve-hud
  elif [ "$variant" = portable ]; then
    ours="$(scripts/portable.sh target/dyn/portable)"
  else
    RUSTFLAGS="-C target-cpu=x86-64" CARGO_TARGET_DIR="$GENERIC_TARGET_DIR" cargo build --release --locked >&2
    ours="$GENERIC_TARGET_DIR/release/evolve-hud"
  fi
  # The peers: llama-bench from the sdist's llama.cpp, and (LINKED=1, the
  # default on a CPU) from the llama.cpp evolve-hud links, which tells a
  # gap of llama.cpp versions from one of ours.
  # The portable build is compared with the native peers: what it must
  # match on this CPU.
  peer_variant="$([ "$variant" = portable ] && echo native || echo "$variant")"
  peers=("sdist=${THEIRS:-$(scripts/llama-cpp.sh llama-bench "$peer_variant")}")
  if [ -n "${LINKED_BENCH:-}" ]; then
    peers+=("linked=$LINKED_BENCH")
  elif [ "${LINKED:-$([ -z "${THEIRS:-}" ] && echo 1 || echo 0)}" = 1 ]; then
    peers+=("linked=$(scripts/llama-cpp.sh llama-bench "$peer_variant" linked)")
  fi
  for m in "${!MODELS[@]}"; do
    model="${MODELS[$m]}"
    for fa in $FLASH_ATTN; do
      build="$variant"
      [ "$FLASH_ATTN" = off ] || build="$variant fa=$fa"
      for round in $(seq "$ROUNDS"); do
        # Every other round runs the tools in the reverse order, so that no
        # tool always follows the same one.
        tools=("${peers[@]}" "ours=$ours")
        [ -z "$portable_bin" ] || [ "$variant" != native ] || tools+=("portable=$portable_bin")
        n=${#tools[@]}
        for i in $(seq 0 $((n - 1))); do
          tool="${tools[$((round % 2 ? i : n - 1 - i))]}"
          name="${tool%%=*}"
          echo "$build $(basename "$model") round $round: $name..." >&2
          if [ "$name" = ours ] || [ "$name" = portable ]; then
            "${tool#*=}" bench -m "$model" --ctx "$CTX" --threads "$THREADS" -p 512 -n 128 -r "$REPS" --e2e-requests 0 \
              --gpu-layers "$GPU_LAYERS" --flash-attn "$fa" --json
          else
            # Only the linked llama-bench reads LLAMA_BENCH_CTX.
            LLAMA_BENCH_CTX="$CTX" "${tool#*=}" -m "$model" -t "$THREADS" -p 512 -n 128 -r "$REPS" -ngl "$GPU_LAYERS" \
              -fa "$([ "$fa" = on ] && echo 1 || echo 0)" -o json
          fi > "$OUT/$name~$build~$m~$round.json" 2>/dev/null
        done
      done
    done
  done
done

python3 - "$OUT" "$THREADS" "${MODELS[@]}" <<'PY'
import json, glob, os, statistics, sys
out, threads, models = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    tool, variant, m, _ = os.path.basename(path)[:-5].split("~")
    model = os.path.basename(models[int(m)]).removesuffix(".gguf")
    data = json.load(open(path))
    if tool in ("ours", "portable"):
        for r in data["results"]:
            rows.setdefault((model, variant, r["test"]), {}).setdefault(tool, []).append(r["avg_ts"])
    else:
        for r in data:
            test = f"pp{r['n_prompt']}" if r["n_gen"] == 0 else f"tg{r['n_gen']}"
            rows.setdefault((model, variant, test), {}).setdefault(tool, []).append(r["avg_ts"])
linked = any("linked" in tools for tools in rows.values())
portable = any("portable" in tools for tools in rows.values())
head = "| model | build | test | llama-bench t/s | evolve-hud t/s | ratio |"
rule = "| --- | --- | --- | ---: | ---: | ---: |"
if linked:
    head += " llama-bench on our llama.cpp, same ctx t/s | ratio to it |"
    rule += " ---: | ---: |"
if portable:
    head += " portable evolve-hud t/s | portable to native evolve-hud | portable to llama-bench |"
    rule += " ---: | ---: | ---: |"
print(f"{head}  ({threads} threads)")
print(rule)
mean = lambda values: statistics.mean(values) if values else float("nan")
for (model, variant, test), tools in sorted(rows.items()):
    ours = tools.get("ours", [])
    def against(peer, ours=ours):
        theirs = tools.get(peer, [])
        runs = " / ".join(f"{o / t:.2f}" for o, t in zip(ours, theirs))
        return f" {mean(ours) / mean(theirs):.3f} (rounds: {runs}) |"
    line = f"| {model} | {variant} | {test} | {mean(tools.get('sdist', [])):.1f} | {mean(ours):.1f} |" + against("sdist")
    if linked:
        line += f" {mean(tools.get('linked', [])):.1f} |" + against("linked")
    if portable:
        mine = tools.get("portable", [])
        line += f" {mean(mine):.1f} |" + against("ours", mine) + against("sdist", mine)
    print(line)
PY
