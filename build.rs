//! Embeds the web page (`crates/wasm/web/` and its built `pkg/`) into the `rulelint` binary for
//! `rulelint serve`. A machine that never built the wasm still builds the CLI: the page is then
//! embedded without `pkg/`, and `serve` says how to build it. With the `page` feature (what
//! `cargo install --path . --features page` asks for) and no `pkg/` built by
//! scripts/build-web.sh, this script builds the module itself, as build-web.sh does, into
//! OUT_DIR.

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
    collect(&web, "", &mut files);
    let built_by_script = web.join("pkg/rulelint_wasm_bytes.js").is_file();
    if built_by_script || !cfg!(feature = "page") {
        collect(&web.join("pkg"), "pkg", &mut files);
    } else {
        #[cfg(feature = "page")]
        collect(&page::build(&root), "pkg", &mut files);
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

/// The page's wasm module built here, for the `page` feature: the steps of scripts/build-web.sh
/// (cargo build for wasm32 with simd128, wasm-bindgen --target web, the bytes as a JS module)
/// with wasm-bindgen's library in place of its CLI.
#[cfg(feature = "page")]
mod page {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::{env, fs};

    /// Builds the module and returns the folder holding the page's `pkg/` files.
    pub fn build(root: &Path) -> PathBuf {
        println!("cargo:rerun-if-changed=crates/wasm/src");
        println!("cargo:rerun-if-changed=crates/lint/src");
        println!("cargo:rerun-if-changed=crates/parser/src");
        println!("cargo:rerun-if-changed=crates/nft/src");
        let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
        // A target folder of its own: the outer cargo holds the lock on the usual one.
        let target = out.join("wasm-target");
        let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(root)
            .args([
                "build",
                "-p",
                "rulelint-wasm",
                "--target",
                "wasm32-unknown-unknown",
            ])
            .args(["--profile", "wasm-release"])
            .arg("--target-dir")
            .arg(&target)
            // The outer build's flags are for the host, not for wasm32.
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_TARGET")
            .env(
                "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS",
                "-C target-feature=+simd128",
            )
            .status();
        if !status.is_ok_and(|s| s.success()) {
            panic!(
                "the `page` feature builds the web page for wasm32, and that build failed; \
                 if the target is missing: `rustup target add wasm32-unknown-unknown`"
            );
        }
        let wasm = target.join("wasm32-unknown-unknown/wasm-release/rulelint_wasm.wasm");
        let pkg = out.join("pkg");
        let _ = fs::remove_dir_all(&pkg);
        fs::create_dir_all(&pkg).expect("OUT_DIR is writable");
        let mut bindgen = wasm_bindgen_cli_support::Bindgen::new();
        bindgen.input_path(&wasm).typescript(false);
        if let Err(e) = bindgen.web(true).and_then(|b| b.generate(&pkg)) {
            panic!("wasm-bindgen on {}: {e}", wasm.display());
        }
        let module = fs::read(pkg.join("rulelint_wasm_bg.wasm")).expect("wasm-bindgen wrote it");
        // The page's Content-Security-Policy forbids fetching the .wasm file; the worker imports
        // its bytes as a script (as build-web.sh writes it).
        let js = format!(
            "// Generated by build.rs: the bytes of rulelint_wasm_bg.wasm, base64.\nexport default \"{}\";\n",
            base64(&module)
        );
        fs::write(pkg.join("rulelint_wasm_bytes.js"), js).expect("OUT_DIR is writable");
        pkg
    }

    /// Standard base64 with padding (RFC 4648), as `base64 -w0` prints it.
    fn base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}
