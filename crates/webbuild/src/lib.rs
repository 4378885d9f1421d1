//! capelab-webbuild: builds the browser app (web/, crate capelab-web) into `dist/` the way
//! `trunk build --release` does, from the same root `index.html`, without installing trunk or the
//! wasm-bindgen CLI: wasm-bindgen runs here as a library (`wasm-bindgen-cli-support`, the same
//! version as the `wasm-bindgen` crate), so a fresh machine compiles it with the rest of the
//! workspace instead of `cargo install`-ing two tools (about 12 minutes on 2 cores).
//!
//! The output matches trunk's: the same content-hashed file names (seahash, as trunk), the same
//! `index.html` (web/src/worker/host.rs finds the bundle from its `modulepreload` link), the same
//! cargo profile (so the two share the compiled wasm), the same wasm-opt, then the same
//! post-build hook (scripts/precompress.mjs).

pub mod html;
pub mod names;

/// Trunk.toml's `pattern_script`: the tag that starts the app in place of trunk's inline module
/// script (web/boot.js reads the bundle's and the wasm's names from its query).
pub const PATTERN_SCRIPT: &str =
    r#"<script type="module" src="{base}boot.js?wasm={base}{wasm}&amp;js={base}{js}"></script>"#;

/// The wasm-opt Trunk.toml pins (`[tools] wasm_opt`): npm binaryen 132 (tools/package.json).
/// Debian's 108 breaks the output silently, so only the one in tools/node_modules is used.
pub const WASM_OPT_VERSION: &str = "version_132";

#[cfg(test)]
mod tests {
    /// The version of a package in the workspace's Cargo.lock (the first, if several).
    fn locked(package: &str) -> String {
        let lock = include_str!("../../../Cargo.lock");
        let at = lock.find(&format!("\nname = \"{package}\"\n")).expect(package);
        let rest = &lock[at..];
        let v = rest.find("version = \"").unwrap() + "version = \"".len();
        rest[v..v + rest[v..].find('"').unwrap()].to_owned()
    }

    #[test]
    fn bindgen_library_equals_the_wasm_bindgen_crate() {
        // The wasm's schema must match the bindgen that reads it; the CLI pin in
        // scripts/setup.sh and Trunk.toml follows the same crate.
        assert_eq!(locked("wasm-bindgen-cli-support"), locked("wasm-bindgen"));
        let trunk = include_str!("../../../Trunk.toml");
        assert!(trunk.contains(&format!("wasm_bindgen = \"{}\"", locked("wasm-bindgen"))));
    }

    #[test]
    fn pattern_script_equals_trunk_toml() {
        let trunk = include_str!("../../../Trunk.toml");
        assert!(trunk.contains(&format!("\npattern_script = '{}'\n", super::PATTERN_SCRIPT)));
    }

    #[test]
    fn wasm_opt_pin_equals_trunk_toml() {
        let trunk = include_str!("../../../Trunk.toml");
        assert!(trunk.contains(&format!("wasm_opt = \"{}\"", super::WASM_OPT_VERSION)));
    }
}
