//! Snapshot tests over `corpus/lints/<CODE>-<name>/`: every `fail-*` dump triggers the folder's
//! code, no `pass-*` dump does, and the human and JSON output of every dump is pinned in
//! `corpus/lints/snapshots/`. Generated kube-proxy nodes (dumpgen) of every layout must produce
//! no error or warning, apart from `ruleset-scale` on the large ones.

use rulelint_dumpgen::{Layout, Shape, generate};
use rulelint_lint::report::{CheckDocument, CheckedFile};
use rulelint_lint::{Config, Severity, check, find_code};
use rulelint_parser::parse;
use std::path::PathBuf;

mod common;

fn corpus_dir() -> PathBuf {
    common::corpus_dir().join("lints")
}

/// (folder, file stem, text) of every dump, sorted.
fn dumps() -> Vec<(String, String, String)> {
    common::lint_cases("txt")
}

fn folder_code(folder: &str) -> &str {
    let (code, name) = folder.split_once('-').expect("folder is CODE-name");
    let entry = find_code(code).unwrap_or_else(|| panic!("{folder}: unknown code"));
    assert_eq!(
        entry.info.name, name,
        "{folder}: code and name do not match"
    );
    code
}

/// The human output (no colour) followed by the JSON document of one file.
fn rendered(path: &str, text: &str) -> String {
    let parsed = parse(text);
    let findings = check(&parsed, &Config::default());
    let mut out = String::new();
    for d in &findings {
        out.push_str(&d.render(path, text, false));
        out.push('\n');
    }
    let file = CheckedFile {
        path,
        ruleset: &parsed.ruleset,
        diagnostics: &findings,
    };
    out.push_str("--- json ---\n");
    out.push_str(&serde_json::to_string_pretty(&CheckDocument::new(&[file])).expect("JSON"));
    out.push('\n');
    out
}

#[test]
fn fail_dumps_trigger_and_pass_dumps_do_not() {
    let dumps = dumps();
    assert!(dumps.len() >= 20, "only {} lint corpus dumps", dumps.len());
    let mut failures = Vec::new();
    for (folder, stem, text) in &dumps {
        let code = folder_code(folder);
        assert!(
            text.starts_with("# case: "),
            "{folder}/{stem}: first line must be `# case: ...`"
        );
        let findings = check(&parse(text), &Config::default());
        let hits = findings.iter().filter(|d| d.code == code).count();
        if stem.starts_with("fail-") && hits == 0 {
            failures.push(format!("{folder}/{stem}: expected {code}, got none"));
        } else if stem.starts_with("pass-") && hits > 0 {
            failures.push(format!("{folder}/{stem}: expected no {code}, got {hits}"));
        } else if !stem.starts_with("fail-") && !stem.starts_with("pass-") {
            failures.push(format!(
                "{folder}/{stem}: name must start with fail- or pass-"
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
        for (folder, stem, text) in dumps() {
            let path = format!("{folder}/{stem}.txt");
            insta::assert_snapshot!(format!("{folder}-{stem}"), rendered(&path, &text));
        }
    });
}

fn errors_and_warnings(text: &str) -> Vec<String> {
    check(&parse(text), &Config::default())
        .into_iter()
        .filter(|d| d.severity >= Severity::Warning && d.code != "RL503")
        .map(|d| format!("{} {}", d.code, d.message))
        .collect()
}

#[test]
fn generated_kube_proxy_nodes_are_clean() {
    for layout in [Layout::Legacy, Layout::Modern] {
        for ipv6 in [false, true] {
            for counters in [false, true] {
                let shape = Shape {
                    layout,
                    ipv6,
                    counters,
                    ..Shape::default()
                };
                let found = errors_and_warnings(&generate(&shape));
                assert!(found.is_empty(), "{layout:?} ipv6={ipv6}: {found:#?}");
            }
        }
    }
}

#[test]
fn ruleset_scale_on_generated_nodes() {
    let scale = |text: &str| {
        check(&parse(text), &Config::default())
            .into_iter()
            .filter(|d| d.code == "RL503")
            .map(|d| d.severity)
            .collect::<Vec<_>>()
    };
    // A small node: nothing.
    assert_eq!(scale(&generate(&Shape::default())), vec![]);
    // About 12,000 rules: more than 10,000 in all.
    let medium = generate(&Shape::with_rule_target(12_000));
    assert_eq!(scale(&medium), vec![Severity::Info]);
    // 6,000 Service ports: KUBE-SERVICES above 5,000 rules.
    let large = generate(&Shape {
        services: 6_000,
        endpoints_per_service: 1,
        ..Shape::default()
    });
    assert_eq!(scale(&large), vec![Severity::Warning]);
}
