#!/usr/bin/env bash
# RSS of `evolve-hud serve` with the model loaded and after --keep-alive
# released it, and in both states the time of a short chat answer and of a
# HUD finding: from the sync of a failed call the HUD asks the model about
# to the HUD showing the model's verified finding.
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
# A failed call of a check no parser knows: the HUD asks the model about it.
finding() {
  local id=$1 started
  local output='running checks\ncheck_add ... ok\ncheck_div ... FAILED\n  div.c:7: expected 2 got 3\n1 check failed'
  started=$(date +%s.%N)
  curl -s -o /dev/null "127.0.0.1:$port/v1/hud/sync" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -d '{"session_id":"'"$id"'","full":true,"messages":[
      {"info":{"id":"u","sessionID":"'"$id"'","role":"user"},"parts":[{"type":"text","text":"fix the checks"}]},
      {"info":{"id":"a","sessionID":"'"$id"'","role":"assistant"},"parts":[{"type":"tool","callID":"c1","tool":"bash",
        "state":{"status":"completed","input":{"command":"./checks.sh"},"output":"'"$output"'","metadata":{"exit":1}}}]}]}'
  local state=pending
  for _ in $(seq 1 600); do
    state=$(curl -s "127.0.0.1:$port/v1/hud/$id" -H "Authorization: Bearer $token" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["model_status"]["state"])')
    [ "$state" != pending ] && break
    sleep 0.05
  done
  echo "$state $(echo "$(date +%s.%N) - $started" | bc | xargs printf '%.2f')"
}
found=(); for i in 1 2 3; do found+=("$(finding "loaded-$i")"); done
found_reload=()
for i in 1 2 3; do
  until curl -s "127.0.0.1:$port/health" | grep -q '"status":"released"'; do sleep 0.2; done
  found_reload+=("$(finding "reload-$i")")
done
echo "$(basename "$model"): RSS loaded ${loaded_rss} MiB, released ${released_rss} MiB; answer loaded ${loaded[*]} s, first after a release ${reload[*]} s"
echo "$(basename "$model"): HUD finding (state, s from the sync) loaded: ${found[*]}; first after a release: ${found_reload[*]}"
