#!/usr/bin/env bash
# Makes the npm packages of a release in OUT (default target/npm): the
# OpenCode plugin `opencode-evolve-hud` and the sidecar's platform package
# for this machine, `opencode-evolve-hud-linux-x64` (or -linux-arm64), with
# the portable binary (scripts/portable.sh). Prints the tarballs.
#
#   scripts/npm-pack.sh [OUT]
#   npm publish OUT/opencode-evolve-hud-linux-x64-*.tgz  # platform packages first,
#   npm publish OUT/opencode-evolve-hud-[0-9]*.tgz       # then the plugin
#
# Each platform package is built on its own platform: the plugin lists as
# optional dependencies only the platforms packed here (PLATFORMS adds more
# as PLATFORM=DIR pairs, the folders portable.sh made on those machines).
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-target/npm}")"
# This machine as npm names platforms (npm/pack.ts refuses one it has no package for).
here="$(node -p 'process.platform + "-" + process.arch')"
dir="$(dirname "$(scripts/portable.sh target/dyn/portable)")"
[ -d plugin-shim/node_modules/tsx ] || (cd plugin-shim && npm ci --no-audit --no-fund >&2)
# shellcheck disable=SC2086
(cd plugin-shim && node --import tsx npm/pack.ts "$out" "$here=$dir" ${PLATFORMS:-})
