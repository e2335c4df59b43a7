//! What the lint corpus harnesses share (`lint_corpus.rs`, `nft_lint_corpus.rs`,
//! `ipvs_lint_corpus.rs`): the cases of `corpus/lints/<CODE>-<name>/` by extension, and one
//! file's human and JSON output as `rulelint check` writes it.
#![allow(dead_code)] // each harness uses its part

use rulelint_lint::Config;
use rulelint_lint::report::{CheckDocument, CheckedFile};
use rulelint_lint::source::check_source;
use std::path::{Path, PathBuf};

/// The repository's `corpus/`.
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

/// (folder, file stem, text) of every case with extension `ext` in the `RL*` folders of
/// `corpus/lints/`, sorted by folder then file.
pub fn lint_cases(ext: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(corpus_dir().join("lints"))
        .expect("corpus/lints")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("RL"))
        })
        .collect();
    folders.sort();
    for folder in folders {
        let folder_name = folder.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
            .expect("lint folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        files.sort();
        for f in files {
            let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&f).expect("case");
            out.push((folder_name.clone(), stem, text));
        }
    }
    out
}

/// The human output (no colour) of every finding `check_source` gives, then the JSON document.
pub fn rendered_source(path: &str, text: &str) -> String {
    let checked = check_source(text, &Config::default());
    let mut out = String::new();
    for d in &checked.diagnostics {
        out.push_str(&d.render(path, text, false));
        out.push('\n');
    }
    let file = CheckedFile {
        path,
        ruleset: &checked.iptables.ruleset,
        diagnostics: &checked.diagnostics,
    };
    out.push_str("--- json ---\n");
    out.push_str(&serde_json::to_string_pretty(&CheckDocument::new(&[file])).expect("JSON"));
    out.push('\n');
    out
}
