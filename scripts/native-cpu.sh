#!/usr/bin/env bash
# Native builds (-march=native, -C target-cpu=native) run only on CPUs with
# every instruction set of the CPU that built them: one built with AVX-512
# dies of SIGILL on an AVX2 machine. Neither cargo nor cmake notices when a
# build folder moves to another CPU (a shared or restored disk), so native
# build folders are keyed by the CPU here.
#
#   scripts/native-cpu.sh key      prints this CPU's key: the compiler's
#                                  -march=native name and a hash of the
#                                  instruction sets it resolves to
#   scripts/native-cpu.sh target   makes the cargo release folder
#                                  (CARGO_TARGET_DIR or target) fit this CPU:
#                                  one stamped with another CPU's key is
#                                  cleaned first; an unstamped one (a first
#                                  build, `cargo install --path .`) is taken
#                                  as this CPU's and stamped
set -euo pipefail
cd "$(dirname "$0")/.."

key() {
  local flags
  flags="$(${CC:-cc} -march=native -### -E - </dev/null 2>&1 | tr ' ' '\n' | tr -d '"' | grep -E '^-m[a-z0-9]' | sort)" || true
  [ -n "$flags" ] || { echo "error: ${CC:-cc} -march=native resolved no flags (is a C compiler installed?)" >&2; exit 1; }
  echo "$(grep -m1 '^-march=' <<<"$flags" | cut -d= -f2)-$(sha256sum <<<"$flags" | cut -c1-10)"
}

case "${1:?usage: scripts/native-cpu.sh key | target}" in
  key) key ;;
  target)
    this="$(key)"
    dir="${CARGO_TARGET_DIR:-target}/release"
    stamp="$dir/.native-cpu"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$this" ]; then
      echo "$dir was built for the CPU $(cat "$stamp"), this one is $this: rebuilding it" >&2
      cargo clean --release >&2
    fi
    mkdir -p "$dir"
    echo "$this" >"$stamp"
    ;;
  *) echo "error: scripts/native-cpu.sh key | target, not $1" >&2; exit 2 ;;
esac
