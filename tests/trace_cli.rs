//! `rulelint trace` as a user runs it: the walk picked per dump (iptables-save or `nft list
//! ruleset`), both side by side, and the forms the trace does not read refused.

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

#[test]
fn nft_json_is_refused_by_name() {
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
    assert!(stderr(&out).contains("nft -j"), "{}", stderr(&out));
}
