//! SARIF output validates against the official SARIF 2.1.0 schema (OASIS Errata 01, vendored in
//! `tests/data/`), for every dump of the lint corpus at once and for an empty run.

use rulelint_lint::report::CheckedFile;
use rulelint_lint::{Config, check, sarif};
use rulelint_parser::parse;
use serde_json::Value;
use std::path::Path;

fn validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("data/sarif-schema-2.1.0.json")).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("SARIF schema compiles")
}

fn errors(log: &Value) -> Vec<String> {
    validator()
        .iter_errors(log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn corpus_sarif_is_valid_sarif_2_1_0() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/lints");
    let mut texts = Vec::new();
    for folder in std::fs::read_dir(&root).expect("corpus/lints") {
        let folder = folder.expect("entry").path();
        if !folder.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&folder).expect("folder") {
            let path = file.expect("entry").path();
            if path.extension().is_some_and(|e| e == "txt") {
                let name = path
                    .strip_prefix(&root)
                    .expect("inside")
                    .to_string_lossy()
                    .into_owned();
                texts.push((name, std::fs::read_to_string(&path).expect("dump")));
            }
        }
    }
    texts.sort();
    let parsed: Vec<_> = texts.iter().map(|(_, t)| parse(t)).collect();
    let findings: Vec<_> = parsed
        .iter()
        .map(|p| check(p, &Config::default()))
        .collect();
    let files: Vec<CheckedFile<'_, '_>> = texts
        .iter()
        .zip(&parsed)
        .zip(&findings)
        .map(|(((name, _), p), f)| CheckedFile {
            path: name,
            ruleset: &p.ruleset,
            diagnostics: f,
        })
        .collect();
    // Paths resolved against a root, and an unreadable input, as the CLI writes them.
    let options = sarif::SarifOptions {
        cwd: Some("/repo/nodes".into()),
        root: Some("/repo".into()),
    };
    let unreadable = [rulelint_lint::report::Unreadable {
        path: "missing file.txt".to_string(),
        error: "cannot read `missing file.txt`: No such file or directory".to_string(),
    }];
    let log = sarif::sarif_log_with(&files, &unreadable, &options);
    assert_eq!(
        log["runs"][0]["invocations"][0]["executionSuccessful"],
        false
    );
    let results = log["runs"][0]["results"].as_array().expect("results").len();
    assert!(
        results > 20,
        "only {results} results: the corpus should hold many findings"
    );
    let problems = errors(&log);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn empty_run_is_valid_and_broken_logs_are_not() {
    let log = sarif::sarif_log(&[]);
    assert!(errors(&log).is_empty());
    // The validator does catch mistakes: a made-up level and a line 0.
    let mut broken = sarif::sarif_log(&[]);
    broken["runs"][0]["results"] = serde_json::json!([{
        "ruleId": "RL401",
        "level": "fatal",
        "message": { "text": "m" },
        "locations": [{ "physicalLocation": {
            "artifactLocation": { "uri": "a.txt" },
            "region": { "startLine": 0 }
        }}]
    }]);
    assert_eq!(errors(&broken).len(), 2, "{:?}", errors(&broken));
}
