//! The page: reads the `data-trunk` links of the root `index.html` and writes the `index.html`
//! trunk 0.21.14 writes for them, byte for byte (trunk rewrites the page with lol_html, so
//! everything but the `data-trunk` links is kept as it is).
//!
//! Only the links capelab's page uses are understood: `rel="css"`, `rel="copy-file"` and one
//! `rel="rust"` with the attributes below. Anything else is an error that says so, rather than a
//! page that silently differs from trunk's.

use anyhow::{Context, Result, bail};

/// One attribute of a tag, in source order. `value` is `None` for a bare attribute (`data-trunk`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub name: String,
    pub value: Option<String>,
}

/// A `<link data-trunk …>` tag of the source page: where it is and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrunkLink {
    /// Byte range of the whole tag in the source.
    pub start: usize,
    pub end: usize,
    pub attrs: Vec<Attr>,
}

impl TrunkLink {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|a| a.name == name).and_then(|a| a.value.as_deref())
    }

    fn check_only(&self, allowed: &[&str]) -> Result<()> {
        for a in &self.attrs {
            if !allowed.contains(&a.name.as_str()) {
                bail!(
                    "index.html: <link data-trunk rel=\"{}\"> has attribute `{}`, which \
                     capelab-webbuild does not implement (it implements only what capelab's page \
                     uses). Build with trunk, or teach crates/webbuild/src/html.rs the attribute.",
                    self.get("rel").unwrap_or("?"),
                    a.name
                );
            }
        }
        Ok(())
    }
}

/// What the page asks for, in the order of its links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub css: Vec<CssLink>,
    pub copy_files: Vec<String>,
    pub rust: RustLink,
    pub links: Vec<TrunkLink>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CssLink {
    pub href: String,
    /// `false` with `data-integrity="none"`.
    pub integrity: bool,
}

/// `<link data-trunk rel="rust" …>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RustLink {
    /// The crate's Cargo.toml, relative to the page.
    pub manifest: String,
    pub bin: String,
    pub cargo_profile: Option<String>,
    /// The `-O` level for wasm-opt (`z`, `s`, `3`, …), `None` for `data-wasm-opt="0"` or absent.
    pub wasm_opt: Option<String>,
    /// `false` with `data-integrity="none"`.
    pub integrity: bool,
}

/// The hashed output names the rewritten page refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// One per `Plan::css` entry: (file name in dist, `sha384-…` or `None`).
    pub css: Vec<(String, Option<String>)>,
    /// The wasm-bindgen JS module and the wasm file, with their digests (if the rust link wants them).
    pub js: String,
    pub js_integrity: Option<String>,
    pub wasm: String,
    pub wasm_integrity: Option<String>,
}

/// Finds the `data-trunk` links of the page (skipping comments) and checks they are ones we know.
pub fn plan(src: &str) -> Result<Plan> {
    let links = trunk_links(src)?;
    let mut css = Vec::new();
    let mut copy_files = Vec::new();
    let mut rust = None;
    for link in &links {
        let rel = link.get("rel").context("index.html: a <link data-trunk> without rel")?;
        let href = || {
            link.get("href").map(str::to_owned).with_context(|| {
                format!("index.html: <link data-trunk rel=\"{rel}\"> without href")
            })
        };
        match rel {
            "css" => {
                link.check_only(&["data-trunk", "rel", "href", "data-integrity"])?;
                css.push(CssLink { href: href()?, integrity: integrity(link)? });
            }
            "copy-file" => {
                link.check_only(&["data-trunk", "rel", "href"])?;
                copy_files.push(href()?);
            }
            "rust" => {
                link.check_only(&[
                    "data-trunk",
                    "rel",
                    "href",
                    "data-bin",
                    "data-cargo-profile",
                    "data-wasm-opt",
                    "data-integrity",
                ])?;
                if rust.is_some() {
                    bail!("index.html: more than one <link data-trunk rel=\"rust\">");
                }
                let bin = link.get("data-bin").context(
                    "index.html: the rust link needs data-bin (capelab-webbuild builds one binary)",
                )?;
                let wasm_opt = match link.get("data-wasm-opt") {
                    None | Some("0") => None,
                    Some(level) => Some(level.to_owned()),
                };
                rust = Some(RustLink {
                    manifest: link.get("href").unwrap_or("Cargo.toml").to_owned(),
                    bin: bin.to_owned(),
                    cargo_profile: link.get("data-cargo-profile").map(str::to_owned),
                    wasm_opt,
                    integrity: integrity(link)?,
                });
            }
            other => bail!(
                "index.html: <link data-trunk rel=\"{other}\"> is not implemented by \
                 capelab-webbuild (it knows css, copy-file and rust). Build with trunk, or extend \
                 crates/webbuild/src/html.rs."
            ),
        }
    }
    let rust = rust.context("index.html: no <link data-trunk rel=\"rust\">: nothing to build")?;
    Ok(Plan { css, copy_files, rust, links })
}

