//! The node diff with nodes in kube-proxy's IPVS mode: the same cluster's node in iptables,
//! nftables and IPVS mode agrees at the Service level; drift in the IPVS state shows under the
//! names the other modes give; a summary of an IPVS node compares as its dump does.

use rulelint_lint::diff::{FactOptions, Group, Node, NodeFacts, NodeInput, compare, prepare};
use rulelint_lint::diff::{NodeBackend, report};
use rulelint_lint::summary;
use std::path::Path;

fn corpus(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../corpus")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The text report (no colour) and JSON document of named texts compared.
fn diff(named: &[(&str, &str)]) -> (String, serde_json::Value) {
    let inputs: Vec<NodeInput<'_>> = named.iter().map(|(_, t)| NodeInput::read(t)).collect();
    let nodes: Vec<Node<'_>> = prepare(named.iter().map(|(n, _)| n.to_string()).zip(&inputs));
    let group = Group::from_nodes(&nodes);
    let comparison = compare(&group, &nodes);
    let paths: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
    let doc = report::document(&comparison, &paths);
    (
        report::human(&doc, false),
        serde_json::to_value(&doc).unwrap(),
    )
}

fn ipvs_twin() -> String {
    corpus("diff/ipvs-vs-iptables/node-b.txt")
}

#[test]
fn one_node_in_three_modes_agrees_at_the_service_level() {
    let iptables = corpus("kube-pairs/small-cluster/iptables.txt");
    let nft = corpus("kube-pairs/small-cluster/nft.txt");
    let ipvs = ipvs_twin();
    let (text, doc) = diff(&[("iptables", &iptables), ("nft", &nft), ("ipvs", &ipvs)]);
    assert_eq!(doc["agree"], true, "{text}");
    assert!(text.contains("node-b is in IPVS mode"), "{text}");
}

#[test]
fn ipvs_drift_shows_under_the_other_nodes_names() {
    let iptables = corpus("kube-pairs/small-cluster/iptables.txt");
    let ipvs = ipvs_twin()
        // The web Service's second pod dropped from the cluster-IP virtual server only.
        .replacen(
            "TCP  10.96.10.10:80 rr\n  -> 10.244.1.5:8080              Masq    1      0          0         \n  -> 10.244.2.7:8080              Masq    1      0          0         \n",
            "TCP  10.96.10.10:80 rr\n  -> 10.244.1.5:8080              Masq    1      0          0         \n",
            1,
        )
        // The metrics Service's virtual server is gone.
        .replacen("TCP  10.96.40.40:8080 rr\n", "", 1);
    assert_ne!(ipvs, ipvs_twin(), "the edits apply");
    let (text, doc) = diff(&[("node-a", &iptables), ("node-b", &ipvs)]);
    assert_eq!(doc["agree"], false);
    assert!(
        text.contains("default/web:http DNATs to 10.244.2.7:8080 on node-a only"),
        "{text}"
    );
    assert!(
        text.contains("Service port ops/metrics:web has chains on node-a only"),
        "{text}"
    );
    // The external IP's virtual server still has both real servers, which no cluster IP
    // has: it joins the Service port node-a lists 192.0.2.50 under, and the cluster IP tells
    // that port's endpoints (its node port's or external IP's must not hide the lost pod).
    assert!(!text.contains("192.0.2.50"), "{text}");
    assert_eq!(doc["summary"]["drift"], 2, "{text}");
}

#[test]
fn real_servers_all_at_weight_zero_reject_new_connections() {
    let a = corpus("diff/ipvs-stale-real-server/node-a.txt");
    let b = a.replace("# node: node-a", "# node: node-b").replace(
        "  -> 10.244.2.12:8443             Masq    1 ",
        "  -> 10.244.2.12:8443             Masq    0 ",
    );
    let (text, _) = diff(&[("node-a", &a), ("node-b", &b)]);
    assert!(
        text.contains(
            "Service port 10.96.200.20:443/tcp: is dispatched on node-a; has no real server that takes new connections on node-b"
        ),
        "{text}"
    );
}

#[test]
fn an_ipvsadm_listing_alone_is_a_node() {
    let listing = corpus("ipvs/healthy-node-ipvsadm.txt");
    let input = NodeInput::read(&listing);
    assert!(!input.has_no_content());
    let node = Node::from_input("n", &input);
    assert_eq!(node.backend, NodeBackend::Ipvs);
    assert_eq!(node.parse_errors, 0);
    let facts = NodeFacts::from_node(&node, FactOptions::default());
    assert_eq!(facts.info.backend.name(), "ipvs");
    // Ten virtual servers: the UDP and TCP DNS ports, the API server, the metrics port, the
    // endpointless Service, web (cluster IP + node port), front (cluster IP, node port, load
    // balancer): seven Service ports.
    let services = facts
        .catalog
        .as_ref()
        .unwrap()
        .iter()
        .filter(|f| {
            matches!(
                f.subject,
                rulelint_lint::diff::facts::SubjectOf::Service { .. }
            )
        })
        .count();
    assert_eq!(services, 7);
}

#[test]
fn a_summary_of_an_ipvs_node_compares_as_its_dump() {
    let a = corpus("diff/ipvs-stale-real-server/node-a.txt");
    let b = corpus("diff/ipvs-stale-real-server/node-b.txt");
    let iptables = corpus("kube-pairs/small-cluster/iptables.txt");
    let names = corpus("diff/ipvs-names-resolved/node-b.txt");
    for texts in [[&a, &b], [&b, &iptables], [&names, &a]] {
        let inputs: Vec<NodeInput<'_>> = texts.iter().map(|t| NodeInput::read(t)).collect();
        let nodes = prepare(["x".to_string(), "y".to_string()].into_iter().zip(&inputs));
        let options = FactOptions {
            digests: true,
            catalog: true,
        };
        let mut from_dumps = Group::new(2);
        let mut from_summaries = Group::new(2);
        for (i, node) in nodes.iter().enumerate() {
            let facts = NodeFacts::from_node(node, options);
            let json = summary::to_json(&facts);
            let back = summary::from_json(&json).expect("summary reads back");
            assert_eq!(back.catalog, facts.catalog);
            from_dumps.insert(i, facts);
            from_summaries.insert(i, back);
        }
        let render = |g: &Group| {
            let comparison = g.compare();
            let doc = report::document(&comparison, &["x", "y"]);
            report::human(&doc, false)
        };
        assert_eq!(render(&from_dumps), render(&from_summaries));
    }
}

/// `corpus/diff/ipvs-shared-pods-local`: a Local node port whose local endpoint is another
/// Service's whole set is no drift (the case's test), but losing that virtual server is.
#[test]
fn a_lost_local_node_port_between_nodes_sharing_pods_is_drift() {
    let a = corpus("diff/ipvs-shared-pods-local/node-a.txt");
    let b = corpus("diff/ipvs-shared-pods-local/node-b.txt");
    let vs = "TCP  192.168.10.12:30700 rr\n  -> 10.244.2.6:8080              Masq    1      0          0         \n";
    let lost = b.replacen(vs, "", 1);
    assert_ne!(lost, b, "the edit applies");
    let (text, doc) = diff(&[("node-a", &a), ("node-b", &lost)]);
    assert_eq!(doc["agree"], false, "{text}");
    assert!(
        text.contains("Service port *:30700/tcp has virtual servers on node-a only"),
        "{text}"
    );
}

/// The same node's `services`: the Local node port whose local endpoint is all of
/// `shop-canary`'s is not listed under `shop-canary`'s cluster IP.
#[test]
fn a_local_node_port_does_not_join_a_service_by_equal_real_servers() {
    let a = corpus("diff/ipvs-shared-pods-local/node-a.txt");
    let doc = rulelint_lint::kube::doc::with_services_file("node-a", &a, |file, _| {
        serde_json::to_value(file).expect("services document")
    });
    for svc in doc["services"].as_array().expect("services") {
        let addresses = svc["addresses"].as_array().expect("addresses");
        let canary = addresses.iter().any(|a| a["address"] == "10.96.71.71");
        let node_port = addresses.iter().any(|a| a["port"] == 30700);
        assert!(!(canary && node_port), "{svc}");
    }
}

/// `ipvsadm -L` (no `-n`) names no addresses: its node's Service ports are left out with a
/// per-node note, whichever nodes it meets; a dropped real server on the `-Ln` nodes is still
/// drift among them.
#[test]
fn an_ipvsadm_listing_without_n_is_left_out_of_the_service_comparison() {
    let a = corpus("diff/ipvs-names-resolved/node-a.txt");
    let names = corpus("diff/ipvs-names-resolved/node-b.txt");
    let iptables = corpus("kube-pairs/small-cluster/iptables.txt");
    let note = "node-b: IPVS listing without -n (`ipvsadm -L`): addresses unknown, Service comparison skipped for this node";
    for other in [&a, &iptables] {
        let (text, doc) = diff(&[("node-a", other), ("node-b", &names)]);
        assert_eq!(doc["agree"], true, "{text}");
        assert!(text.contains(note), "{text}");
        assert!(!text.contains("*:?"), "{text}");
    }
    let c = a.replace("# node: node-a", "# node: node-c").replacen(
        "  -> 10.244.2.9:8080              Masq    1      0          0         \n",
        "",
        1,
    );
    assert_ne!(
        c,
        a.replace("# node: node-a", "# node: node-c"),
        "the edit applies"
    );
    let (text, doc) = diff(&[("node-a", &a), ("node-b", &names), ("node-c", &c)]);
    assert_eq!(doc["agree"], false, "{text}");
    assert!(text.contains("10.244.2.9:8080"), "{text}");
    assert!(text.contains(note), "{text}");
}
