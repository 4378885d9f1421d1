//! `capelab-webbuild [--dist DIR] [--root DIR]`: builds the browser app into `dist/` as
//! `trunk build --release` does (see lib.rs), for `scripts/demo` and `scripts/test`.
//!
//!   cargo run --release -p capelab-webbuild          # -> dist/
//!
//! Needs the wasm32-unknown-unknown target, Node.js and tools/node_modules (npm binaryen's
//! wasm-opt): `scripts/setup.sh demo` installs all three.

use anyhow::{Context, Result, bail};
use capelab_webbuild::{WASM_OPT_VERSION, html, names};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use wasm_bindgen_cli_support::Bindgen;

const SETUP: &str = "scripts/setup.sh demo";

fn main() {
    if let Err(e) = run() {
        eprintln!("\x1b[31merror:\x1b[0m {e:#}");
        std::process::exit(1);
    }
}

struct Args {
    root: PathBuf,
    dist: Option<PathBuf>,
}

fn args() -> Result<Args> {
    let mut root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut dist = None;
    let mut it = std::env::args_os().skip(1);
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--dist") => dist = Some(PathBuf::from(it.next().context("--dist needs a DIR")?)),
            Some("--root") => root = PathBuf::from(it.next().context("--root needs a DIR")?),
            Some("-h" | "--help") => {
                println!(
                    "capelab-webbuild [--dist DIR] [--root DIR]\n\
                     Builds the browser app from ROOT/index.html into DIR (default ROOT/dist), \
                     as `trunk build --release` does."
                );
                std::process::exit(0);
            }
            _ => bail!("unknown argument {a:?} (try --help)"),
        }
    }
    let root = root.canonicalize().with_context(|| format!("root {}", root.display()))?;
    Ok(Args { root, dist })
}

