#!/usr/bin/env bash
# Builds the portable evolve-hud, the one the npm platform package ships:
# x86-64-v2 for the Rust code and llama.cpp's common parts, and llama.cpp's
# back-ends as modules beside the binary (the `dynamic-backends` feature),
# every x86-64 CPU variant of ggml among them; the best one for the CPU is
# picked at start. The binary finds its libraries beside it (its run path,
# build.rs).
#
#   scripts/portable.sh DIR        builds into target/dyn (DYN_TARGET_DIR), puts
#                                  the binary, its libraries and modules into
#                                  DIR, and prints the binary's path
#   scripts/portable.sh --rustflags | --target-dir
#                                  prints what the build uses, for other
#                                  builds of the same kind (the evaluation)
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTFLAGS_PORTABLE="-C target-cpu=x86-64-v2"
TARGET="${DYN_TARGET_DIR:-target/dyn}"
case "${1:?usage: scripts/portable.sh DIR | --rustflags | --target-dir}" in
  --rustflags) echo "$RUSTFLAGS_PORTABLE"; exit 0 ;;
  --target-dir) echo "$TARGET"; exit 0 ;;
esac
dir="$(realpath -m "$1")"
RUSTFLAGS="$RUSTFLAGS_PORTABLE" CARGO_TARGET_DIR="$TARGET" \
  cargo build --release --locked --features dynamic-backends >&2
out="$(ls -d "$TARGET"/release/build/llama-cpp-sys-2-*/out | head -n 1)"
mkdir -p "$dir"
cp "$TARGET/release/evolve-hud" "$dir/"
strip "$dir/evolve-hud"
# llama.cpp's libraries as regular files under the names the binary asks
# for (npm packs no links), and the modules.
for lib in $(readelf -d "$dir/evolve-hud" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  for found in "$out"/lib*/"$lib"; do
    [ ! -e "$found" ] || cp -L "$found" "$dir/$lib"
  done
done
cp "$out"/backends/*.so "$dir/"
# GCC's OpenMP runtime, which the modules need and a minimal system may
# lack.
gomp="$(${CC:-cc} -print-file-name=libgomp.so.1)"
[ ! -e "$gomp" ] || cp -L "$gomp" "$dir/libgomp.so.1"
# Never ggml's AMX kernels: they crash on AMX CPUs at the first decode
# (upstream llama.cpp issue 20824). The one variant built with them
# (sapphirerapids) is left out, so an AMX CPU gets the next best, with
# AVX-512, VNNI and BF16; a load that finds AMX kernels anyway keeps the
# weights out of them (src/engine/local/cpu.rs).
rm -f "$dir"/libggml-cpu-sapphirerapids.so
echo "$dir/evolve-hud"
