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
die() { echo "error: $*" >&2; exit 1; }
# Everything the packing needs, checked before the long build (about 16
# minutes on 2 cores), so that a missing piece fails at once.
for tool in node npm cargo cmake strip tar; do
  command -v "$tool" > /dev/null || die "$tool is not installed (scripts/setup.sh installs what the build needs)"
done
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "packing needs Node.js 20 or newer (found $(node --version))"
# This machine as npm names platforms (npm/pack.ts refuses one it has no package for).
here="$(node -p 'process.platform + "-" + process.arch')"
case "$here" in
  linux-x64 | linux-arm64 | darwin-arm64 | darwin-x64) ;;
  *) die "no platform package is made for $here" ;;
esac
# The plugin's dev packages (tsx runs pack.ts): `npm install`, not `npm ci`,
# as scripts/setup.sh does: npm ci refuses a lock file without the optional
# packages of other platforms.
[ -d plugin-shim/node_modules/tsx ] || (cd plugin-shim && npm install --no-audit --no-fund --loglevel=error >&2)
[ -d plugin-shim/node_modules/tsx ] || die "npm install in plugin-shim/ did not install tsx"
# The manifests are checked before the build too (a version, the names).
(cd plugin-shim && node --import tsx -e 'import("./npm/pack.ts").then((p) => p.version())' > /dev/null) \
  || die "plugin-shim/npm/pack.ts cannot read the release version"
dir="$(dirname "$(scripts/portable.sh target/dyn/portable)")"
# shellcheck disable=SC2086
(cd plugin-shim && node --import tsx npm/pack.ts "$out" "$here=$dir" ${PLATFORMS:-})
