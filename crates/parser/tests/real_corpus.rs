//! Parser fidelity on real dumps from public sources (`../shared/corpus/real/`, beside the
//! checkout; not part of the project). Ignored by default: `.ci/run` runs it with `--ignored`,
//! and it fails if the folder is missing.
//!
//! Every file must parse without panicking and round-trip; well-formed ones with no error, the
//! known-broken ones with exactly their specific diagnostics; and every rule line of the text
//! must be read (counted independently, by line prefix).

use rulelint_parser::{parse, print};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn real_dir() -> PathBuf {
    std::env::var_os("RULELINT_REAL_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/real"),
        PathBuf::from,
    )
}

/// Diagnostics expected on the known-broken files (see the folder's MANIFEST.tsv): code -> count.
fn expected(file: &str) -> BTreeMap<&'static str, usize> {
    let pairs: &[(&str, usize)] = match file {
        // Shell prompt on line 1; and line 86 really has `-j ACC<spaces>EPT` in the source. The
        // same paste corruption splits the value of a single-valued option on ten more lines
        // (`--to-destination 192.16<spaces>8.1.1:22`, `--limit 25/s<spaces>ec`, `--ctstate
        // DN<spaces>AT`): RL116 since issue 15 (iptables-restore refuses each line).
        "netnetwork-openwrt-crlf-prompt-2014.txt" => &[("RL101", 1), ("RL116", 11)],
        // Prompt before each of two dumps back to back: nat and filter repeated.
        "netnetwork-pastebin-weave-docker-double-dump-2015.txt" => &[("RL101", 2), ("RL106", 2)],
        // Prose before the dump, `ip addr` output after it.
        "netnetwork-qubes-sys-firewall-with-prose-2016.txt" => &[("RL101", 2)],
        // Twenty rules hand-wrapped with a backslash: one finding that counts them.
        "praqma-flannel-node1-hand-wrapped-2016.txt" => &[("RL107", 1)],
        _ => &[],
    };
    pairs.iter().copied().collect()
}

#[test]
#[ignore = "needs ../shared/corpus/real beside the checkout; run by .ci/run"]
fn every_real_dump_parses_as_expected() {
    let dir = real_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "expected the real corpus in {}",
        dir.display()
    );
    let mut failures = Vec::new();
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(path).expect("readable");
        let text = String::from_utf8_lossy(&bytes);
        let parsed = parse(&text);
        let mut found: BTreeMap<&'static str, usize> = BTreeMap::new();
        for d in &parsed.diagnostics {
            *found.entry(d.code).or_default() += 1;
        }
        if found != expected(&file) {
            failures.push(format!(
                "{file}: diagnostics {found:?}, expected {:?}",
                expected(&file)
            ));
        }
        let rule_lines = text
            .lines()
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("-A ") || (l.starts_with('[') && l.contains("] -A "))
            })
            .count();
        if parsed.ruleset.rules.len() != rule_lines {
            failures.push(format!(
                "{file}: read {} rules, the text has {rule_lines} rule lines",
                parsed.ruleset.rules.len()
            ));
        }
        let printed = print(&parsed.ruleset);
        let reparsed = parse(&printed);
        if !parsed.ruleset.same_content(&reparsed.ruleset) {
            failures.push(format!("{file}: parse(print(r)) != r"));
        }
        println!(
            "{file}: {} rules, {} diagnostics",
            parsed.ruleset.rules.len(),
            parsed.diagnostics.len()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
