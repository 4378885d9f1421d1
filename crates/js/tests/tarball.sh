#!/usr/bin/env bash
# The npm package as a user gets it: `npm pack` of PKG (default crates/js/pkg), the tarball
# installed into an empty folder (offline: the package has no dependencies), and a script there
# that imports `capelab` by name and prints the PLD ε of DP-VI's setting (dpvi-epsilon.mjs).
# Prints the tarball's size too. Exits non-zero if anything fails or ε is not 0.909.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PKG="$(realpath "${1:-$HERE/../pkg}")"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

tarball="$(cd "$PKG" && npm pack --silent --pack-destination "$WORK" | tail -n 1)"
printf '    %s: %s bytes packed\n' "$tarball" "$(stat -c %s "$WORK/$tarball")"
mkdir "$WORK/app"
cp "$HERE/dpvi-epsilon.mjs" "$WORK/app/"
cd "$WORK/app"
npm init --yes >/dev/null
npm install --offline --no-audit --no-fund --loglevel=error "$WORK/$tarball"
node dpvi-epsilon.mjs
