//! dumpgen's IPVS-mode nodes (`generate_ipvs`) read by rulelint: at several sizes, seeds and
//! nodes a generated node gives no error and no warning, `services` finds the same Service
//! ports (cluster IP, port, protocol) with the same endpoints as the iptables-mode node of the
//! same [`Shape`], and `diff` of the two reports no drift.

use std::collections::BTreeMap;

use rulelint_dumpgen::{Shape, generate, generate_ipvs};
use rulelint_lint::diff::{Group, Node, NodeInput, compare, prepare, report};
use rulelint_lint::kube::doc::with_services_file;
use rulelint_lint::source::check_source;
use rulelint_lint::{Config, Severity};

/// Shapes covering every Service kind the generator makes, with more of the rare ones than the
/// default shape has (Local policy, affinity, source ranges, no endpoints).
fn shapes() -> Vec<Shape> {
    let busy = |services, seed, nodes, node| Shape {
        services,
        endpoints_per_service: 3,
        nodeport_share: 0.2,
        loadbalancer_share: 0.2,
        local_policy_share: 0.5,
        empty_share: 0.05,
        affinity_share: 0.15,
        nodes,
        node,
        seed,
        ..Shape::default()
    };
    vec![
        Shape::default(),
        Shape {
            node: 2,
            seed: 9,
            ..Shape::with_services(400)
        },
        busy(150, 3, 3, 0),
        busy(600, 4, 5, 4),
        busy(3_000, 5, 40, 17),
        // IPv6: `KUBE-6-*` sets, ip6tables-save, `[addr]:port` virtual servers.
        Shape {
            ipv6: true,
            ..busy(400, 6, 3, 1)
        },
    ]
}

/// Shapes whose Services all have distinct endpoint sets, so that the IPVS catalogue (which
/// groups virtual servers by protocol and real servers) finds each Service port on its own.
fn distinct_shapes() -> Vec<Shape> {
    vec![
        Shape::default(),
        Shape {
            node: 2,
            seed: 9,
            ..Shape::with_services(400)
        },
        Shape {
            node: 5,
            seed: 11,
            ..Shape::with_services(2_000)
        },
        Shape {
            ipv6: true,
            node: 1,
            ..Shape::with_services(300)
        },
    ]
}

/// Shapes where two Services share their endpoints (the same pods and target port), or an
/// `externalTrafficPolicy: Local` Service's local endpoints are another Service's: IPVS state
/// alone cannot tell which Service a node port or external address serves.
fn shared_endpoint_shapes() -> Vec<Shape> {
    let mut out = shapes().split_off(2);
    out.push(Shape {
        node: 1,
        seed: 2,
        ..Shape::with_rule_target(10_000)
    });
    out
}

/// (cluster IP, protocol, port) -> sorted endpoint destinations, from `rulelint services`.
fn services(text: &str) -> BTreeMap<(String, String, u64), Vec<String>> {
    with_services_file("node", text, |file, has_content| {
        assert!(has_content);
        let doc = serde_json::to_value(file).expect("services document");
        let mut out = BTreeMap::new();
        for svc in doc["services"].as_array().expect("services") {
            let mut endpoints: Vec<String> = svc["endpoints"]
                .as_array()
                .expect("endpoints")
                .iter()
                .map(|e| e["destination"].as_str().expect("destination").to_owned())
                .collect();
            // iptables mode lists an endpoint of a ClientIP-affinity Service twice (its
            // `-m recent` rule and its pick): compare sets.
            endpoints.sort();
            endpoints.dedup();
            let addresses = svc["addresses"].as_array().expect("addresses");
            // One Service port, one cluster IP: IPVS Services that share endpoints stay apart.
            let cluster_ips = addresses
                .iter()
                .filter(|a| a["kind"] == "cluster-ip")
                .count();
            assert!(
                cluster_ips <= 1,
                "{cluster_ips} cluster IPs in one Service port: {svc}"
            );
            for a in addresses {
                if a["kind"] == "cluster-ip" {
                    let key = (
                        a["address"].as_str().expect("address").to_owned(),
                        a["protocol"].as_str().expect("protocol").to_owned(),
                        a["port"].as_u64().expect("port"),
                    );
                    let previous = out.insert(key.clone(), endpoints.clone());
                    assert!(previous.is_none(), "{key:?} listed twice");
                }
            }
        }
        out
    })
}

#[test]
fn generated_ipvs_nodes_check_clean() {
    for shape in shapes() {
        let text = generate_ipvs(&shape);
        let checked = check_source(&text, &Config::default());
        let bad: Vec<String> = checked
            .diagnostics
            .iter()
            .filter(|d| d.severity >= Severity::Warning)
            .map(|d| d.render("node", &text, false))
            .collect();
        assert!(
            bad.is_empty(),
            "{} services, seed {}, node {}:\n{}",
            shape.services,
            shape.seed,
            shape.node,
            bad.join("\n")
        );
    }
}

