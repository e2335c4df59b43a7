//! Truncated pastes: a dump cut off anywhere (at the end of a line or in the middle of one) gets
//! its truncation finding (`RL103`), and no error or warning that the whole dump does not have.
//! What the missing part would decide (a hook jump, an endpoint, the rest of a probability
//! ladder, a word cut in half) is not a finding of its own.
//!
//! Every cut of every healthy Kubernetes node (`corpus/kube/healthy/`), of every well-formed
//! syntax dump (`corpus/syntax/ok/`) and of every lint corpus dump that must not trigger its lint
//! (`corpus/lints/*/pass-*.txt`) is checked, when it has a `*table` header.

use rulelint_lint::{Config, Severity, check};
use rulelint_parser::{LineIndex, parse};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn dumps() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for folder in ["kube/healthy", "syntax/ok"] {
        for e in std::fs::read_dir(corpus().join(folder)).expect("corpus folder") {
            files.push(e.expect("entry").path());
        }
    }
    for e in std::fs::read_dir(corpus().join("lints")).expect("corpus/lints") {
        let folder = e.expect("entry").path();
        if !folder.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&folder).expect("lint folder") {
            let f = f.expect("entry").path();
            if f.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("pass-"))
            {
                files.push(f);
            }
        }
    }
    files.retain(|f| f.extension().is_some_and(|x| x == "txt"));
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("dump");
            (f, text)
        })
        .collect()
}

/// The errors and warnings of a text, as (code, line).
fn findings(text: &str) -> BTreeSet<(&'static str, u32)> {
    let parsed = parse(text);
    let lines = LineIndex::new(text);
    check(&parsed, &Config::default())
        .into_iter()
        .filter(|d| d.severity >= Severity::Warning)
        .map(|d| (d.code, lines.line(d.span.start)))
        .collect()
}

#[test]
fn a_cut_paste_reports_the_cut_and_nothing_the_whole_dump_does_not() {
    let mut failures = Vec::new();
    let mut cuts = 0;
    for (path, text) in dumps() {
        // A headerless fragment (grep output) has no COMMIT to miss: a cut there cannot be told
        // from a fragment that ends, so its last line is read as written.
        if !text.lines().any(|l| l.starts_with('*')) {
            continue;
        }
        let whole = findings(&text);
        let mut ends: Vec<usize> = Vec::new();
        for (i, _) in text.match_indices('\n') {
            ends.push(i + 1);
            // The middle of the line that starts here.
            let rest = &text[i + 1..];
            let len = rest.find('\n').unwrap_or(rest.len());
            let mut mid = i + 1 + len * 2 / 3;
            while !text.is_char_boundary(mid) {
                mid -= 1;
            }
            if len > 8 {
                ends.push(mid);
            }
        }
        for end in ends {
            if end >= text.len() {
                continue;
            }
            cuts += 1;
            let part = &text[..end];
            for (code, line) in findings(part) {
                if matches!(code, "RL103" | "RL114") || whole.contains(&(code, line)) {
                    continue;
                }
                failures.push(format!(
                    "{} cut at byte {end}: {code} on line {line}",
                    path.display()
                ));
            }
        }
    }
    assert!(cuts > 1000, "only {cuts} cuts");
    assert!(
        failures.is_empty(),
        "{} findings only a cut paste has, e.g.:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}
