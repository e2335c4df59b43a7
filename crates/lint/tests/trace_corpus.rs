//! The trace corpus, `corpus/trace/<case>/`: one dump per node (`*.txt`) and `packets` (one
//! packet per line, `name: flags` with the flags of `rulelint trace`). Each case's text report
//! for every packet is pinned in `corpus/trace/snapshots/`; the JSON document is checked for
//! its shape. `corpus/trace/make.py` writes the dumps.

use rulelint_lint::ipvs::check::read_ipvs;
use rulelint_lint::source::{SectionKind, sections};
use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
use rulelint_lint::trace::report::{TraceDocument, document, human, node_doc};
use rulelint_lint::trace::{Affinity, ConnState, Endpoint, Origin, PacketSpec, TraceNode, trace};
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
            "--affinity" => {
                spec.affinity = Some(match value {
                    "hit" => Affinity::Hit,
                    "miss" => Affinity::Miss,
                    other => panic!("--affinity {other}"),
                })
            }
            other => panic!("unknown flag {other}"),
        }
    }
    spec
}

/// A dump read by the parser of its kind, as `rulelint trace` picks it. (One per test case:
/// the size of the iptables variant does not matter.)
#[allow(clippy::large_enum_variant)]
enum Dump<'a> {
    Iptables(rulelint_parser::Parsed<'a>),
    Nft(rulelint_nft::Parsed<'a>),
}

/// Traces `spec` on the dumps (file name, text) and returns the document: an `nft list
/// ruleset` listing through the nftables walk, iptables-save through the iptables walk.
fn run(dumps: &[(String, String)], spec: &PacketSpec) -> TraceDocument {
    let parsed: Vec<Dump<'_>> = dumps
        .iter()
        .map(|(_, t)| {
            if sections(t).iter().any(|s| s.kind == SectionKind::Nft) {
                Dump::Nft(rulelint_nft::parse(t))
            } else {
                Dump::Iptables(parse(t))
            }
        })
        .collect();
    let mut docs = Vec::new();
    for ((file, text), p) in dumps.iter().zip(&parsed) {
        let file_name = file.trim_end_matches(".txt");
        match p {
            Dump::Iptables(p) => {
                let name = rulelint_lint::diff::declared_name(&p.ruleset)
                    .unwrap_or(file_name)
                    .to_string();
                let mut node = TraceNode::new(name, &p.ruleset);
                // The IPVS-mode state beside the rules, as `rulelint trace` reads it.
                if let Some((ipvs, _)) = read_ipvs(text, &sections(text)) {
                    node = node.with_file_state(ipvs);
                }
                let result = trace(&node, spec);
                docs.push(node_doc(&node, file, &result));
            }
            Dump::Nft(p) => {
                let node = NftTraceNode::new(file_name, &p.ruleset);
                let result = trace_nft(&node, spec);
                docs.push(node_doc(&node, file, &result));
            }
        }
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

/// kube-proxy's own packet-flow expectations (`packetFlowTest` in
/// `pkg/proxy/iptables/proxier_test.go`): source, destination, the comma-joined endpoints or
/// `DROP`/`REJECT`, and whether the packet is masqueraded, on `corpus/trace/kube-modern`.
/// Only outcomes without assumptions count, as kube-proxy's tracer assumes no prior state.
#[test]
fn kube_proxy_packet_flow_cases() {
    struct Case {
        name: &'static str,
        flags: &'static str,
        output: &'static str,
        masq: bool,
    }
    let cases = [
        Case {
            name: "pod to cluster IP",
            flags: "--dst 10.100.34.17:80 --src 10.244.1.9",
            output: "10.244.1.12:8080, 10.244.2.7:8080, 10.244.3.9:8080",
            masq: false,
        },
        Case {
            name: "external to cluster IP (masqueraded: not from the pod network)",
            flags: "--dst 10.100.34.17:80 --src 192.168.10.99 --from outside --node-ip 192.168.10.21",
            output: "10.244.1.12:8080, 10.244.2.7:8080, 10.244.3.9:8080",
            masq: true,
        },
        Case {
            name: "hairpin to own Service",
            flags: "--dst 10.110.2.2:80 --src 10.244.2.40",
            output: "10.244.2.40:8000",
            masq: true,
        },
        Case {
            name: "Service without endpoints",
            flags: "--dst 10.108.9.9:8080 --src 10.244.1.9",
            output: "REJECT",
            masq: false,
        },
        Case {
            name: "LB IP from an accepted source range",
            flags: "--dst 203.0.113.10:80 --src 203.0.113.7 --from outside --node-ip 192.168.10.21",
            output: "10.244.2.15:80, 10.244.3.16:80",
            masq: true,
        },
        Case {
            name: "LB IP from another source",
            flags: "--dst 203.0.113.10:80 --src 192.0.2.99 --from outside --node-ip 192.168.10.21",
            output: "DROP",
            masq: false,
        },
        Case {
            name: "node port, Local policy, local endpoint: not masqueraded",
            flags: "--dst 192.168.10.21:32443 --src 192.0.2.99 --from outside --node-ip 192.168.10.21",
            output: "10.244.1.21:8443",
            masq: false,
        },
        Case {
            name: "node port with no endpoints",
            flags: "--dst 192.168.10.21:30999 --src 192.0.2.99 --from outside --node-ip 192.168.10.21",
            output: "REJECT",
            masq: false,
        },
    ];
    let text = std::fs::read_to_string(corpus_dir().join("kube-modern/node.txt")).expect("dump");
    let parsed = parse(&text);
    let node = TraceNode::new("node", &parsed.ruleset);
    for c in cases {
        let t = trace(&node, &spec(c.flags));
        let plain: Vec<_> = t
            .outcomes
            .iter()
            .filter(|o| o.assumptions.is_empty())
            .collect();
        let mut outputs: Vec<String> = plain
            .iter()
            .map(|o| match o.verdict {
                rulelint_lint::trace::Verdict::Drop => "DROP".to_string(),
                rulelint_lint::trace::Verdict::Reject => "REJECT".to_string(),
                _ => o.destination.to_string(),
            })
            .collect();
        outputs.sort();
        outputs.dedup();
        assert_eq!(outputs.join(", "), c.output, "{}", c.name);
        let masq = plain.iter().any(|o| o.masquerade.is_some());
        assert_eq!(masq, c.masq, "{}: masquerade", c.name);
    }
}

/// `corpus/trace/merge-undecided`: the docker0 question decides nothing and is dropped, its LOG
/// step kept and marked; the two outcomes that pass `-i cali+ -m set --match-set blocked src -j
/// DROP` hold on "not both" and stay apart.
#[test]
fn merges_only_assumptions_that_decided_nothing() {
    let text =
        std::fs::read_to_string(corpus_dir().join("merge-undecided/node.txt")).expect("dump");
    let parsed = parse(&text);
    let node = TraceNode::new("n", &parsed.ruleset);
    let result = trace(
        &node,
        &spec("--dst 172.16.5.5:443 --src 10.244.1.9 --node-ip 192.168.0.1"),
    );
    let questions = |o: &rulelint_lint::trace::Outcome| -> Vec<String> {
        o.assumptions.iter().map(ToString::to_string).collect()
    };
    assert!(
        result
            .outcomes
            .iter()
            .flat_map(|o| &o.assumptions)
            .all(|a| !a.question.contains("docker0")),
        "the docker0 question decided nothing: {:#?}",
        result.outcomes
    );
    let log_steps: Vec<String> = result
        .outcomes
        .iter()
        .flat_map(|o| &o.steps)
        .map(|s| s.effect_text().into_owned())
        .filter(|e| e.contains("LOG"))
        .collect();
    assert!(!log_steps.is_empty());
    assert!(
        log_steps.iter().all(
            |e| e.contains("(only when: the packet enters on an interface matching `docker0`)")
        ),
        "{log_steps:?}"
    );
    let mut seen: Vec<(String, Vec<String>)> = result
        .outcomes
        .iter()
        .map(|o| (o.verdict.as_str().to_string(), questions(o)))
        .collect();
    seen.sort();
    let cali = "the packet enters on an interface matching `cali+`";
    let blocked = "ipset blocked holds the packet's src";
    assert_eq!(
        seen,
        [
            (
                "drop".to_string(),
                vec![format!("assumed: {blocked}"), format!("assumed: {cali}")]
            ),
            (
                "forward".to_string(),
                vec![
                    format!("assumed not: {blocked}"),
                    format!("assumed: {cali}")
                ]
            ),
            ("forward".to_string(), vec![format!("assumed not: {cali}")]),
        ]
    );
    // Each forward outcome is certain given its assumptions: merging did not add them up.
    assert!(result.outcomes.iter().all(|o| o.probability == 1.0));
}
