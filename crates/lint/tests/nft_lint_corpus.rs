//! Snapshot tests over the nftables cases of `corpus/lints/<CODE>-<name>/` (`*.nft` files, read
//! by sections as `rulelint check` reads a file): every `fail-*` case triggers the folder's
//! code, no `pass-*` case does, no case has any other error or warning, and the human and JSON
//! output of every case is pinned in `corpus/lints/snapshots/`.
//!
//! Each case's `*.json` twin is the same ruleset as `nft -j list ruleset` prints it (loaded
//! into the real `nft` in a private network namespace, or edited from such output where `nft`
//! refuses the case): the same rules apply, and it must give the same findings (code, severity
//! and count) as its `.nft` twin.

use rulelint_lint::source::check_source;
use rulelint_lint::{Config, Severity, find_code};
use std::path::{Path, PathBuf};

mod common;

fn corpus_dir() -> PathBuf {
    common::corpus_dir().join("lints")
}

/// (folder, file stem, text) of every `.nft` case, sorted.
fn cases() -> Vec<(String, String, String)> {
    cases_with("nft")
}

/// (folder, file stem, text) of every case with extension `ext`, sorted.
fn cases_with(ext: &str) -> Vec<(String, String, String)> {
    common::lint_cases(ext)
}

fn rendered(path: &str, text: &str) -> String {
    common::rendered_source(path, text)
}

