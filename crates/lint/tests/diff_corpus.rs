//! The node diff over `corpus/diff/<case>/`: each case's verdict, kinds of drift and odd nodes
//! are asserted here (what `CASE.md` in the folder says), and its whole report (text and JSON)
//! is pinned in `corpus/diff/snapshots/`. Generated nodes of one cluster must not drift.

use rulelint_dumpgen::{Shape, generate};
use rulelint_lint::diff::{Group, Node, NodeInput, compare, prepare, report};
use rulelint_parser::{Parsed, parse};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/diff")
}

/// What a case must show.
struct Expect {
    agree: bool,
    drift_kinds: &'static [&'static str],
    /// For groups: the nodes that drift from the majority.
    odd_nodes: &'static [&'static str],
    /// Some expected difference must be recognised.
    some_expected: bool,
}

fn expectation(case: &str) -> Expect {
    let (agree, drift_kinds, odd_nodes, some_expected): (bool, &[&str], &[&str], bool) = match case
    {
        "healthy-pair" => (true, &[], &[], true),
        "same-node-reordered" => (true, &[], &[], false),
        "missing-service" => (false, &["service"], &[], true),
        "stale-endpoint" => (false, &["endpoint"], &[], true),
        "changed-probability" => (false, &["weight"], &[], true),
        "missing-hook-jump" => (false, &["hook-jump"], &[], true),
        "group-odd-node" => (false, &["endpoint"], &["node-07"], true),
        "group-rejected-service" => (false, &["service", "chain-rules"], &["node-a"], true),
        "migration-pair" => (true, &[], &[], true),
        "migration-stale-endpoint" => (false, &["endpoint"], &[], true),
        "migration-group" => (false, &["endpoint"], &["node-02"], true),
        "nft-layout-upgrade" => (true, &[], &[], true),
        "ipvs-stale-real-server" => (false, &["endpoint"], &[], false),
        "ipvs-group" => (false, &["service", "weight"], &["node-c", "node-d"], false),
        "ipvs-vs-iptables" => (true, &[], &[], false),
        "ipvs-shared-pods-local" => (true, &[], &[], true),
        "ipvs-names-resolved" => (true, &[], &[], false),
        other => panic!("corpus/diff/{other}: add its expectation to this test"),
    };
    Expect {
        agree,
        drift_kinds,
        odd_nodes,
        some_expected,
    }
}

/// (case, [(path, text)]) of every case folder, sorted.
fn cases() -> Vec<(String, Vec<(String, String)>)> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("corpus/diff")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir() && !p.ends_with("snapshots"))
        .collect();
    folders.sort();
    folders
        .into_iter()
        .map(|folder| {
            let case = folder.file_name().unwrap().to_string_lossy().into_owned();
            let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
                .expect("case folder")
                .map(|e| e.expect("entry").path())
                .filter(|p| p.extension().is_some_and(|x| x == "txt"))
                .collect();
            files.sort();
            let dumps = files
                .into_iter()
                .map(|f| {
                    let name = f.file_name().unwrap().to_string_lossy().into_owned();
                    (
                        format!("{case}/{name}"),
                        std::fs::read_to_string(&f).expect("dump"),
                    )
                })
                .collect();
            (case, dumps)
        })
        .collect()
}

fn stem(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.trim_end_matches(".txt").to_string()
}

/// The text report (no colour) and the JSON document of one case.
fn rendered(dumps: &[(String, String)]) -> (String, serde_json::Value) {
    let inputs: Vec<NodeInput<'_>> = dumps.iter().map(|(_, t)| NodeInput::read(t)).collect();
    let nodes: Vec<Node<'_>> = prepare(dumps.iter().map(|(path, _)| stem(path)).zip(&inputs));
    let facts_of_comparison = Group::from_nodes(&nodes);
    let comparison = compare(&facts_of_comparison, &nodes);
    let paths: Vec<&str> = dumps.iter().map(|(p, _)| p.as_str()).collect();
    let doc = report::document(&comparison, &paths);
    let text = report::human(&doc, false);
    (text, serde_json::to_value(&doc).expect("JSON"))
}

