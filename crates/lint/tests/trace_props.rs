//! Properties of `rulelint trace`:
//! - on generated clusters (dumpgen, every layout and family), a trace to each Service port's
//!   cluster IP from a pod gives exactly its endpoints, each with probability 1/n; a trace to
//!   its node port from outside gives what its traffic policy says (Cluster: every endpoint;
//!   Local: the node's endpoints, or a drop when it has none);
//! - random packets through random dumps (rules drawn from every match and target the tracer
//!   knows, jumps and gotos that loop, and arbitrary text) never panic and always end.

use proptest::prelude::*;
use rulelint_dumpgen::{Layout, Shape, generate};
use rulelint_lint::kube::{AddressKind, KubeModel, Service};
use rulelint_lint::trace::{
    Endpoint, NodeTrace, Origin, PacketSpec, TraceNode, Verdict, protocol_name, trace,
};
use rulelint_parser::parse;
use rulelint_parser::views::NatAddress;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// `ip:port` of an endpoint's DNAT.
fn nat_endpoint(text: &str) -> (IpAddr, Option<u16>) {
    let n = NatAddress::parse(text).expect("DNAT destination");
    (n.first.expect("address"), n.ports.map(|p| p.first))
}

/// The delivered destinations of the outcomes that assume no prior state (every assumption
/// taken as "not": no session affinity entry), with their probabilities.
fn destinations(t: &NodeTrace) -> BTreeMap<(IpAddr, Option<u16>), f64> {
    let mut out = BTreeMap::new();
    for o in &t.outcomes {
        if o.assumptions.iter().any(|a| a.holds) {
            continue;
        }
        assert!(
            matches!(o.verdict, Verdict::Accept | Verdict::Forward),
            "a Service trace ended in {:?}",
            o.verdict
        );
        *out.entry((o.destination.endpoint.ip, o.destination.endpoint.port))
            .or_insert(0.0) += o.probability;
    }
    out
}

fn expected(
    model: &KubeModel<'_>,
    jumps: &[rulelint_lint::kube::EndpointJump],
) -> Vec<(IpAddr, Option<u16>)> {
    let mut eps: Vec<_> = Service::balanced(jumps)
        .filter_map(|j| model.endpoint(j))
        .filter_map(|e| e.destination)
        .map(nat_endpoint)
        .collect();
    eps.sort();
    eps.dedup();
    eps
}

fn check_equal_split(
    what: &str,
    got: &BTreeMap<(IpAddr, Option<u16>), f64>,
    want: &[(IpAddr, Option<u16>)],
) {
    let keys: Vec<_> = got.keys().copied().collect();
    assert_eq!(keys, want, "{what}: destinations");
    let n = want.len() as f64;
    for (k, p) in got {
        assert!(
            (p - 1.0 / n).abs() < 1e-6,
            "{what}: {k:?} has probability {p}, not 1/{n}"
        );
    }
}