#[test]
fn fail_cases_trigger_and_pass_cases_do_not() {
    let cases = cases();
    assert!(cases.len() >= 14, "only {} nft lint cases", cases.len());
    let json = cases_with("json");
    assert!(json.len() >= 14, "only {} nft JSON lint cases", json.len());
    let mut failures = Vec::new();
    for (folder, stem, text) in cases.iter().chain(&json) {
        let (code, name) = folder.split_once('-').expect("CODE-name");
        let entry = find_code(code).unwrap_or_else(|| panic!("{folder}: unknown code"));
        assert_eq!(entry.info.name, name, "{folder}");
        assert!(
            text.starts_with("# case: "),
            "{folder}/{stem}: first line must be `# case: ...`"
        );
        let found = check_source(text, &Config::default()).diagnostics;
        let hits = found.iter().filter(|d| d.code == code).count();
        let others: Vec<String> = found
            .iter()
            .filter(|d| d.code != code && d.severity >= Severity::Warning)
            .filter(|d| !(stem.starts_with("pass-cut") && d.code == "RL153"))
            .map(|d| format!("{} {}", d.code, d.message))
            .collect();
        if stem.starts_with("fail-") && hits == 0 {
            failures.push(format!("{folder}/{stem}: expected {code}, got none"));
        } else if stem.starts_with("pass-") && hits > 0 {
            failures.push(format!("{folder}/{stem}: expected no {code}, got {hits}"));
        } else if !stem.starts_with("fail-") && !stem.starts_with("pass-") {
            failures.push(format!(
                "{folder}/{stem}: name must start with fail- or pass-"
            ));
        }
        if !others.is_empty() {
            failures.push(format!("{folder}/{stem}: other findings {others:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// (code, severity) of every finding, sorted: what two forms of one ruleset must share (spans,
/// lines and so messages differ).
fn findings(text: &str) -> Vec<(&'static str, Severity)> {
    let mut out: Vec<_> = check_source(text, &Config::default())
        .diagnostics
        .iter()
        .map(|d| (d.code, d.severity))
        .collect();
    out.sort();
    out
}

#[test]
fn json_twins_give_the_findings_of_their_text_case() {
    let text_cases = cases();
    let mut failures = Vec::new();
    for (folder, stem, json) in cases_with("json") {
        let Some((_, _, text)) = text_cases
            .iter()
            .find(|(f, s, _)| *f == folder && *s == stem)
        else {
            failures.push(format!("{folder}/{stem}.json has no .nft twin"));
            continue;
        };
        assert!(
            json.contains("{\"nftables\": ["),
            "{folder}/{stem}.json must hold `nft -j` output"
        );
        let (from_json, from_text) = (findings(&json), findings(text));
        if from_json != from_text {
            failures.push(format!(
                "{folder}/{stem}: JSON {from_json:?}, text {from_text:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn snapshots_of_human_and_json_output() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(corpus_dir().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for (folder, stem, text) in cases() {
            let path = format!("{folder}/{stem}.nft");
            insta::assert_snapshot!(format!("{folder}-{stem}"), rendered(&path, &text));
        }
    });
}

/// What `check` says about kube-proxy's expected rulesets as `nft list ruleset` prints them
/// (`../shared/corpus/nft/`, beside the checkout; skipped when absent). Judged by reading them.
#[test]
fn shared_nft_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/nft");
    if !dir.is_dir() {
        eprintln!("skipped: {} not found", dir.display());
        return;
    }
    let expected: &[(&str, &[(&str, usize)])] = &[
        // TestOverallNFTablesRules as listed, with and without handles: a healthy node.
        ("01-overall-rules.list-ruleset.txt", &[]),
        ("01-overall-rules.list-ruleset-a.txt", &[]),
        // The same ruleset as JSON and in the transaction form: the same findings (none).
        ("01-overall-rules.list-ruleset.json", &[]),
        ("01-overall-rules.transaction.nft", &[]),
        (
            "02-stale-chains-after-service-delete.transaction.nft",
            &[("RL457", 2)],
        ),
        // svc2's flushed service and endpoint chains, right after its deletion: info only.
        (
            "02-stale-chains-after-service-delete.list-ruleset.txt",
            &[("RL457", 2)],
        ),
        // iptables-nft's tables seen through nft: not kube-proxy's nftables mode, nothing to say.
        (
            "03-iptables-mode-rules-seen-through-nft-list-ruleset.txt",
            &[],
        ),
        // Two headerless fragments, the first cut after its first element (issue #131765).
        ("04-issue-snippets.txt", &[("RL153", 1), ("RL155", 1)]),
    ];
    for (file, codes) in expected {
        let text = std::fs::read_to_string(dir.join(file)).expect("shared corpus file");
        let found = check_source(&text, &Config::default()).diagnostics;
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for d in &found {
            match counts.iter_mut().find(|(c, _)| *c == d.code) {
                Some((_, n)) => *n += 1,
                None => counts.push((d.code, 1)),
            }
        }
        counts.sort();
        assert_eq!(&counts[..], *codes, "{file}: {found:#?}");
        if file.starts_with("02-stale") && file.ends_with(".txt") {
            assert!(found.iter().all(|d| d.severity == Severity::Info), "{file}");
        }
    }
}

/// Every case cut at every line end and at every 5th byte: no panic, spans inside the text on
/// character boundaries, and no nftables-mode error or warning that the whole case lacks (a
/// cut paste reports its cut, `RL153`, and nothing the missing part would decide).
#[test]
fn cut_cases_report_no_new_lint_findings() {
    let config = Config::default();
    for (folder, stem, text) in cases().into_iter().chain(cases_with("json")) {
        // A transaction cut at a command's end cannot be told from a whole one (each line is a
        // command), so lints that conclude from absence still read it: not a cut paste here.
        if rulelint_lint::source::sections(&text)
            .iter()
            .any(|s| s.kind == rulelint_lint::source::SectionKind::NftTransaction)
        {
            continue;
        }
        let whole: Vec<&str> = check_source(&text, &config)
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect();
        let cuts = text
            .char_indices()
            .map(|(i, _)| i)
            .filter(|&i| i % 5 == 0 || text.as_bytes()[i] == b'\n');
        for cut in cuts {
            let part = &text[..cut];
            for d in check_source(part, &config).diagnostics {
                let (start, end) = (d.span.start as usize, d.span.end as usize);
                assert!(
                    start <= end
                        && end <= part.len()
                        && part.is_char_boundary(start)
                        && part.is_char_boundary(end),
                    "{folder}/{stem} cut at {cut}: span {start}..{end} of {}",
                    d.code
                );
                let nft_lint = d.code.starts_with("RL45") || d.code.starts_with("RL46");
                if nft_lint && d.severity >= Severity::Warning {
                    assert!(
                        whole.contains(&d.code),
                        "{folder}/{stem} cut at {cut}: {} {} not in the whole case",
                        d.code,
                        d.message
                    );
                }
            }
        }
    }
}

mod mixed_input {
    use super::*;
    use proptest::prelude::*;
    use rulelint_lint::source::sections;

    /// Lines of every form, in any order: what pastes of several commands look like.
    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "*filter\n",
            ":INPUT ACCEPT [0:0]\n",
            "-A INPUT -j KUBE-FIREWALL\n",
            "COMMIT\n",
            "# Generated by iptables-save v1.8.9\n",
            "table ip kube-proxy {\n",
            "table inet f {\n",
            "\tchain services {\n",
            "\t\tip daddr . meta l4proto . th dport vmap @service-ips\n",
            "\t\tnumgen random mod 2 vmap { 0 : goto a, 1 : goto b }\n",
            "\tmap service-ips {\n",
            "\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n",
            "\t\telements = { 10.0.0.1 . tcp . 80 : goto a }\n",
            "\t}\n",
            "}\n",
            "{\n",
            "{\"nftables\": [{\"table\": {\"name\": \"}\"}}]}\n",
            "add table ip kube-proxy { comment \"x\" ; }\n",
            "add rule ip kube-proxy services ip daddr 10.0.0.1 drop\n",
            "root@node:~# nft list ruleset\n",
            "\"\n",
            "é\n",
            "\n",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn any_mix_is_checked_without_panic(pieces in prop::collection::vec(piece(), 0..40), cut in 0usize..2000) {
            let text: String = pieces.concat();
            let mut end = cut.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let text = &text[..end];
            let s = sections(text);
            prop_assert_eq!(s.first().map(|s| s.range.start), Some(0));
            prop_assert_eq!(s.last().map(|s| s.range.end), Some(text.len()));
            for pair in s.windows(2) {
                prop_assert_eq!(pair[0].range.end, pair[1].range.start);
            }
            for d in check_source(text, &Config::default()).diagnostics {
                prop_assert!(d.span.end as usize <= text.len());
                prop_assert!(text.is_char_boundary(d.span.start as usize));
            }
        }
    }
}
