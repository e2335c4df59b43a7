//! `rulelint diff` as a user runs it: exit status by verdict, folders, JSON, bad input.

mod common;

use common::{rulelint, stderr, stdout};

#[test]
fn healthy_nodes_exit_0_and_list_expected_differences() {
    let out = rulelint(
        &[
            "diff",
            "corpus/diff/healthy-pair/node-a.txt",
            "corpus/diff/healthy-pair/node-b.txt",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("no drift"), "{text}");
    assert!(text.contains("Expected differences"), "{text}");
    assert!(!text.contains('\x1b'), "no colour when not on a terminal");
}

#[test]
fn drift_exits_1_and_names_the_service() {
    let out = rulelint(&["diff", "corpus/diff/stale-endpoint"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "KUBE-SVC-I5LIAMPLWKMBJ54B (shop/cart:http) DNATs to 10.244.3.9:8080 on node-b only"
        ),
        "{text}"
    );
    // The folder's CASE.md is skipped with a note.
    assert!(stderr(&out).contains("skipping"), "{}", stderr(&out));
}

#[test]
fn json_is_versioned_and_a_group_names_its_odd_node() {
    let out = rulelint(
        &["diff", "--format", "json", "corpus/diff/group-odd-node"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["mode"], "group");
    assert_eq!(doc["nodes"].as_array().unwrap().len(), 12);
    assert_eq!(doc["odd_nodes"][0]["node"], "node-07");
    assert_eq!(doc["odd_nodes"].as_array().unwrap().len(), 1);
}

#[test]
fn colour_on_request() {
    let out = rulelint(
        &["diff", "--color", "always", "corpus/diff/missing-hook-jump"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains('\x1b'));
}

#[test]
fn bad_input_exits_2() {
    let one = rulelint(&["diff", "corpus/diff/healthy-pair/node-a.txt"], None);
    assert_eq!(one.status.code(), Some(2));
    assert!(
        stderr(&one).contains("at least two dumps"),
        "{}",
        stderr(&one)
    );

    let missing = rulelint(
        &[
            "diff",
            "corpus/diff/healthy-pair/node-a.txt",
            "no/such/file.txt",
        ],
        None,
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("cannot read `no/such/file.txt`"));

    let prose = rulelint(
        &["diff", "corpus/diff/healthy-pair/node-a.txt", "-"],
        Some(b"kubectl get pods\nNAME READY\n"),
    );
    assert_eq!(prose.status.code(), Some(2));
    assert!(stderr(&prose).contains("holds no iptables-save content"));
}

#[test]
fn an_iptables_node_and_an_nftables_node_compare_at_the_service_level() {
    let out = rulelint(
        &["diff", "--format", "json", "corpus/diff/migration-pair"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let backends: Vec<&str> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, ["iptables", "nftables"]);
    assert_eq!(doc["nodes"][1]["nft_generation"], "pre-dnat-filter");
    assert!(
        doc["notes"][0]
            .as_str()
            .unwrap()
            .contains("node-01 is in nftables mode")
    );

    let out = rulelint(&["diff", "corpus/diff/migration-stale-endpoint"], None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("on node-01 only; node-00 has no endpoint at"),
        "{text}"
    );
    assert!(
        text.contains("migration-stale-endpoint/node-01.txt:"),
        "{text}"
    );
}

/// `iptables-save; nft list ruleset` of one node in one file is one node with both backends.
#[test]
fn a_file_with_both_backends_is_one_node() {
    let iptables = std::fs::read_to_string("corpus/diff/migration-pair/node-00.txt").unwrap();
    let nft = std::fs::read_to_string("corpus/diff/migration-pair/node-01.txt").unwrap();
    let both = format!(
        "{}{}",
        iptables.replace("# node: node-00", "# node: both"),
        nft
    );
    let out = rulelint(
        &[
            "diff",
            "--format",
            "json",
            "corpus/diff/migration-pair/node-00.txt",
            "-",
        ],
        Some(both.as_bytes()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["nodes"][1]["backend"], "iptables+nftables");
    assert_eq!(doc["nodes"][1]["name"], "both");
    assert_eq!(doc["nodes"][1]["parse_errors"], 0);
}

/// The three forms of one nftables ruleset are one node three times: no drift.
#[test]
fn the_three_nft_forms_of_one_node_agree() {
    let out = rulelint(
        &[
            "diff",
            "corpus/nft/ok/01-overall-rules.txt",
            "corpus/nft/forms/01-overall-rules.json",
            "corpus/nft/forms/01-overall-rules.transaction.nft",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("Comparing 3 nodes"),
        "{}",
        stdout(&out)
    );
}