/// Checks one generated node; returns how many Local node ports had local endpoints, and how
/// many had none.
fn check_cluster(shape: &Shape) -> (usize, usize) {
    let dump = generate(shape);
    let parsed = parse(&dump);
    let node = TraceNode::new("gen", &parsed.ruleset);
    let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
    let model = KubeModel::build(&parsed.ruleset, &graph);
    let node_ip: IpAddr = if shape.ipv6 {
        format!("fd00:192:168::{:x}", 0xa + shape.node)
            .parse()
            .unwrap()
    } else {
        format!("192.168.0.{}", 10 + shape.node).parse().unwrap()
    };
    let mut cluster_checked = 0;
    let mut nodeport_checked = 0;
    let mut local = (0, 0);
    for service in &model.services {
        if service.endpoints.is_empty() {
            continue;
        }
        let name = service.display_name(node.set).into_owned();
        let all = expected(&model, &service.endpoints);
        for address in &service.addresses {
            let protocol = address
                .protocol
                .and_then(PacketSpec::parse_protocol)
                .unwrap_or(6);
            let Some(port) = address.port.map(|p| p.first) else {
                continue;
            };
            match address.kind {
                AddressKind::ClusterIp => {
                    let Some(net) = address.address else { continue };
                    let mut spec = PacketSpec::to(Endpoint {
                        ip: net.addr(),
                        port: Some(port),
                    });
                    spec.protocol = Some(protocol);
                    let t = trace(&node, &spec);
                    assert!(t.limits.is_empty(), "{name}: limits {:?}", t.limits);
                    check_equal_split(
                        &format!(
                            "{name} cluster IP {}/{}",
                            net.addr(),
                            protocol_name(protocol)
                        ),
                        &destinations(&t),
                        &all,
                    );
                    cluster_checked += 1;
                }
                AddressKind::NodePort => {
                    let mut spec = PacketSpec::to(Endpoint {
                        ip: node_ip,
                        port: Some(port),
                    });
                    spec.protocol = Some(protocol);
                    spec.from = Some(Origin::Outside);
                    spec.node_ips.push(node_ip);
                    let t = trace(&node, &spec);
                    let what = format!("{name} node port {port}");
                    let local_policy = service.chains.local.is_some()
                        || !service.no_local_endpoints_rules.is_empty();
                    let want = if local_policy {
                        expected(&model, &service.local_endpoints)
                    } else {
                        all.clone()
                    };
                    if local_policy {
                        if want.is_empty() {
                            local.1 += 1;
                        } else {
                            local.0 += 1;
                        }
                    }
                    if want.is_empty() {
                        assert!(
                            t.outcomes.iter().all(|o| o.verdict == Verdict::Drop),
                            "{what}: Local policy without local endpoints must drop: {:?}",
                            t.outcomes.iter().map(|o| o.verdict).collect::<Vec<_>>()
                        );
                    } else {
                        check_equal_split(&what, &destinations(&t), &want);
                    }
                    nodeport_checked += 1;
                }
                _ => {}
            }
        }
    }
    assert!(
        cluster_checked > 10,
        "{shape:?}: only {cluster_checked} cluster IPs"
    );
    assert!(nodeport_checked > 0, "{shape:?}: no node port");
    local
}

#[test]
fn generated_clusters_trace_to_their_endpoints() {
    let mut local = (0, 0);
    for layout in [Layout::Modern, Layout::Legacy] {
        for ipv6 in [false, true] {
            for (seed, node) in [(1, 0), (7, 2)] {
                let (with, without) = check_cluster(&Shape {
                    services: 120,
                    endpoints_per_service: 4,
                    nodeport_share: 0.3,
                    loadbalancer_share: 0.1,
                    local_policy_share: 0.5,
                    empty_share: 0.05,
                    affinity_share: 0.1,
                    nodes: 4,
                    node,
                    ipv6,
                    layout,
                    seed,
                    ..Shape::default()
                });
                local.0 += with;
                local.1 += without;
            }
        }
    }
    assert!(
        local.0 > 0 && local.1 > 0,
        "Local node ports with/without local endpoints: {local:?}"
    );
}

/// One match, as iptables-save writes it, from everything the tracer reads.
fn a_match() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("-p tcp -m tcp --dport 80".to_string()),
        Just("-p udp -m udp --sport 1:1024".to_string()),
        Just("! -p tcp".to_string()),
        Just("-s 10.0.0.0/8".to_string()),
        Just("! -d 10.1.2.3/32".to_string()),
        Just("-d 10.96.0.10/32".to_string()),
        Just("-i eth+".to_string()),
        Just("! -o cni0".to_string()),
        Just("-m multiport --dports 22,80:90".to_string()),
        Just("-m addrtype --dst-type LOCAL".to_string()),
        Just("-m addrtype ! --src-type LOCAL".to_string()),
        Just("-m mark --mark 0x4000/0x4000".to_string()),
        Just("-m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT".to_string()),
        Just("-m comment --comment \"x y\"".to_string()),
        Just("-m statistic --mode random --probability 0.25000000000".to_string()),
        Just("-m recent --rcheck --name r --rsource".to_string()),
        Just("-m set --match-set s src".to_string()),
        Just("-m physdev --physdev-in eth0".to_string()),
        Just("-m foo --bar".to_string()),
        Just("-f".to_string()),
        Just("-p tcp --dport".to_string()),
    ]
}

