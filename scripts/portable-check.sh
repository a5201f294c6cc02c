#!/usr/bin/env bash
# Runs the portable build (scripts/portable.sh) on older x86-64 CPUs than
# this one, under qemu-user's emulation, where an instruction the emulated
# CPU lacks is an illegal instruction. On each CPU the binary serves MODEL on
# a free port, answers one chat completion, and the CPU module ggml chose is
# printed (from /health). First, as a control, the native build
# (target/release) must die of SIGILL on the oldest CPU: that shows the
# emulation holds the CPU to its instruction sets.
#
#   scripts/portable-check.sh DIR MODEL [CPU ...]
#       DIR: the portable folder (scripts/portable.sh DIR)
#       CPU: qemu's CPU models (qemu-x86_64 -cpu help), default Nehalem
#       (x86-64-v2, SSE4.2) and Haswell (x86-64-v3, AVX2)
#   NATIVE=path/evolve-hud   the control binary (default target/release)
#
# Needs qemu-user (Debian: apt install qemu-user). Emulation is slow: a
# 135M model answers in a minute or two.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:?usage: scripts/portable-check.sh DIR MODEL [CPU ...]}"
model="$(realpath "${2:?usage: scripts/portable-check.sh DIR MODEL [CPU ...]}")"
shift 2
cpus=("$@")
[ ${#cpus[@]} -gt 0 ] || cpus=(Nehalem Haswell)
command -v qemu-x86_64 >/dev/null || { echo "error: qemu-x86_64 is missing (apt install qemu-user)" >&2; exit 1; }
bin="$(realpath "$dir/evolve-hud")"
native="${NATIVE:-target/release/evolve-hud}"

work="$(mktemp -d)"
server=""
cleanup() {
  [ -z "$server" ] || kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# A home of its own: the check touches no config, token or log of the user.
export HOME="$work/home" XDG_CONFIG_HOME="$work/config" XDG_STATE_HOME="$work/state" XDG_CACHE_HOME="$work/cache"
mkdir -p "$HOME"
(umask 077 && head -c 32 /dev/urandom | base64 | tr -d '/+=' >"$work/token")

if [ -x "$native" ]; then
  set +e
  qemu-x86_64 -cpu "${cpus[0]}" "$native" --version >/dev/null 2>&1
  rc=$?
  set -e
  [ "$rc" = 132 ] || { echo "error: the native build ran on ${cpus[0]} (exit $rc): the emulation does not hold the CPU" >&2; exit 1; }
  echo "control: the native build dies of SIGILL on ${cpus[0]}"
fi

for cpu in "${cpus[@]}"; do
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  qemu-x86_64 -cpu "$cpu" "$bin" serve --model "$model" --port "$port" --threads 2 --ctx 512 \
    --queue-timeout-ms 600000 --auth-token-file "$work/token" >"$work/serve-$cpu.log" 2>&1 &
  server=$!
  health=""
  for _ in $(seq 600); do
    health="$(curl -sf "http://127.0.0.1:$port/health" || true)"
    [ -z "$health" ] || break
    kill -0 "$server" 2>/dev/null || { tail -20 "$work/serve-$cpu.log" >&2; echo "error: the server died on $cpu" >&2; exit 1; }
    sleep 1
  done
  [ -n "$health" ] || { echo "error: no health answer on $cpu in 10 minutes" >&2; exit 1; }
  answer="$(curl -sf --max-time 600 "http://127.0.0.1:$port/v1/chat/completions" \
    -H "Authorization: Bearer $(cat "$work/token")" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"Say hello."}],"max_tokens":8,"temperature":0}')" ||
    { tail -20 "$work/serve-$cpu.log" >&2; echo "error: no chat answer on $cpu" >&2; exit 1; }
  python3 - "$cpu" "$health" "$answer" <<'PY'
import json, sys
cpu, health, answer = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
text = answer["choices"][0]["message"]["content"]
assert text.strip(), f"an empty answer on {cpu}"
module = health.get("cpu_variant", "(none named)")
print(f"{cpu}: ggml's {module} module, CPU back-end {' '.join(health.get('cpu_features', []))}; answered {text!r}")
PY
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=""
done