#[test]
fn generated_ipvs_nodes_list_the_iptables_nodes_services() {
    for shape in shapes() {
        let ipvs = services(&generate_ipvs(&shape));
        let iptables = services(&generate(&shape));
        assert_eq!(ipvs.len(), shape.services, "seed {}", shape.seed);
        assert_eq!(ipvs, iptables, "seed {}", shape.seed);
    }
}

/// Whether `rulelint diff` of the two nodes finds no drift, and its text report.
fn agree(iptables: &str, ipvs: &str) -> (bool, String) {
    let named = [("iptables", iptables), ("ipvs", ipvs)];
    let inputs: Vec<NodeInput<'_>> = named.iter().map(|(_, t)| NodeInput::read(t)).collect();
    let nodes: Vec<Node<'_>> = prepare(named.iter().map(|(n, _)| n.to_string()).zip(&inputs));
    let group = Group::from_nodes(&nodes);
    let comparison = compare(&group, &nodes);
    let doc = report::document(&comparison, &["iptables", "ipvs"]);
    let json = serde_json::to_value(&doc).expect("diff document");
    (json["agree"] == true, report::human(&doc, false))
}

fn drift(shapes: Vec<Shape>) -> Vec<String> {
    let mut failed = Vec::new();
    for shape in shapes {
        let (agree, text) = agree(&generate(&shape), &generate_ipvs(&shape));
        if !agree {
            failed.push(format!("seed {}:\n{text}", shape.seed));
        }
    }
    failed
}

#[test]
fn generated_ipvs_node_has_no_drift_from_its_iptables_twin() {
    let failed = drift(distinct_shapes());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Across modes, Services that share pods: the node-port and external virtual servers of a
/// Local-policy Service hold only the node's own endpoints (which may equal another Service's
/// whole set), a Cluster one's equal several cluster IPs' real servers. IPVS state alone
/// cannot tell which Service they serve; the iptables node's names can. (Before: 24 drifting
/// lines on these shapes.)
#[test]
fn shared_endpoints_are_no_drift() {
    let failed = drift(shared_endpoint_shapes());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `diff` of two IPVS nodes of one cluster, for each shape (the node and the next one).
fn ipvs_pair_drift(shapes: impl IntoIterator<Item = Shape>) -> Vec<String> {
    let mut failed = Vec::new();
    for shape in shapes {
        let other = Shape {
            node: shape.node + 1,
            ..shape.clone()
        };
        let (agree, text) = agree(&generate_ipvs(&shape), &generate_ipvs(&other));
        if !agree {
            failed.push(format!("seed {}:\n{text}", shape.seed));
        }
    }
    failed
}

/// Between IPVS nodes of one cluster, Services that share pods are healthy: a Local group
/// that cannot join one cluster IP holds local endpoints, which differ per node by design.
/// (Before, these shapes gave `*:PORT DNATs to ... on one node only`.)
#[test]
fn ipvs_nodes_of_one_cluster_with_shared_endpoints_do_not_drift() {
    let shapes = shared_endpoint_shapes()
        .into_iter()
        .filter(|s| matches!(s.seed, 2 | 4));
    let failed = ipvs_pair_drift(shapes);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// In the seed-3 shape a node-port group's local endpoints fit one cluster IP on one node and
/// several on the other; in the seed-5 shape a split-off Local group has no local endpoint on
/// one node. Neither is drift: the group joins the Service port the other node lists its node
/// port under, and a Local group apart from its cluster IP is dispatched by that cluster IP.
/// (Before: 2 and 19 drifting lines.)
#[test]
fn ipvs_nodes_with_per_node_ambiguous_local_groups_do_not_drift() {
    let shapes = shared_endpoint_shapes()
        .into_iter()
        .filter(|s| matches!(s.seed, 3 | 5));
    let failed = ipvs_pair_drift(shapes);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn a_dropped_real_server_is_drift() {
    // The test above can fail: remove one real server and the diff must see it.
    let shape = Shape::default();
    let ipvs = generate_ipvs(&shape);
    let Some(at) = ipvs.find("\n  -> 1") else {
        panic!("no real server in the generated node");
    };
    let end = ipvs[at + 1..].find('\n').map_or(ipvs.len(), |e| at + 1 + e);
    let broken = format!("{}{}", &ipvs[..at], &ipvs[end..]);
    let (agree, text) = agree(&generate(&shape), &broken);
    assert!(!agree, "{text}");
}
