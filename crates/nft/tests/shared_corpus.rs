//! The nft samples of `../shared/corpus/nft/` (beside the checkout; not part of the project).
//! Ignored by default: run with `--ignored`; fails if the folder is missing.
//!
//! Every `nft list ruleset` text there is read without an error and round-trips; the issue
//! snippets (partial pastes with prose, not vendored: see `corpus/nft/README.md`) report only
//! what a partial paste should.

use rulelint_nft::{ChainGraph, Severity, parse, print};
use std::path::{Path, PathBuf};

fn shared_dir() -> PathBuf {
    std::env::var_os("RULELINT_NFT_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/nft"),
        PathBuf::from,
    )
}

#[test]
#[ignore = "needs ../shared/corpus/nft beside the checkout"]
fn shared_nft_listings_parse_without_errors() {
    let dir = shared_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected the nft samples in {}",
        dir.display()
    );
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).expect("readable");
        let parsed = parse(&text);
        let codes: Vec<&str> = parsed.diagnostics.iter().map(|d| d.code).collect();
        if name.starts_with("04-issue-snippets") {
            // A map cut after its first element, then a chain without its table.
            assert_eq!(codes, ["RL155", "RL153"], "{name}");
            assert_eq!(parsed.ruleset.sets[0].elements.len(), 1, "{name}");
            assert_eq!(parsed.ruleset.chains[0].rules.len(), 2, "{name}");
        } else {
            assert!(codes.is_empty(), "{name}: {:#?}", parsed.diagnostics);
            assert!(parsed.ruleset.tables.iter().all(|t| t.closed), "{name}");
        }
        assert!(
            parsed
                .diagnostics
                .iter()
                .all(|d| d.severity < Severity::Error || d.code == "RL153"),
            "{name}"
        );
        let printed = print(&parsed.ruleset);
        let again = parse(&printed);
        assert!(
            parsed.ruleset.same_content(&again.ruleset),
            "{name}: round trip"
        );
        let graph = ChainGraph::build(&parsed.ruleset);
        if name.starts_with("01-") {
            assert_eq!(graph.roots(&parsed.ruleset).len(), 8, "{name}");
            assert!(graph.unresolved_jumps().is_empty(), "{name}");
        }
    }
}

#[test]
#[ignore = "needs ../shared/corpus/nft beside the checkout"]
fn shared_json_and_transaction_forms_read_like_their_listings() {
    let dir = shared_dir();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name
            .strip_suffix(".list-ruleset.json")
            .or_else(|| name.strip_suffix(".transaction.nft"))
        else {
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("readable");
        let strings = rulelint_nft::Strings::new();
        let (_, parsed) = rulelint_nft::parse_any(&text, &strings);
        assert!(
            parsed.diagnostics.is_empty(),
            "{name}: {:#?}",
            parsed.diagnostics
        );
        let listing = std::fs::read_to_string(dir.join(format!("{stem}.list-ruleset.txt")))
            .expect("the listing beside it");
        let listed = parse(&listing);
        assert_eq!(
            rulelint_nft::canon::content(&parsed.ruleset),
            rulelint_nft::canon::content(&listed.ruleset),
            "{name}"
        );
        checked += 1;
    }
    assert!(
        checked >= 3,
        "expected JSON and transaction files in {}",
        dir.display()
    );
}
