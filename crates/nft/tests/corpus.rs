//! Snapshot tests over `corpus/nft/`: `ok/` rulesets parse without any diagnostic, round-trip
//! through the printer and match their summary snapshot; `err/` files report exactly the codes
//! named on their `# expect:` first line, and the rest of the text is still read.

use rulelint_nft::{ChainGraph, Form, Strings, parse, parse_any, print, summary};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn corpus(sub: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../corpus/nft")
        .join(sub);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        // `.json` and `.nft` (transaction) cases are read by `parse_any` like `.txt` listings.
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "txt" || x == "json" || x == "nft")
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no files in {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("readable"))
        })
        .collect()
}

fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/nft/snapshots"),
    );
    settings.set_prepend_module_to_snapshot(false);
    settings
}

/// parse -> print -> parse keeps the content, and printing is stable.
pub fn assert_round_trip(name: &str, text: &str) {
    let parsed = parse(text);
    let printed = print(&parsed.ruleset);
    let again = parse(&printed);
    assert!(
        parsed.ruleset.same_content(&again.ruleset),
        "{name}: parse(print(r)) != r\n--- printed ---\n{printed}"
    );
    assert_eq!(
        print(&again.ruleset),
        printed,
        "{name}: printing is not stable"
    );
}

#[test]
fn ok_rulesets_parse_cleanly_round_trip_and_match_snapshots() {
    for (name, text) in corpus("ok") {
        let parsed = parse(&text);
        assert!(
            parsed.diagnostics.is_empty(),
            "{name}: unexpected diagnostics {:#?}",
            parsed.diagnostics
        );
        assert!(!parsed.ruleset.rules.is_empty(), "{name}: no rules read");
        assert_round_trip(&name, &text);
        let again = parse(&text);
        let printed = print(&again.ruleset);
        assert!(
            parse(&printed).diagnostics.is_empty(),
            "{name}: printed text has diagnostics"
        );
        let graph = ChainGraph::build(&parsed.ruleset);
        snapshot_settings().bind(|| {
            insta::assert_json_snapshot!(
                format!("ok-{name}"),
                summary::summarize(&parsed, &graph, &text)
            );
        });
    }
}

fn expected_codes(name: &str, text: &str) -> BTreeSet<String> {
    let first = text.lines().next().unwrap_or("");
    let codes = first
        .strip_prefix("# expect:")
        .unwrap_or_else(|| panic!("{name}: first line must be `# expect: RLxxx`"));
    codes.split_whitespace().map(str::to_string).collect()
}

#[test]
fn err_files_report_their_codes_and_the_rest_is_read() {
    let mut seen = BTreeSet::new();
    for (name, text) in corpus("err") {
        let strings = Strings::new();
        let (form, parsed) = parse_any(&text, &strings);
        let found: BTreeSet<String> = parsed
            .diagnostics
            .iter()
            .map(|d| d.code.to_string())
            .collect();
        assert_eq!(
            found,
            expected_codes(&name, &text),
            "{name}: {:#?}",
            parsed.diagnostics
        );
        assert!(!parsed.ruleset.chains.is_empty(), "{name}: nothing read");
        for d in &parsed.diagnostics {
            assert!(
                d.span.end as usize <= text.len(),
                "{name}: span out of range"
            );
            assert!(
                !d.label.is_empty() && d.help.is_some(),
                "{name}: {} lacks label/help",
                d.code
            );
            assert!(
                d.message.chars().next().is_some_and(|c| !c.is_uppercase())
                    && !d.message.ends_with('.'),
                "{name}: message style: {}",
                d.message
            );
        }
        if form == Form::Listing {
            assert_round_trip(&name, &text);
        } else {
            let printed = print(&parsed.ruleset);
            assert!(
                parsed.ruleset.same_content(&parse(&printed).ruleset),
                "{name}: parse(print(r)) != r\n{printed}"
            );
        }
        seen.extend(found);
        let graph = ChainGraph::build(&parsed.ruleset);
        snapshot_settings().bind(|| {
            insta::assert_json_snapshot!(
                format!("err-{name}"),
                summary::summarize(&parsed, &graph, &text)
            );
        });
    }
    // Every code the parser can raise from text has an err case (RL161 needs 4 GiB of input).
    for info in rulelint_nft::codes::ALL {
        if info.code != "RL161" {
            assert!(seen.contains(info.code), "no err case for {}", info.code);
        }
    }
}
