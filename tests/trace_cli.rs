//! `rulelint trace` as a user runs it: the walk picked per dump (iptables-save or `nft list
//! ruleset`, its JSON and transaction forms), both side by side, and dumps without a ruleset
//! refused.

mod common;

use common::{TempDir, rulelint, stderr, stdout};

const IPTABLES: &str = "corpus/trace/mixed-backends/node-iptables.txt";
const NFT: &str = "corpus/trace/mixed-backends/node-nft.txt";

fn path(relative: &str) -> String {
    format!("{}/{relative}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn an_iptables_node_and_an_nftables_node_side_by_side() {
    let out = rulelint(
        &[
            "trace",
            &path(IPTABLES),
            &path(NFT),
            "--dst",
            "10.97.181.76:9090",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    let nodes = doc["nodes"].as_array().expect("nodes");
    assert_eq!(nodes[0]["backend"], "iptables");
    assert_eq!(nodes[1]["backend"], "nftables");
    for node in nodes {
        let mut destinations: Vec<&str> = node["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["destination"].as_str().unwrap())
            .collect();
        destinations.sort();
        assert_eq!(destinations, ["10.244.0.200:9090", "10.244.2.112:9090"]);
    }
    // Different paths, same outcomes: no difference.
    assert!(
        doc["first_difference"].is_null(),
        "{}",
        doc["first_difference"]
    );
    // The nftables steps point into the listing.
    let step = &nodes[1]["outcomes"][0]["steps"][0];
    assert_eq!(step["table"], "ip kube-proxy");
    assert!(step["line"].as_u64().is_some());
}

#[test]
fn a_stale_endpoint_on_the_nftables_node_is_the_first_difference() {
    let dir = TempDir::new("trace-nft-stale");
    let nft = std::fs::read_to_string(path(NFT)).unwrap();
    // The endpoint chain DNATs to a pod that is gone.
    let stale = nft.replace("dnat to 10.244.2.112:9090", "dnat to 10.244.2.99:9090");
    assert_ne!(stale, nft);
    let file = dir.write("node-nft.txt", &stale);
    let out = rulelint(
        &[
            "trace",
            &path(IPTABLES),
            file.to_str().unwrap(),
            "--dst",
            "10.97.181.76:9090",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("first difference: outcomes differ") && text.contains("10.244.2.99:9090"),
        "{text}"
    );
}

/// The same kube-proxy ruleset as `nft list ruleset` text, `nft -j list ruleset` JSON and the
/// `add ...` transaction kube-proxy writes: the same outcomes, each form's steps in its own file.
#[test]
fn nft_json_and_transaction_trace_as_the_listing() {
    let forms = [
        ("corpus/nft/ok/01-overall-rules.txt", "nftables"),
        ("corpus/nft/forms/01-overall-rules.json", "nftables"),
        (
            "corpus/nft/forms/01-overall-rules.transaction.nft",
            "nftables",
        ),
    ];
    let mut ends = Vec::new();
    for (file, backend) in forms {
        let out = rulelint(
            &[
                "trace",
                &path(file),
                "--dst",
                "172.30.0.42:80",
                "--format",
                "json",
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{file}: {}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
        let node = &doc["nodes"][0];
        assert_eq!(node["backend"], backend);
        let mut end: Vec<(String, String, String)> = node["outcomes"]
            .as_array()
            .expect("outcomes")
            .iter()
            .map(|o| {
                (
                    o["verdict"].to_string(),
                    o["destination"].to_string(),
                    o["probability"].to_string(),
                )
            })
            .collect();
        end.sort();
        assert!(!end.is_empty(), "{file}: no outcome");
        assert!(
            node["outcomes"][0]["steps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["line"].as_u64().is_some_and(|l| l > 0)),
            "{file}: no step points into the file"
        );
        ends.push(end);
    }
    assert_eq!(ends[0], ends[1], "listing and JSON");
    assert_eq!(ends[0], ends[2], "listing and transaction");
    // svc2's one endpoint, forwarded.
    assert_eq!(
        ends[0],
        [(
            "\"forward\"".to_string(),
            "\"10.180.0.2:80\"".to_string(),
            "1.0".to_string()
        )]
    );
}

#[test]
fn nft_json_without_chains_is_refused() {
    let dir = TempDir::new("trace-nft-json");
    let file = dir.write(
        "node.json",
        "{\"nftables\": [{\"metainfo\": {\"version\": \"1.0.6\", \"json_schema_version\": 1}}]}\n",
    );
    let out = rulelint(
        &["trace", file.to_str().unwrap(), "--dst", "10.96.0.1:443"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("holds no nftables chain"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn files_without_rules_to_walk_are_refused_saying_what_they_hold() {
    let dir = TempDir::new("trace-no-rules");
    let prose = dir.write("pods.txt", "NAME READY STATUS\ncoredns 1/1 Running\n");
    let ipvs_only = path("corpus/ipvs/healthy-node-ipvsadm.txt");
    for (file, says) in [
        (prose.to_str().unwrap(), "holds no ruleset"),
        (ipvs_only.as_str(), "holds IPVS state"),
    ] {
        let out = rulelint(&["trace", file, "--dst", "10.96.0.1:443"], None);
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(stderr(&out).contains(says), "{file}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{file}");
    }
}
