//! The trace corpus, `corpus/trace/<case>/`: one dump per node (`*.txt`) and `packets` (one
//! packet per line, `name: flags` with the flags of `rulelint trace`). Each case's text report
//! for every packet is pinned in `corpus/trace/snapshots/`; the JSON document is checked for
//! its shape. `corpus/trace/make.py` writes the dumps.

use rulelint_lint::trace::report::{TraceDocument, document, human, node_doc};
use rulelint_lint::trace::{ConnState, Endpoint, Origin, PacketSpec, TraceNode, trace};
use rulelint_parser::parse;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/trace")
}

/// Reads the flags of one `packets` line (the subset `rulelint trace` takes).
pub fn spec(flags: &str) -> PacketSpec {
    let words: Vec<&str> = flags.split_whitespace().collect();
    let mut spec: Option<PacketSpec> = None;
    let mut rest = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let (flag, value) = (words[i], words.get(i + 1).copied().unwrap_or(""));
        i += 2;
        if flag == "--dst" {
            spec = Some(PacketSpec::to(value.parse().expect("--dst")));
        } else {
            rest.push((flag, value));
        }
    }
    let mut spec = spec.expect("a --dst");
    for (flag, value) in rest {
        match flag {
            "--src" => spec.src = Some(value.parse::<Endpoint>().expect("--src")),
            "--proto" => spec.protocol = Some(PacketSpec::parse_protocol(value).expect("--proto")),
            "--from" => {
                spec.from = Some(match value {
                    "pod" => Origin::Pod,
                    "outside" => Origin::Outside,
                    "host" => Origin::Host,
                    other => panic!("--from {other}"),
                })
            }
            "--in" => spec.in_interface = Some(value.into()),
            "--out" => spec.out_interface = Some(value.into()),
            "--state" => {
                spec.state = Some(match value {
                    "new" => ConnState::New,
                    "established" => ConnState::Established,
                    other => panic!("--state {other}"),
                })
            }
            "--node-ip" => spec.node_ips.push(value.parse().expect("--node-ip")),
            other => panic!("unknown flag {other}"),
        }
    }
    spec
}

/// Traces `spec` on the dumps (file name, text) and returns the document.
fn run(dumps: &[(String, String)], spec: &PacketSpec) -> TraceDocument {
    let parsed: Vec<_> = dumps.iter().map(|(_, t)| parse(t)).collect();
    let mut docs = Vec::new();
    for ((file, _), p) in dumps.iter().zip(&parsed) {
        let name = rulelint_lint::diff::declared_name(&p.ruleset)
            .unwrap_or(file.trim_end_matches(".txt"))
            .to_string();
        let node = TraceNode::new(name, &p.ruleset);
        let result = trace(&node, spec);
        docs.push(node_doc(&node, file, &result));
    }
    document(docs)
}

fn cases() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus/trace")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() && !p.ends_with("snapshots"))
        .collect();
    out.sort();
    out
}

#[test]
fn corpus_traces() {
    let cases = cases();
    assert!(cases.len() >= 10, "only {} trace cases", cases.len());
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let mut dumps: Vec<(String, String)> = std::fs::read_dir(&case)
            .expect("case")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read_to_string(&p).expect("dump"),
                )
            })
            .collect();
        dumps.sort();
        assert!(!dumps.is_empty(), "{name}: no dump");
        let packets = std::fs::read_to_string(case.join("packets")).expect("packets");
        let mut text = String::new();
        for line in packets.lines().filter(|l| !l.trim().is_empty()) {
            let (label, flags) = line.split_once(':').expect("`name: flags`");
            let doc = run(&dumps, &spec(flags));
            // The JSON document has its documented shape.
            let json = serde_json::to_value(&doc).expect("json");
            assert_eq!(json["format_version"], 1);
            for node in json["nodes"].as_array().expect("nodes") {
                for o in node["outcomes"].as_array().expect("outcomes") {
                    for key in [
                        "probability",
                        "verdict",
                        "destination",
                        "masquerade",
                        "assumptions",
                        "steps",
                    ] {
                        assert!(o.get(key).is_some(), "{name}/{label}: outcome lacks {key}");
                    }
                }
                let total: f64 = node["outcomes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|o| o["assumptions"].as_array().unwrap().is_empty())
                    .map(|o| o["probability"].as_f64().unwrap())
                    .sum();
                assert!(
                    total < 1.0 + 1e-9,
                    "{name}/{label}: probabilities without assumptions sum to {total}"
                );
            }
            text.push_str(&format!("## {label}:{flags}\n"));
            text.push_str(&human(&doc));
            text.push('\n');
        }
        insta::with_settings!({
            snapshot_path => corpus_dir().join("snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name.clone(), text);
        });
    }
}