fn a_target(chains: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        Just("-j ACCEPT".to_string()),
        Just("-j DROP".to_string()),
        Just("-j REJECT".to_string()),
        Just("-j RETURN".to_string()),
        Just("-j LOG".to_string()),
        Just("-j MARK --set-xmark 0x4000/0x4000".to_string()),
        Just("-j MARK --and-mark 0x0".to_string()),
        Just("-j DNAT --to-destination 10.244.1.5:8080".to_string()),
        Just("-j DNAT --to-destination bad".to_string()),
        Just("-j SNAT --to-source 1.2.3.4".to_string()),
        Just("-j MASQUERADE".to_string()),
        Just("-j REDIRECT --to-ports 99".to_string()),
        Just("-j NFQUEUE".to_string()),
        Just("-j NOWHERE".to_string()),
        Just(String::new()),
        (0..chains).prop_map(|c| format!("-j C{c}")),
        (0..chains).prop_map(|c| format!("-g C{c}")),
    ]
}

fn a_dump() -> impl Strategy<Value = String> {
    let rule = (
        0usize..9,
        proptest::collection::vec(a_match(), 0..3),
        a_target(4),
    );
    (
        proptest::collection::vec(rule, 0..40),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(rules, drop_policy, no_commit)| {
            let builtins = ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];
            let mut out = String::new();
            for table in ["raw", "mangle", "nat", "filter"] {
                out.push_str(&format!("*{table}\n"));
                for b in builtins {
                    let policy = if drop_policy && table == "filter" {
                        "DROP"
                    } else {
                        "-"
                    };
                    out.push_str(&format!(":{b} {policy} [0:0]\n"));
                }
                for c in 0..4 {
                    out.push_str(&format!(":C{c} - [0:0]\n"));
                }
                for (chain, matches, target) in &rules {
                    let chain = if *chain < 5 {
                        builtins[*chain].to_string()
                    } else {
                        format!("C{}", chain - 5)
                    };
                    out.push_str(&format!("-A {chain} {} {target}\n", matches.join(" ")));
                }
                if !no_commit {
                    out.push_str("COMMIT\n");
                }
            }
            out
        })
}

fn a_spec() -> impl Strategy<Value = PacketSpec> {
    (
        prop_oneof![
            Just("10.96.0.10:53"),
            Just("10.1.2.3:80"),
            Just("127.0.0.1:22"),
            Just("192.168.0.10:30080"),
            Just("10.244.1.5"),
            Just("[fd00::1]:80"),
        ],
        prop_oneof![Just(6u8), Just(17), Just(1), Just(132)],
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(dst, proto, from, iface, established, node_ip)| {
            let mut spec = PacketSpec::to(dst.parse().unwrap());
            spec.protocol = Some(proto);
            spec.from = Some([Origin::Pod, Origin::Outside, Origin::Host][usize::from(from)]);
            if iface {
                spec.in_interface = Some("eth0".into());
                spec.out_interface = Some("cni0".into());
            }
            if established {
                spec.state = Some(rulelint_lint::trace::ConnState::Established);
            }
            if node_ip {
                spec.node_ips.push("192.168.0.10".parse().unwrap());
            }
            spec
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300)))]

    #[test]
    fn random_dumps_never_panic(dump in a_dump(), spec in a_spec()) {
        let parsed = parse(&dump);
        let node = TraceNode::new("n", &parsed.ruleset);
        let t = trace(&node, &spec);
        prop_assert!(!t.outcomes.is_empty());
        for o in &t.outcomes {
            prop_assert!(o.probability > 0.0 && o.probability <= 1.0 + 1e-9);
        }
        let doc = rulelint_lint::trace::report::document(vec![
            rulelint_lint::trace::report::node_doc(&node, "n.txt", &t),
        ]);
        let _ = rulelint_lint::trace::report::human(&doc);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}", spec in a_spec()) {
        let parsed = parse(&text);
        let node = TraceNode::new("n", &parsed.ruleset);
        let _ = trace(&node, &spec);
    }
}