fn run() -> Result<()> {
    let Args { root, dist } = args()?;
    let dist = dist.unwrap_or_else(|| root.join("dist"));
    let started = Instant::now();
    let page_path = root.join("index.html");
    let page = fs::read_to_string(&page_path)
        .with_context(|| format!("reading {}", page_path.display()))?;
    let plan = html::plan(&page)?;

    // Check the tools first, so a missing one costs seconds, not a wasm build.
    let wasm_opt = match &plan.rust.wasm_opt {
        Some(_) => Some(find_wasm_opt(&root)?),
        None => None,
    };
    check_node()?;

    // 1. cargo: the same command trunk runs (so the two share target/wasm32-unknown-unknown/<profile>).
    let wasm = cargo_build(&root, &plan.rust)?;
    let wasm_bytes = fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;
    let base = names::wasm_base_name(&plan.rust.bin, &wasm_bytes);

    // Everything is written into a staging directory next to dist/, which then replaces dist/.
    let stage = staging_dir(&dist)?;
    if stage.exists() {
        fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
    }
    fs::create_dir_all(&stage).with_context(|| format!("creating {}", stage.display()))?;

    // 2. wasm-bindgen, as `wasm-bindgen --target=web --no-typescript --out-name=<bin>`.
    let t = Instant::now();
    let bindgen_out =
        wasm.parent().context("cargo's wasm has no directory")?.join("capelab-webbuild");
    if bindgen_out.exists() {
        fs::remove_dir_all(&bindgen_out)?;
    }
    bindgen(&wasm, &plan.rust.bin, &bindgen_out)?;
    if bindgen_out.join("snippets").exists() {
        bail!(
            "wasm-bindgen wrote snippets/ (an inline_js or module import): capelab-webbuild does \
             not copy them yet; build with trunk or extend crates/webbuild"
        );
    }
    let js = format!("{base}.js");
    let wasm_out = format!("{base}_bg.wasm");
    copy(&bindgen_out.join(format!("{}.js", plan.rust.bin)), &stage.join(&js))?;
    let bg_wasm = bindgen_out.join(format!("{}_bg.wasm", plan.rust.bin));
    println!("wasm-bindgen: {:.1} s", t.elapsed().as_secs_f64());

    // 3. wasm-opt, as trunk runs it: `wasm-opt --output=OUT -O<level> IN`.
    match (&wasm_opt, &plan.rust.wasm_opt) {
        (Some(tool), Some(level)) => {
            let t = Instant::now();
            let out = stage.join(&wasm_out);
            let status = Command::new(tool)
                .arg(format!("--output={}", out.display()))
                .arg(format!("-O{level}"))
                .arg(&bg_wasm)
                .current_dir(&root)
                .status()
                .with_context(|| format!("running {}", tool.display()))?;
            if !status.success() {
                bail!("wasm-opt -O{level} failed ({status})");
            }
            println!("wasm-opt -O{level}: {:.1} s", t.elapsed().as_secs_f64());
        }
        _ => copy(&bg_wasm, &stage.join(&wasm_out))?,
    }

    // 4. The stylesheets (hashed) and the copied files.
    let mut css = Vec::new();
    for link in &plan.css {
        let src = root.join(&link.href);
        let bytes = fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
        let name = names::hashed_file_name(&file_name(&src)?, &bytes);
        fs::write(stage.join(&name), &bytes)?;
        css.push((name, link.integrity.then(|| names::sri_sha384(&bytes))));
    }
    for href in &plan.copy_files {
        let src = root.join(href);
        if !src.is_file() {
            bail!(
                "{} is missing (index.html copies it into the app); run `scripts/setup.sh demo`, \
                 which writes the data sets into data/",
                src.display()
            );
        }
        copy(&src, &stage.join(file_name(&src)?))?;
    }

    // 5. The page.
    let digest = |name: &str| -> Result<Option<String>> {
        Ok(match plan.rust.integrity {
            true => Some(names::sri_sha384(&fs::read(stage.join(name))?)),
            false => None,
        })
    };
    let outputs = html::Outputs {
        css,
        js_integrity: digest(&js)?,
        wasm_integrity: digest(&wasm_out)?,
        js,
        wasm: wasm_out,
    };
    fs::write(stage.join("index.html"), html::render(&page, &plan, &outputs)?)?;

    // 6. Trunk.toml's post_build hook: brotli and gzip copies.
    let t = Instant::now();
    let status = Command::new("node")
        .arg(root.join("scripts/precompress.mjs"))
        .arg(&stage)
        .current_dir(&root)
        .stdout(Stdio::null())
        .status()
        .context("running node scripts/precompress.mjs")?;
    if !status.success() {
        bail!("node scripts/precompress.mjs failed ({status})");
    }
    println!("precompress: {:.1} s", t.elapsed().as_secs_f64());

    if dist.exists() {
        fs::remove_dir_all(&dist)
            .with_context(|| format!("removing the old {}", dist.display()))?;
    }
    fs::rename(&stage, &dist).with_context(|| format!("moving the build to {}", dist.display()))?;
    println!(
        "capelab-webbuild: {} ({}, {}) in {:.0} s",
        dist.display(),
        outputs.js,
        outputs.wasm,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `cargo build --target=wasm32-unknown-unknown --profile P --bin B`: returns the wasm it wrote.
fn cargo_build(root: &Path, rust: &html::RustLink) -> Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.current_dir(root)
        .args(["build", "--target=wasm32-unknown-unknown", "--locked", "--manifest-path"])
        .arg(root.join(&rust.manifest));
    match &rust.cargo_profile {
        Some(p) => cmd.args(["--profile", p]),
        None => cmd.arg("--release"),
    };
    cmd.args(["--bin", &rust.bin, "--message-format=json-render-diagnostics"]);
    cmd.stdout(Stdio::piped());
    let t = Instant::now();
    let mut child = cmd.spawn().context("running cargo")?;
    let mut wasm = None;
    let stdout = child.stdout.take().expect("piped");
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == rust.bin.as_str() {
            let files = msg["filenames"].as_array().into_iter().flatten();
            wasm =
                files.filter_map(|f| f.as_str()).find(|f| f.ends_with(".wasm")).map(PathBuf::from);
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!(
            "cargo build of the app failed ({status}). If it says the wasm32-unknown-unknown \
             target is not installed: `rustup target add wasm32-unknown-unknown` (or `{SETUP}`)."
        );
    }
    println!(
        "cargo build (wasm32, {}): {:.0} s",
        rust.cargo_profile.as_deref().unwrap_or("release"),
        t.elapsed().as_secs_f64()
    );
    wasm.context("cargo built no .wasm for the app's binary")
}

/// wasm-bindgen with the options the CLI gets from trunk (`--target=web --no-typescript`): the CLI's
/// defaults are set one by one, since the library's defaults differ (e.g. omit_default_module_path).
#[allow(deprecated)]
fn bindgen(wasm: &Path, name: &str, out_dir: &Path) -> Result<()> {
    let mut b = Bindgen::new();
    b.web(true)?;
    b.input_path(wasm)
        .out_name(name)
        .debug(false)
        .demangle(true)
        .keep_lld_exports(false)
        .keep_debug(false)
        .split_debug_info(false)
        .remove_name_section(false)
        .remove_producers_section(false)
        .typescript(false)
        .omit_imports(false)
        .omit_default_module_path(false)
        .split_linked_modules(false)
        .js_string_builtins(false)
        .ts_typed_array_buffers(false)
        .reference_types(false)
        .reset_state_function(false)
        .force_enable_abort_handler(false);
    b.generate(out_dir).context("wasm-bindgen")
}

/// tools/node_modules/.bin/wasm-opt (npm binaryen), at the pinned version; never one from PATH.
fn find_wasm_opt(root: &Path) -> Result<PathBuf> {
    let tool = root.join("tools/node_modules/.bin/wasm-opt");
    if !tool.exists() {
        bail!(
            "{} is missing: the app's wasm-opt is npm binaryen@132 in tools/. Install it with \
             `{SETUP}` (it runs `npm ci` in tools/).",
            tool.display()
        );
    }
    let out = Command::new(&tool)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version (is Node.js installed?)", tool.display()))?;
    let version = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !version.contains(WASM_OPT_VERSION) {
        bail!(
            "{} is not {WASM_OPT_VERSION} (it says {:?}); reinstall it with `{SETUP}`",
            tool.display(),
            version.trim()
        );
    }
    Ok(tool)
}

fn check_node() -> Result<()> {
    match Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!(
            "node is not on PATH: it runs wasm-opt and scripts/precompress.mjs. Install Node.js \
             (`{SETUP}` does, as root: apt-get install nodejs npm)."
        ),
    }
}

fn staging_dir(dist: &Path) -> Result<PathBuf> {
    let name = dist.file_name().context("--dist has no directory name")?;
    let mut stage = name.to_os_string();
    stage.push(".stage");
    Ok(dist.with_file_name(stage))
}

fn file_name(p: &Path) -> Result<String> {
    Ok(p.file_name()
        .with_context(|| format!("{} is not a file", p.display()))?
        .to_string_lossy()
        .into_owned())
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to)
        .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}
