//! Embeds the web page (`crates/wasm/web/` and its built `pkg/`) into the `rulelint` binary for
//! `rulelint serve`. A machine that never built the wasm still builds the CLI: the page is then
//! embedded without `pkg/`, and `serve` says how to build it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

/// What the page is made of; anything else in the folder (editor files, notes) is not served.
const EXTENSIONS: &[&str] = &["html", "js", "mjs", "css", "wasm", "svg", "png", "json"];

fn main() {
    // Cargo scans a folder recursively, so building pkg/ later reruns this script.
    println!("cargo:rerun-if-changed=crates/wasm/web");
    println!("cargo:rerun-if-changed=build.rs");
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let web = root.join("crates/wasm/web");
    let mut files = Vec::new();
    for dir in ["", "pkg"] {
        collect(&web.join(dir), dir, &mut files);
    }
    files.sort();
    let built = ["pkg/rulelint_wasm.js", "pkg/rulelint_wasm_bytes.js"]
        .iter()
        .all(|f| files.iter().any(|(name, _)| name == f));
    let mut out = String::from("/// The page's files: (path under the page root, bytes).\n");
    out.push_str("pub(crate) static ASSETS: &[(&str, &[u8])] = &[\n");
    for (name, path) in &files {
        let _ = writeln!(out, "    ({name:?}, include_bytes!({:?})),", path.display());
    }
    out.push_str("];\n/// Whether `pkg/` (the wasm module) was built when the binary was.\n");
    let _ = writeln!(out, "pub(crate) const WASM_BUILT: bool = {built};");
    let dest = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo")).join("web_assets.rs");
    fs::write(dest, out).expect("OUT_DIR is writable");
}

/// Adds the page files directly in `dir` (not below), named `prefix/file`.
fn collect(dir: &Path, prefix: &str, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let served = path.is_file()
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTENSIONS.contains(&e));
        if served {
            let name = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            };
            files.push((name, path));
        }
    }
}