#[test]
fn every_case_shows_what_it_is_about() {
    let all = cases();
    assert!(all.len() >= 7, "corpus/diff holds {} cases", all.len());
    for (case, dumps) in &all {
        let expect = expectation(case);
        assert!(dumps.len() >= 2, "{case}: needs two dumps or more");
        let (_, doc) = rendered(dumps);
        assert_eq!(doc["agree"], expect.agree, "{case}: verdict\n{doc:#}");
        let kinds: BTreeSet<&str> = doc["differences"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["expected"].is_null())
            .map(|d| d["kind"].as_str().unwrap())
            .collect();
        let wanted: BTreeSet<&str> = expect.drift_kinds.iter().copied().collect();
        assert_eq!(kinds, wanted, "{case}: kinds of drift");
        assert_eq!(
            doc["summary"]["expected"].as_u64().unwrap() > 0,
            expect.some_expected,
            "{case}: expected differences"
        );
        if dumps.len() > 2 {
            let odd: Vec<&str> = doc["odd_nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["node"].as_str().unwrap())
                .collect();
            assert_eq!(odd, expect.odd_nodes, "{case}: odd nodes");
        }
    }
}

/// In a group report, a sentence about some nodes shows lines of those nodes only: a location in
/// another node's file would send the reader to a node that is fine.
#[test]
fn group_sentences_point_into_the_nodes_they_name() {
    let mut checked = 0;
    for (case, dumps) in cases().iter().filter(|(_, d)| d.len() > 2) {
        let (text, _) = rendered(dumps);
        for line in text.lines().filter(|l| l.trim_start().starts_with('≠')) {
            let Some((sentence, locations)) = line.rsplit_once("  [") else {
                continue;
            };
            // The nodes a sentence describes are named in it (before the colon with a
            // majority, "on node-x" in the variants' list without one).
            let named: Vec<&str> = sentence.split([' ', ',', ':', ';']).collect();
            for location in locations.trim_end_matches(']').split(", ") {
                let path = location.split(':').next().unwrap_or(location);
                assert!(
                    named.contains(&stem(path).as_str()),
                    "{case}: `{line}` points into {path}, a node it does not name"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no located group sentence to check");
}

#[test]
fn stale_endpoint_names_the_pod_ip_and_both_lines() {
    let (_, dumps) = cases()
        .into_iter()
        .find(|(c, _)| c == "stale-endpoint")
        .expect("case");
    let (text, doc) = rendered(&dumps);
    assert!(
        text.contains("DNATs to 10.244.3.9:8080 on node-b only; node-a has no endpoint at 10.244.3.9 in any Service"),
        "{text}"
    );
    // The rule level holds the stale jump and DNAT with their lines in node-b.
    let svc = doc["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["chain"] == "KUBE-SVC-I5LIAMPLWKMBJ54B")
        .expect("rule changes of the cart's chain");
    assert!(svc["changes"].as_array().unwrap().iter().any(|ch| {
        ch["change"] == "added"
            && ch["b"]["text"]
                .as_str()
                .unwrap()
                .contains("10.244.3.9:8080\" -j KUBE-SEP-4CTVESJT6OEYUEID")
    }));
}

#[test]
fn snapshots_of_the_reports() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(corpus_dir().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for (case, dumps) in cases() {
            let (mut text, doc) = rendered(&dumps);
            text.push_str("--- json ---\n");
            text.push_str(&serde_json::to_string_pretty(&doc).expect("JSON"));
            insta::assert_snapshot!(case, text);
        }
    });
}

#[test]
fn generated_nodes_of_one_cluster_do_not_drift() {
    for layout_seed in [1u64, 2, 3] {
        let shape = Shape::with_rule_target(3_000);
        let texts: Vec<String> = (0..4)
            .map(|node| {
                let mut s = shape.clone();
                s.seed = layout_seed;
                s.nodes = 4;
                s.node = node;
                generate(&s)
            })
            .collect();
        let parsed: Vec<Parsed<'_>> = texts.iter().map(|t| parse(t)).collect();
        let nodes: Vec<Node<'_>> = parsed
            .iter()
            .enumerate()
            .map(|(i, p)| Node::new(format!("node-{i}"), p))
            .collect();
        for pair in [[0usize, 1], [2, 3]] {
            let two = [
                Node::new("a", &parsed[pair[0]]),
                Node::new("b", &parsed[pair[1]]),
            ];
            let facts_of_c = Group::from_nodes(&two);
            let c = compare(&facts_of_c, &two);
            let doc = report::document(&c, &["a", "b"]);
            assert!(
                doc.agree,
                "seed {layout_seed} {pair:?}:\n{}",
                report::human(&doc, false)
            );
        }
        let facts_of_group = Group::from_nodes(&nodes);
        let group = compare(&facts_of_group, &nodes);
        let doc = report::document(&group, &["0", "1", "2", "3"]);
        assert!(
            doc.agree,
            "seed {layout_seed}:\n{}",
            report::human(&doc, false)
        );
    }
}

#[test]
fn a_dump_names_its_node() {
    let parsed = parse("# node: worker-17\n*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n");
    assert_eq!(Node::new("file", &parsed).name, "worker-17");
    let unnamed = parse("*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n");
    assert_eq!(Node::new("file", &unnamed).name, "file");
}

#[test]
fn two_unrelated_large_chains_are_compared_as_sets() {
    let chain = |offset: u32| {
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
        for i in 0..6_000u32 {
            let port = 1 + (i + offset) % 60_000;
            text.push_str(&format!(
                "-A INPUT -p tcp -m tcp --dport {port} -j ACCEPT\n"
            ));
        }
        text + "COMMIT\n"
    };
    let (text_a, text_b) = (chain(0), chain(30_000));
    let (a, b) = (parse(&text_a), parse(&text_b));
    let nodes = [Node::new("a", &a), Node::new("b", &b)];
    let facts_of_comparison = Group::from_nodes(&nodes);
    let comparison = compare(&facts_of_comparison, &nodes);
    let input = &comparison.rules[0];
    assert!(
        input.unordered,
        "a Myers diff of 12k rules x 12k changes is over budget"
    );
    assert_eq!(input.changes.len(), 12_000);
}

/// The stale endpoint of the nftables node is named, and located at its `numgen` map line in
/// the nftables file, not in the iptables one.
#[test]
fn migration_stale_endpoint_points_into_the_nft_file() {
    let (_, dumps) = cases()
        .into_iter()
        .find(|(c, _)| c == "migration-stale-endpoint")
        .expect("case");
    let (text, doc) = rendered(&dumps);
    let endpoint = doc["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "endpoint")
        .expect("the stale endpoint");
    let holders = endpoint["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| !v["value"].is_null())
        .expect("the nodes that have it")["nodes"]
        .as_array()
        .unwrap();
    assert_eq!(holders.len(), 1);
    assert_eq!(holders[0]["node"], "node-01");
    let line = holders[0]["line"].as_u64().expect("a line") as usize;
    let message = endpoint["messages"][0].as_str().unwrap();
    let destination = message
        .split("DNATs to ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("a destination in the message");
    let (ip, port) = destination.rsplit_once(':').unwrap();
    assert!(
        message.contains(&format!("node-00 has no endpoint at {ip} in any Service")),
        "{message}"
    );
    let nft_line = dumps[1].1.lines().nth(line - 1).unwrap();
    assert!(
        nft_line.contains("numgen random mod") && nft_line.contains(&format!("__{ip}/{port}")),
        "line {line} of node-01.txt is `{nft_line}`"
    );
    assert!(text.contains(&format!("migration-stale-endpoint/node-01.txt:{line}")));
}

/// Each node of generated clusters printed in iptables mode and in nftables mode: every
/// mixture agrees at the Service level, and dropping one Service from an nftables node is
/// found (the comparison is not vacuous).
#[test]
fn generated_nodes_in_both_backends_do_not_drift() {
    for seed in [1u64, 2] {
        let mut shape = Shape::with_rule_target(2_000);
        shape.seed = seed;
        shape.nodes = 3;
        let node = |i: u32, nft: bool| {
            let mut s = shape.clone();
            s.node = i;
            if nft {
                rulelint_dumpgen::generate_nft(&s, rulelint_dumpgen::NftForm::List)
            } else {
                generate(&s)
            }
        };
        let texts = [node(0, false), node(1, true), node(2, true), node(0, true)];
        let inputs: Vec<NodeInput<'_>> = texts.iter().map(|t| NodeInput::read(t)).collect();
        let nodes: Vec<Node<'_>> = prepare(
            inputs
                .iter()
                .enumerate()
                .map(|(i, input)| (format!("node-{i}"), input)),
        );
        let facts_of_group = Group::from_nodes(&nodes[..3]);
        let group = compare(&facts_of_group, &nodes[..3]);
        let doc = report::document(&group, &["0", "1", "2"]);
        assert!(doc.agree, "seed {seed}:\n{}", report::human(&doc, false));
        // One node in both backends: not a single difference, expected or not.
        let pair = prepare([("ipt".into(), &inputs[0]), ("nft".into(), &inputs[3])]);
        let facts_of_c = Group::from_nodes(&pair);
        let c = compare(&facts_of_c, &pair);
        assert!(
            c.differences.is_empty(),
            "seed {seed}: {:#?}",
            c.differences
        );
        // The nftables twin without one Service port's map element.
        let element = texts[3]
            .lines()
            .find(|l| l.contains(": goto service-") && !l.contains("elements") && !l.ends_with('}'))
            .expect("a service-ips element line");
        let without = texts[3].replacen(&format!("{element}\n"), "", 1);
        let input = NodeInput::read(&without);
        let pair = prepare([("ipt".into(), &inputs[0]), ("nft".into(), &input)]);
        let facts_of_c = Group::from_nodes(&pair);
        let c = compare(&facts_of_c, &pair);
        let doc = report::document(&c, &["a", "b"]);
        assert!(!doc.agree, "seed {seed}: a missing Service port must drift");
        assert!(
            doc.differences
                .iter()
                .any(|d| d.kind == "service" && d.expected.is_none()),
            "{}",
            report::human(&doc, false)
        );
    }
}

/// Two nftables nodes of different layout generations (kube-proxy upgraded on one): the
/// layout is not drift, but the same change within one generation is.
#[test]
fn an_nft_layout_change_is_not_drift() {
    let (_, dumps) = cases()
        .into_iter()
        .find(|(c, _)| c == "nft-layout-upgrade")
        .expect("case");
    let (_, doc) = rendered(&dumps);
    assert_eq!(doc["agree"], true, "{doc:#}");
    let generations: Vec<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["nft_generation"].as_str().unwrap())
        .collect();
    assert_eq!(generations, ["pre-dnat-filter", "inline-masquerade"]);
    // Within one generation a renamed chain is chain drift.
    let same_generation = dumps[0]
        .1
        .replace("\tchain masquerading {", "\tchain masquerading-old {");
    let changed = [dumps[0].clone(), ("x/node-99.txt".into(), same_generation)];
    let (_, doc) = rendered(&changed);
    assert_eq!(doc["agree"], false, "{doc:#}");
}

/// A LoadBalancer Service without endpoints: nftables keeps its firewall chain and lists its
/// cluster IP and node port only in the no-endpoint maps, iptables in filter's REJECT rules.
/// Both are the same ways in (seed 3 of 5,000 Service ports has such a Service).
#[test]
fn a_load_balancer_without_endpoints_agrees_across_backends() {
    let mut shape = Shape::with_services(5_000);
    shape.seed = 3;
    let iptables = generate(&shape);
    let nft = rulelint_dumpgen::generate_nft(&shape, rulelint_dumpgen::NftForm::List);
    let rejected_with_firewall = nft
        .lines()
        .filter(|l| l.contains(": goto reject-chain"))
        .filter_map(|l| l.split("comment \"").nth(1)?.split('"').next())
        .any(|name| {
            let (service, port) = name.split_once(':').unwrap_or((name, ""));
            nft.lines().any(|l| {
                l.starts_with("\tchain firewall-")
                    && l.contains(&format!("-{service}/"))
                    && l.contains(&format!("/{port} {{"))
            })
        });
    assert!(rejected_with_firewall, "the case this test is about");
    let inputs = [NodeInput::read(&iptables), NodeInput::read(&nft)];
    let nodes = prepare([("ipt".into(), &inputs[0]), ("nft".into(), &inputs[1])]);
    let facts_of_comparison = Group::from_nodes(&nodes);
    let comparison = compare(&facts_of_comparison, &nodes);
    let doc = report::document(&comparison, &["ipt", "nft"]);
    assert!(doc.differences.is_empty(), "{}", report::human(&doc, false));
}
