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

/// The IPVS-mode node of `corpus/ipvs`: iptables-save, ipset save, ipvsadm -Ln and ip addr.
const IPVS_NODE: &str = "corpus/ipvs/healthy-node.txt";

fn trace_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["trace", "--format", "json"];
    all.extend_from_slice(args);
    let out = rulelint(&all, None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("json")
}

#[test]
fn an_ipvs_node_file_answers_its_set_matches_addresses_and_virtual_server() {
    let node = path(IPVS_NODE);
    let doc = trace_json(&[&node, "--dst", "10.96.0.10:53", "--proto", "udp"]);
    let n = &doc["nodes"][0];
    let outcomes = n["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 1, "{n}");
    let o = &outcomes[0];
    assert_eq!(o["verdict"], "accept");
    assert!(o["assumptions"].as_array().unwrap().is_empty(), "{o}");
    let cluster = o["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["ipset"] == "KUBE-CLUSTER-IP")
        .expect("a KUBE-CLUSTER-IP fact");
    assert_eq!(cluster["holds"], true);
    assert_eq!(cluster["key"], "10.96.0.10,udp:53");
    let text = std::fs::read_to_string(&node).unwrap();
    let line = cluster["line"].as_u64().unwrap() as usize;
    assert_eq!(
        text.lines().nth(line - 1),
        Some("add KUBE-CLUSTER-IP 10.96.0.10,udp:53")
    );
    let vs = &o["ipvs"];
    assert_eq!(vs["protocol"], "UDP");
    assert_eq!(vs["address"], "10.96.0.10:53");
    let real: Vec<&str> = vs["real_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap())
        .collect();
    assert_eq!(real, ["10.244.1.5:53", "10.244.2.3:53"]);
    let line = vs["line"].as_u64().unwrap() as usize;
    assert_eq!(text.lines().nth(line - 1), Some("UDP  10.96.0.10:53 rr"));
    let addresses = n["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["field"] == "node addresses")
        .unwrap();
    assert_eq!(addresses["why"], "from ip addr in the dump");

    // The text report says the same, as facts.
    let out = rulelint(
        &["trace", &node, "--dst", "10.96.0.10:53", "--proto", "udp"],
        None,
    );
    let text = stdout(&out);
    assert!(
        text.contains("outcome 1 of 1: accept 10.96.0.10:53"),
        "{text}"
    );
    assert!(
        text.contains("ipset KUBE-CLUSTER-IP holds 10.96.0.10,udp:53 [from the dump, line 72]"),
        "{text}"
    );
    assert!(
        text.contains(
            "IPVS virtual server UDP 10.96.0.10:53 rr -> 10.244.1.5:53 (Masq, weight 1), \
             10.244.2.3:53 (Masq, weight 1) [from ipvsadm in the dump, line 125]"
        ),
        "{text}"
    );
    assert!(!text.contains("assumed"), "{text}");
}

#[test]
fn a_virtual_server_without_its_cluster_ip_entry_is_rejected_by_the_ipvs_filter() {
    let dir = TempDir::new("trace-ipvs-missing-entry");
    let text = std::fs::read_to_string(path(IPVS_NODE)).unwrap();
    let broken = text.replace("add KUBE-CLUSTER-IP 10.96.120.7,tcp:80\n", "");
    assert_ne!(broken, text);
    let file = dir.write("node.txt", &broken).display().to_string();
    let doc = trace_json(&[&file, "--dst", "10.96.120.7:80"]);
    let outcomes = doc["nodes"][0]["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 1, "{doc}");
    let o = &outcomes[0];
    assert_eq!(o["verdict"], "reject");
    let last = o["steps"].as_array().unwrap().last().unwrap();
    assert_eq!(last["chain"], "KUBE-IPVS-FILTER");
    assert!(
        last["rule"]
            .as_str()
            .unwrap()
            .contains("--match-set KUBE-IPVS-IPS dst -j REJECT"),
        "{last}"
    );
    let facts = o["facts"].as_array().unwrap();
    let fact = |set: &str| facts.iter().find(|f| f["ipset"] == set).unwrap()["holds"].clone();
    assert_eq!(fact("KUBE-CLUSTER-IP"), false);
    assert_eq!(fact("KUBE-IPVS-IPS"), true);
    // A rejected packet reaches no virtual server.
    assert!(o.get("ipvs").is_none());
}

#[test]
fn a_node_port_is_decided_by_the_bitmap_port_set() {
    let node = path(IPVS_NODE);
    let doc = trace_json(&[&node, "--dst", "192.168.56.11:30080", "--from", "outside"]);
    let o = &doc["nodes"][0]["outcomes"][0];
    assert_eq!(doc["nodes"][0]["outcomes"].as_array().unwrap().len(), 1);
    let fact = o["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["ipset"] == "KUBE-NODE-PORT-TCP")
        .expect("a KUBE-NODE-PORT-TCP fact")
        .clone();
    assert_eq!(fact["type"], "bitmap:port");
    assert_eq!(fact["key"], "30080");
    assert_eq!(fact["holds"], true);
    // The nat KUBE-NODE-PORT rule matched on it.
    assert!(o["steps"].as_array().unwrap().iter().any(|s| {
        s["rule"]
            .as_str()
            .unwrap()
            .contains("--match-set KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ")
    }));
    assert_eq!(o["ipvs"]["address"], "192.168.56.11:30080");
    // A port no Service has: not in the set, no virtual server.
    let doc = trace_json(&[&node, "--dst", "192.168.56.11:30999", "--from", "outside"]);
    let o = &doc["nodes"][0]["outcomes"][0];
    let fact = o["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["ipset"] == "KUBE-NODE-PORT-TCP")
        .unwrap()
        .clone();
    assert_eq!(fact["holds"], false);
    assert!(o.get("ipvs").is_none());
}

#[test]
fn a_virtual_server_without_real_servers_says_new_connections_reach_no_endpoint() {
    let out = rulelint(&["trace", &path(IPVS_NODE), "--dst", "10.96.50.5:80"], None);
    let text = stdout(&out);
    assert!(
        text.contains("IPVS virtual server TCP 10.96.50.5:80 rr has no real server"),
        "{text}"
    );
}

#[test]
fn set_matches_fork_as_before_without_the_sets_or_with_a_cut_listing() {
    // The iptables-save part alone: each set match is a question.
    let dir = TempDir::new("trace-ipvs-no-sets");
    let rules =
        std::fs::read_to_string(path("corpus/ipvs/healthy-node-iptables-save.txt")).unwrap();
    let file = dir.write("rules.txt", &rules).display().to_string();
    let doc = trace_json(&[&file, "--dst", "10.96.0.10:53", "--proto", "udp"]);
    let outcomes = doc["nodes"][0]["outcomes"].as_array().unwrap();
    assert!(outcomes.len() > 2, "{doc}");
    assert!(outcomes.iter().all(|o| o.get("facts").is_none()));
    assert!(outcomes.iter().any(|o| {
        o["assumptions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "assumed: ipset KUBE-CLUSTER-IP holds the packet's dst,dst")
    }));
    // `ipset list` showing 6 of KUBE-CLUSTER-IP's 7 entries: the hidden one is asked.
    let list = std::fs::read_to_string(path("corpus/ipvs/healthy-node-ipset-list.txt")).unwrap();
    let cut = list.replace("10.96.0.10,tcp:9153\n", "");
    assert_ne!(cut, list);
    let file = dir
        .write("cut.txt", &format!("{rules}{cut}"))
        .display()
        .to_string();
    let doc = trace_json(&[&file, "--dst", "10.96.0.10:9153"]);
    let outcomes = doc["nodes"][0]["outcomes"].as_array().unwrap();
    assert!(outcomes.iter().any(|o| {
        o["assumptions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "assumed: ipset KUBE-CLUSTER-IP holds the packet's dst,dst")
    }));
}

#[test]
fn a_negated_set_match_is_decided_too() {
    let dir = TempDir::new("trace-ipvs-negated");
    let file = dir
        .write(
            "node.txt",
            "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n\
         -A INPUT -m set ! --match-set ALLOWED src -j DROP\nCOMMIT\n\
         create ALLOWED hash:net family inet hashsize 1024 maxelem 65536\n\
         add ALLOWED 10.244.0.0/16\n\
         1: lo: <LOOPBACK,UP> mtu 65536\n    inet 127.0.0.1/8 scope host lo\n\
         2: eth0: <BROADCAST,UP> mtu 1500\n    inet 192.168.56.11/24 scope global eth0\n",
        )
        .display()
        .to_string();
    let verdict = |src: &str| {
        let doc = trace_json(&[
            &file,
            "--dst",
            "192.168.56.11:22",
            "--src",
            src,
            "--from",
            "outside",
        ]);
        let outcomes = doc["nodes"][0]["outcomes"].as_array().unwrap().clone();
        assert_eq!(outcomes.len(), 1, "{doc}");
        assert!(outcomes[0]["assumptions"].as_array().unwrap().is_empty());
        outcomes[0]["verdict"].as_str().unwrap().to_string()
    };
    assert_eq!(verdict("10.244.3.4"), "accept");
    assert_eq!(verdict("198.51.100.7"), "drop");
}

/// A control byte in the input (here in a set's name, in the rule and in the `ipset save`
/// beside it) is written as an escape in the report, so that it cannot drive the terminal.
#[test]
fn control_bytes_of_the_input_are_escaped_in_the_report() {
    let dir = TempDir::new("trace-control-bytes");
    let text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m set --match-set S\x1bX dst -j DROP\nCOMMIT\n\
                create S\x1bX hash:ip family inet hashsize 1024 maxelem 65536\nadd S\x1bX 10.0.0.1\n";
    let file = dir.write("node.txt", text).display().to_string();
    let out = rulelint(&["trace", "--dst", "10.0.0.1:80", &file], None);
    let report = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!report.contains('\x1b'), "{report}");
    assert!(report.contains("--match-set S\\x1bX dst"), "{report}");
    assert!(report.contains("ipset S\\x1bX holds 10.0.0.1"), "{report}");
}

const REDIRECT_RULES: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n\
    :OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n\
    -A PREROUTING -p tcp -m tcp --dport 7200 -j REDIRECT --to-ports 8080\n\
    -A OUTPUT -p tcp -m tcp --dport 7201 -j REDIRECT --to-ports 8080\nCOMMIT\n";

/// The one outcome of a trace: (verdict, destination, assumptions).
fn only_outcome(doc: &serde_json::Value) -> (String, String, Vec<String>) {
    let outcomes = doc["nodes"][0]["outcomes"].as_array().unwrap();
    assert_eq!(outcomes.len(), 1, "{doc}");
    let o = &outcomes[0];
    let assumptions = o["assumptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .collect();
    (
        o["verdict"].as_str().unwrap().into(),
        o["destination"].as_str().unwrap().into(),
        assumptions,
    )
}

/// The one outcome of a REDIRECT on PREROUTING (to port 8080) whose input interface's address
/// the trace does not know: accepted, address unchanged, resting on that assumption.
fn accepted_at_an_unknown_address_of_the_input_interface(doc: &serde_json::Value) {
    let (verdict, destination, assumptions) = only_outcome(doc);
    assert_eq!(
        (verdict.as_str(), destination.as_str()),
        ("accept", "10.60.0.1:8080")
    );
    assert!(
        assumptions
            .iter()
            .any(|a| a.contains("an address of the input interface")),
        "{assumptions:?}"
    );
}

/// The kernel (`nf_nat_redirect.c`) sends a packet REDIRECTed on PREROUTING to the first
/// address of the interface it came in on; 127.0.0.1 only for the host's own packets (nat
/// OUTPUT). Checked with `scripts/check-trace-kernel.sh`: the kernel gave the input
/// interface's first address, 169.254.77.1, where trace said 127.0.0.1.
#[test]
fn redirect_on_prerouting_goes_to_the_input_interfaces_first_address() {
    let dir = TempDir::new("trace-redirect-ip-addr");
    let ip_addr = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n    inet 127.0.0.1/8 scope host lo\n\
         2: eth0@if9: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP group default qlen 1000\n    inet 169.254.77.1/30 scope global eth0\n    inet 192.168.7.1/32 scope global eth0\n\
         3: eth1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP group default qlen 1000\n    inet6 fd00::1/64 scope global\n";
    let file = dir
        .write("node.txt", &format!("{REDIRECT_RULES}{ip_addr}"))
        .display()
        .to_string();
    let from_outside = ["--from", "outside", "--src", "192.0.2.7"];
    let doc = trace_json(&[
        &file,
        "--dst",
        "10.60.0.1:7200",
        "--in",
        "eth0",
        from_outside[0],
        from_outside[1],
        from_outside[2],
        from_outside[3],
    ]);
    let (verdict, destination, _) = only_outcome(&doc);
    assert_eq!(
        (verdict.as_str(), destination.as_str()),
        ("accept", "169.254.77.1:8080")
    );
    // An interface `ip addr` shows whole without an IPv4 address: the kernel drops.
    let doc = trace_json(&[
        &file,
        "--dst",
        "10.60.0.1:7200",
        "--in",
        "eth1",
        from_outside[0],
        from_outside[1],
        from_outside[2],
        from_outside[3],
    ]);
    assert_eq!(only_outcome(&doc).0, "drop");
    // An input interface `ip addr` does not show: an address of it, not an invented one.
    for args in [
        vec![file.as_str(), "--dst", "10.60.0.1:7200", "--in", "eth7"],
        vec![file.as_str(), "--dst", "10.60.0.1:7200"],
    ] {
        let mut args = args;
        args.extend_from_slice(&from_outside);
        let doc = trace_json(&args);
        accepted_at_an_unknown_address_of_the_input_interface(&doc);
        // `ip addr` lists 127.0.0.1 on lo: only the outcome must not name it.
        let outcome = doc["nodes"][0]["outcomes"].to_string();
        assert!(!outcome.contains("127.0.0.1"), "{outcome}");
    }
    // The host's own packet (nat OUTPUT) goes to loopback.
    let doc = trace_json(&[&file, "--dst", "10.60.0.1:7201", "--from", "host"]);
    assert_eq!(only_outcome(&doc).1, "127.0.0.1:8080");
}

/// Without `ip addr`, a REDIRECT on PREROUTING still delivers locally: the routing decision
/// does not ask whether the unchanged address is the node's, nor forward it.
#[test]
fn redirect_on_prerouting_without_ip_addr_is_delivered_locally() {
    let dir = TempDir::new("trace-redirect-rules-only");
    let file = dir.write("node.txt", REDIRECT_RULES).display().to_string();
    let doc = trace_json(&[
        &file,
        "--dst",
        "10.60.0.1:7200",
        "--from",
        "outside",
        "--node-ip",
        "192.168.7.1",
    ]);
    accepted_at_an_unknown_address_of_the_input_interface(&doc);
}

/// nft `redirect`: to loopback on the output hook, to an address of the input interface on
/// prerouting (the nft walk reads no `ip addr`); before, it was "not understood" on both.
#[test]
fn nft_redirect_follows_the_hook() {
    let dir = TempDir::new("trace-nft-redirect");
    let text = "table ip t {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\ttcp dport 7200 redirect to :8080\n\t}\n\
                \tchain out {\n\t\ttype nat hook output priority -100; policy accept;\n\t\ttcp dport 7201 redirect to :8080\n\t}\n}\n";
    let file = dir.write("node.nft", text).display().to_string();
    let doc = trace_json(&[&file, "--dst", "10.60.0.1:7201", "--from", "host"]);
    assert_eq!(only_outcome(&doc).1, "127.0.0.1:8080");
    let doc = trace_json(&[
        &file,
        "--dst",
        "10.60.0.1:7200",
        "--from",
        "outside",
        "--in",
        "eth0",
    ]);
    accepted_at_an_unknown_address_of_the_input_interface(&doc);
    assert!(!doc.to_string().contains("not understood"), "{doc}");
}

/// A 60 KB comment (words of 64 KiB and more are not read) is cut in the human report as
/// `check` cuts a long line (at its snippet reach), saying how much was left out; JSON keeps
/// the whole rule.
#[test]
fn long_input_lines_are_cut_in_the_report_and_whole_in_json() {
    let dir = TempDir::new("trace-long-line");
    let comment = "c".repeat(60_000);
    let text = format!(
        "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m comment --comment \"{comment}\" -j DROP\nCOMMIT\n"
    );
    let file = dir.write("node.txt", &text).display().to_string();
    let out = rulelint(&["trace", "--dst", "10.0.0.1:80", &file], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stdout(&out);
    let longest = report.lines().map(str::len).max().unwrap();
    assert!(longest < 1100, "a line of {longest} bytes");
    assert!(report.contains("more bytes not shown)"), "{report}");
    let doc = trace_json(&["--dst", "10.0.0.1:80", &file]);
    assert!(doc.to_string().contains(&comment));
}