fn integrity(link: &TrunkLink) -> Result<bool> {
    match link.get("data-integrity") {
        None | Some("sha384") => Ok(true),
        Some("none") => Ok(false),
        Some(other) => bail!(
            "index.html: data-integrity=\"{other}\": capelab-webbuild knows only sha384 and none"
        ),
    }
}

/// The page trunk writes: each `css` link becomes a stylesheet link to its hashed copy, each
/// `copy-file` link disappears, the `rust` link becomes the module script that starts the app, and
/// the preload links go at the end of `<head>` (the web worker finds the bundle from them:
/// web/src/worker/host.rs).
pub fn render(src: &str, plan: &Plan, out: &Outputs) -> Result<String> {
    if out.css.len() != plan.css.len() {
        bail!("internal: {} css outputs for {} css links", out.css.len(), plan.css.len());
    }
    let head_end = find_head_end(src).context("index.html: no </head>")?;
    let mut html = String::with_capacity(src.len() + 1024);
    let mut at = 0;
    let mut css = out.css.iter();
    let preloads = preload_links(out);
    let mut preloads_done = false;
    for link in &plan.links {
        if !preloads_done && head_end < link.start {
            html.push_str(&src[at..head_end]);
            html.push_str(&preloads);
            preloads_done = true;
            at = head_end;
        }
        html.push_str(&src[at..link.start]);
        match link.get("rel") {
            Some("css") => {
                let (file, integrity) = css.next().expect("checked above");
                html.push_str(&format!(r#"<link rel="stylesheet" href="/{file}""#));
                if let Some(i) = integrity {
                    html.push_str(&format!(r#" integrity="{i}""#));
                }
                html.push_str("/>");
            }
            Some("rust") => html.push_str(&module_script(&out.js, &out.wasm)),
            _ => {} // copy-file: the tag goes, the file is copied
        }
        at = link.end;
    }
    if !preloads_done {
        html.push_str(&src[at..head_end]);
        html.push_str(&preloads);
        at = head_end;
    }
    html.push_str(&src[at..]);
    Ok(html)
}

/// What replaces the rust link: Trunk.toml's `pattern_script` ([`crate::PATTERN_SCRIPT`]) with
/// trunk's parameters filled in (`{base}` is the public URL `/`), as trunk's `pattern_evaluate`
/// does. It loads `boot.js`, a file, instead of trunk's inline module script, which the relay's
/// Content-Security-Policy would refuse.
pub fn module_script(js: &str, wasm: &str) -> String {
    crate::PATTERN_SCRIPT.replace("{base}", "/").replace("{js}", js).replace("{wasm}", wasm)
}

/// The `modulepreload` link of the JS module, then the `preload` link of the wasm, as trunk writes
/// them (crossorigin `anonymous`; an integrity only when the rust link asks for one).
pub fn preload_links(out: &Outputs) -> String {
    let integrity = |i: &Option<String>| match i {
        Some(i) => format!(r#" integrity="{i}""#),
        None => String::new(),
    };
    format!(
        r#"<link rel="modulepreload" href="/{js}" crossorigin="anonymous"{ji}><link rel="preload" href="/{wasm}" crossorigin="anonymous"{wi} as="fetch" type="application/wasm">"#,
        js = out.js,
        ji = integrity(&out.js_integrity),
        wasm = out.wasm,
        wi = integrity(&out.wasm_integrity),
    )
}

/// Byte offset of the first `</head>` outside comments.
fn find_head_end(src: &str) -> Option<usize> {
    let lower = src.to_ascii_lowercase();
    let mut at = 0;
    loop {
        let next_close = lower[at..].find("</head")? + at;
        match lower[at..].find("<!--").map(|i| i + at) {
            Some(c) if c < next_close => {
                at = lower[c..].find("-->").map(|i| c + i + 3)?;
            }
            _ => return Some(next_close),
        }
    }
}

/// Every tag with a `data-trunk` attribute, outside comments and raw-text elements. A
/// `data-trunk` tag other than `<link>` (trunk's `<script data-trunk>` and friends) is an error.
pub fn trunk_links(src: &str) -> Result<Vec<TrunkLink>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        if src[i..].starts_with("<!--") {
            i = src[i + 4..].find("-->").map(|j| i + 4 + j + 3).unwrap_or(b.len());
            continue;
        }
        if i + 1 >= b.len() || !b[i + 1].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let (name, attrs, end) = parse_tag(src, i)?;
        if attrs.iter().any(|a| a.name == "data-trunk") {
            if name != "link" {
                bail!(
                    "index.html: <{name} data-trunk> is not implemented by capelab-webbuild \
                     (only <link data-trunk>). Build with trunk, or extend crates/webbuild."
                );
            }
            out.push(TrunkLink { start: i, end, attrs });
        }
        i = end;
        if name == "script" || name == "style" {
            let close = format!("</{name}");
            i = src[i..].to_ascii_lowercase().find(&close).map(|j| i + j).unwrap_or(b.len());
        }
    }
    Ok(out)
}

/// Parses the start tag at `start` (which is `<` followed by a letter): its lower-case name, its
/// attributes (names lower-cased, values as written) and the offset just past its `>`.
fn parse_tag(src: &str, start: usize) -> Result<(String, Vec<Attr>, usize)> {
    let b = src.as_bytes();
    let mut i = start + 1;
    while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' && b[i] != b'/' {
        i += 1;
    }
    let name = src[start + 1..i].to_ascii_lowercase();
    let mut attrs = Vec::new();
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        if i >= b.len() {
            bail!("index.html: unterminated <{name} tag at byte {start}");
        }
        if b[i] == b'>' {
            return Ok((name, attrs, i + 1));
        }
        let n0 = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        let attr_name = src[n0..i].to_ascii_lowercase();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let value = if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let v0 = i + 1;
                let len = src[v0..].bytes().position(|c| c == q).with_context(|| {
                    format!("index.html: unterminated attribute value in <{name}>")
                })?;
                i = v0 + len + 1;
                Some(src[v0..v0 + len].to_owned())
            } else {
                let v0 = i;
                while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'>' {
                    i += 1;
                }
                Some(src[v0..i].to_owned())
            }
        } else {
            None
        };
        attrs.push(Attr { name: attr_name, value });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
  <head>
    <title>t</title>
    <!-- a comment about <link rel="preload" as="fetch"> and <link data-trunk rel="sass"> -->
    <link data-trunk rel="css" href="web/style.css" />
    <link data-trunk rel="copy-file" href="data/digits.csv" />
    <link
      data-trunk
      rel="rust"
      href="web/Cargo.toml"
      data-bin="app"
      data-cargo-profile="wasm-release"
      data-wasm-opt="z"
      data-integrity="none"
    />
  </head>
  <body></body>
</html>
"#;

    fn outputs() -> Outputs {
        Outputs {
            css: vec![("style-1a.css".into(), Some("sha384-XYZ".into()))],
            js: "app-2b.js".into(),
            js_integrity: None,
            wasm: "app-2b_bg.wasm".into(),
            wasm_integrity: None,
        }
    }

    #[test]
    fn plan_reads_the_links_and_skips_comments() {
        let p = plan(PAGE).unwrap();
        assert_eq!(p.css, vec![CssLink { href: "web/style.css".into(), integrity: true }]);
        assert_eq!(p.copy_files, vec!["data/digits.csv".to_string()]);
        assert_eq!(
            p.rust,
            RustLink {
                manifest: "web/Cargo.toml".into(),
                bin: "app".into(),
                cargo_profile: Some("wasm-release".into()),
                wasm_opt: Some("z".into()),
                integrity: false,
            }
        );
        assert_eq!(p.links.len(), 3);
        assert!(PAGE[p.links[2].start..p.links[2].end].starts_with("<link\n      data-trunk"));
        assert!(PAGE[p.links[2].start..p.links[2].end].ends_with("/>"));
    }

    #[test]
    fn render_matches_trunks_page() {
        let html = render(PAGE, &plan(PAGE).unwrap(), &outputs()).unwrap();
        let expected = r#"<!DOCTYPE html>
<html lang="en">
  <head>
    <title>t</title>
    <!-- a comment about <link rel="preload" as="fetch"> and <link data-trunk rel="sass"> -->
    <link rel="stylesheet" href="/style-1a.css" integrity="sha384-XYZ"/>
    
    <script type="module" src="/boot.js?wasm=/app-2b_bg.wasm&amp;js=/app-2b.js"></script>
  <link rel="modulepreload" href="/app-2b.js" crossorigin="anonymous"><link rel="preload" href="/app-2b_bg.wasm" crossorigin="anonymous" as="fetch" type="application/wasm"></head>
  <body></body>
</html>
"#;
        assert_eq!(html, expected);
    }

    #[test]
    fn integrity_on_the_preloads_when_asked() {
        let mut out = outputs();
        out.js_integrity = Some("sha384-J".into());
        out.wasm_integrity = Some("sha384-W".into());
        assert_eq!(
            preload_links(&out),
            r#"<link rel="modulepreload" href="/app-2b.js" crossorigin="anonymous" integrity="sha384-J"><link rel="preload" href="/app-2b_bg.wasm" crossorigin="anonymous" integrity="sha384-W" as="fetch" type="application/wasm">"#
        );
    }

    #[test]
    fn unknown_links_and_attributes_are_errors() {
        let with = |tag: &str| PAGE.replace("<title>t</title>", tag);
        let e = plan(&with(r#"<link data-trunk rel="sass" href="a.scss"/>"#)).unwrap_err();
        assert!(e.to_string().contains("rel=\"sass\""), "{e}");
        let e =
            plan(&with(r#"<link data-trunk rel="css" href="a.css" data-no-minify/>"#)).unwrap_err();
        assert!(e.to_string().contains("data-no-minify"), "{e}");
        let e = plan(&with(r#"<script data-trunk src="a.js"></script>"#)).unwrap_err();
        assert!(e.to_string().contains("<script data-trunk>"), "{e}");
        let e = plan(&PAGE.replace("rel=\"rust\"", "rel=\"css\"")).unwrap_err();
        assert!(e.to_string().contains("data-bin"), "{e}");
    }

    #[test]
    fn the_repositorys_page_is_understood() {
        let src = include_str!("../../../index.html");
        let p = plan(src).unwrap();
        assert_eq!(p.css.len(), 1);
        assert_eq!(p.copy_files, ["web/boot.js", "data/digits.csv", "data/cps1988.csv"]);
        assert_eq!(p.rust.bin, "capelab-web");
        assert_eq!(p.rust.cargo_profile.as_deref(), Some("wasm-release"));
        assert_eq!(p.rust.wasm_opt.as_deref(), Some("z"));
        let html = render(src, &p, &outputs()).unwrap();
        assert!(trunk_links(&html).unwrap().is_empty(), "a data-trunk link was left:\n{html}");
        assert_eq!(html.matches("rel=\"modulepreload\"").count(), 1);
        assert!(html.contains("<link rel=\"preload\" href=\"/app-2b_bg.wasm\""));
        assert!(html.find("modulepreload").unwrap() < html.find("</head>").unwrap());
        // No inline script: the relay's Content-Security-Policy allows none.
        assert!(!html.contains("<script type=\"module\">"), "{html}");
        assert!(html.contains(r#"<script type="module" src="/boot.js?wasm=/app-2b_bg.wasm&amp;js=/app-2b.js">"#));
    }

    #[test]
    fn tags_parse_with_every_quoting() {
        let (name, attrs, end) = parse_tag("<LINK a b='x y' c=\"z\" d=e/>rest", 0).unwrap();
        assert_eq!(name, "link");
        assert_eq!(&"<LINK a b='x y' c=\"z\" d=e/>rest"[end..], "rest");
        let pairs: Vec<_> = attrs.iter().map(|a| (a.name.as_str(), a.value.as_deref())).collect();
        assert_eq!(pairs, [("a", None), ("b", Some("x y")), ("c", Some("z")), ("d", Some("e/"))]);
    }
}
