#!/usr/bin/env bash
# RSS of `evolve-hud serve` with the model loaded and after --keep-alive
# released it, and the time of a short chat answer in both states.
# Usage: benches/keep-alive.sh MODEL.gguf [PORT]   (EVOLVE_HUD_BIN: the binary)
set -euo pipefail
model=${1:?usage: benches/keep-alive.sh MODEL.gguf [PORT]}
port=${2:-18401}
bin=${EVOLVE_HUD_BIN:-$(dirname "$0")/../target/release/evolve-hud}
home=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$home"' EXIT
export XDG_CONFIG_HOME=$home/config XDG_STATE_HOME=$home/state
"$bin" serve --model "$model" --port "$port" --keep-alive 3s --threads 2 2>"$home/log" &
pid=$!
until curl -sf "127.0.0.1:$port/health" >/dev/null; do sleep 0.2; done
token=$(cat "$home/config/evolve-hud/token")
ask() {
  curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/v1/chat/completions" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"Say hello."}],"max_tokens":8,"temperature":0}'
}
rss() { awk '/VmRSS/{print int($2/1024)}' "/proc/$pid/status"; }
ask >/dev/null
loaded=(); for _ in 1 2 3; do loaded+=("$(ask)"); done
loaded_rss=$(rss)
reload=()
for _ in 1 2 3; do
  until curl -s "127.0.0.1:$port/health" | grep -q '"status":"released"'; do sleep 0.2; done
  released_rss=$(rss)
  reload+=("$(ask)")
done
echo "$(basename "$model"): RSS loaded ${loaded_rss} MiB, released ${released_rss} MiB; answer loaded ${loaded[*]} s, first after a release ${reload[*]} s"
