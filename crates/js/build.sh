#!/usr/bin/env bash
# Builds the npm package `capelab` (crates/js) into OUT (default crates/js/pkg): one
# `wasm-pack build` per target, `web` and `nodejs`, then npm/assemble.mjs joins them into one
# package. Both builds share the cargo profile (`wasm-release`, the app's) and target dir: cargo
# compiles once, the second build only runs wasm-bindgen and wasm-opt again.
#
# Never downloads: `--mode no-install` makes wasm-pack use the wasm-bindgen on PATH (which must
# equal the wasm-bindgen crate's version, 0.2.130) and the wasm-opt on PATH (npm binaryen 132,
# tools/node_modules/.bin); scripts/setup.sh test installs all three and wasm-pack itself.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$(realpath -m "${1:-$HERE/pkg}")"
rm -rf "$OUT"
for target in web nodejs; do
    dir="${target%js}" # web, node
    wasm-pack --log-level warn build "$HERE" --mode no-install --target "$target" \
        --out-dir "$OUT/$dir" --out-name capelab --profile wasm-release -- --locked
done
node "$HERE/npm/assemble.mjs" "$OUT"
