//! Properties of `rulelint trace` on nftables nodes:
//! - dumpgen prints one cluster as an iptables node and as an nftables node: for every Service
//!   port, a trace to its cluster IP from a pod gives exactly its endpoints with 1/n each on the
//!   nftables node, and the same delivered destinations, probabilities and verdicts as on the
//!   iptables node; a trace to its node port from outside gives the same answer on both;
//! - random listings (statements the tracer knows and does not, loops) never panic and end.

use proptest::prelude::*;
use rulelint_dumpgen::{Layout, NftForm, Shape, generate, generate_nft};
use rulelint_lint::kube::{AddressKind, KubeModel, Service};
use rulelint_lint::trace::nft::{NftTraceNode, trace_nft};
use rulelint_lint::trace::{
    Endpoint, NodeTrace, Origin, PacketSpec, TraceNode, Verdict, protocol_name, trace,
};
use rulelint_parser::views::NatAddress;
use std::collections::BTreeMap;
use std::net::IpAddr;

type Dest = (IpAddr, Option<u16>);

/// What a trace answers, comparable across backends: per verdict and destination, the summed
/// probability of the outcomes that assume no prior state (no session-affinity entry).
fn answer(t: &NodeTrace) -> BTreeMap<(&'static str, Dest), u64> {
    let mut out = BTreeMap::new();
    for o in &t.outcomes {
        if o.assumptions.iter().any(|a| a.holds) {
            continue;
        }
        let key = (
            o.verdict.as_str(),
            (o.destination.endpoint.ip, o.destination.endpoint.port),
        );
        *out.entry(key).or_insert(0.0) += o.probability;
    }
    // Rounded, so the two backends' float sums compare.
    out.into_iter()
        .map(|(k, p)| (k, (p * 1e6).round() as u64))
        .collect()
}

fn check_cluster(shape: &Shape) -> usize {
    let ipt_text = generate(shape);
    let nft_text = generate_nft(shape, NftForm::List);
    let ipt = rulelint_parser::parse(&ipt_text);
    let nft = rulelint_nft::parse(&nft_text);
    assert!(nft.diagnostics.is_empty(), "{:?}", nft.diagnostics);
    let ipt_node = TraceNode::new("iptables", &ipt.ruleset);
    let nft_node = NftTraceNode::new("nftables", &nft.ruleset);
    let node_ip: IpAddr = if shape.ipv6 {
        format!("fd00:192:168::{:x}", 0xa + shape.node)
            .parse()
            .unwrap()
    } else {
        format!("192.168.0.{}", 10 + shape.node).parse().unwrap()
    };
    let graph = rulelint_parser::ChainGraph::build(&ipt.ruleset);
    let model = KubeModel::build(&ipt.ruleset, &graph);
    let mut checked = 0;
    for service in &model.services {
        let name = service.display_name(ipt_node.set).into_owned();
        let mut endpoints: Vec<Dest> = Service::balanced(&service.endpoints)
            .filter_map(|j| model.endpoint(j))
            .filter_map(|e| e.destination)
            .filter_map(|d| {
                let n = NatAddress::parse(d).ok()?;
                Some((n.first?, n.ports.map(|p| p.first)))
            })
            .collect();
        endpoints.sort();
        endpoints.dedup();
        for address in &service.addresses {
            let protocol = address
                .protocol
                .and_then(PacketSpec::parse_protocol)
                .unwrap_or(6);
            let Some(port) = address.port.map(|p| p.first) else {
                continue;
            };
            let mut spec = match address.kind {
                AddressKind::ClusterIp => {
                    let Some(net) = address.address else { continue };
                    PacketSpec::to(Endpoint {
                        ip: net.addr(),
                        port: Some(port),
                    })
                }
                AddressKind::NodePort => {
                    let mut spec = PacketSpec::to(Endpoint {
                        ip: node_ip,
                        port: Some(port),
                    });
                    spec.from = Some(Origin::Outside);
                    spec.node_ips.push(node_ip);
                    spec
                }
                _ => continue,
            };
            spec.protocol = Some(protocol);
            // Both nodes then know the node's addresses alike (the nftables listing shows them
            // in `nodeport-ips`, the iptables dump only with `--nodeport-addresses`).
            if !spec.node_ips.contains(&node_ip) {
                spec.node_ips.push(node_ip);
            }
            let what = format!(
                "{name} {:?} {}/{}",
                address.kind,
                spec.dst,
                protocol_name(protocol)
            );
            let on_nft = trace_nft(&nft_node, &spec);
            let on_ipt = trace(&ipt_node, &spec);
            assert!(
                on_nft.limits.is_empty(),
                "{what}: limits {:?}",
                on_nft.limits
            );
            let nft_answer = answer(&on_nft);
            assert_eq!(
                nft_answer,
                answer(&on_ipt),
                "{what}: the nftables node answers differently from the iptables node"
            );
            if address.kind == AddressKind::ClusterIp && !endpoints.is_empty() {
                let n = endpoints.len() as f64;
                let want: BTreeMap<_, _> = endpoints
                    .iter()
                    .map(|d| {
                        let verdict = if d.0 == node_ip { "accept" } else { "forward" };
                        ((verdict, *d), (1e6 / n).round() as u64)
                    })
                    .collect();
                assert_eq!(
                    nft_answer, want,
                    "{what}: not its endpoints with 1/{n} each"
                );
            }
            if address.kind == AddressKind::ClusterIp && endpoints.is_empty() {
                assert!(
                    on_nft
                        .outcomes
                        .iter()
                        .all(|o| matches!(o.verdict, Verdict::Reject | Verdict::Drop)),
                    "{what}: a Service without endpoints must be refused"
                );
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn nftables_nodes_trace_like_the_iptables_node_of_the_same_cluster() {
    let mut checked = 0;
    for ipv6 in [false, true] {
        for (seed, node) in [(1, 0), (7, 2)] {
            checked += check_cluster(&Shape {
                services: 80,
                endpoints_per_service: 4,
                nodeport_share: 0.3,
                loadbalancer_share: 0.1,
                local_policy_share: 0.5,
                empty_share: 0.1,
                affinity_share: 0.1,
                nodes: 4,
                node,
                ipv6,
                layout: Layout::Modern,
                seed,
                ..Shape::default()
            });
        }
    }
    assert!(checked > 200, "only {checked} addresses traced");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_generated_clusters_agree(seed in 0u64..10_000, node in 0u32..3, ipv6 in any::<bool>()) {
        check_cluster(&Shape {
            services: 20,
            endpoints_per_service: 3,
            nodeport_share: 0.4,
            loadbalancer_share: 0.2,
            local_policy_share: 0.5,
            empty_share: 0.2,
            affinity_share: 0.2,
            nodes: 3,
            node,
            ipv6,
            layout: Layout::Modern,
            seed,
            ..Shape::default()
        });
    }
}

/// One rule of a random listing.
fn a_rule() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ip daddr 10.96.0.0/12 jump a".to_string()),
        Just("ip saddr != 10.0.0.0/8 goto b".to_string()),
        Just("ip daddr . meta l4proto . th dport vmap @m".to_string()),
        Just("numgen random mod 3 vmap { 0 : goto a, 1 : jump b, 2 : goto c }".to_string()),
        Just("numgen random mod 1000000 vmap { 0 : goto a }".to_string()),
        Just("tcp dport { 80, 443 } accept".to_string()),
        Just("fib daddr type local jump c".to_string()),
        Just("meta mark set meta mark | 0x4000".to_string()),
        Just("meta mark & 0x4000 == 0x4000 return".to_string()),
        Just("ct state new drop".to_string()),
        Just("iifname \"eth*\" reject".to_string()),
        Just("ip saddr @affinity-x goto a".to_string()),
        Just("update @affinity-x { ip saddr }".to_string()),
        Just("meta l4proto tcp dnat to 10.1.2.3:80".to_string()),
        Just(
            "dnat to numgen random mod 2 map { 0 : 10.0.0.1 . 80, 1 : 10.0.0.2 . 81 }".to_string()
        ),
        Just("masquerade".to_string()),
        Just("limit rate 5/second accept".to_string()),
        Just("frobnicate the packet".to_string()),
        Just("jump nowhere".to_string()),
        Just("return".to_string()),
        Just("goto a".to_string()),
        "[a-z0-9 .:@{}/-]{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_listings_never_panic_and_end(
        chains in prop::collection::vec(prop::collection::vec(a_rule(), 0..5), 4),
        dport in 1u16..1000,
        host in any::<bool>(),
    ) {
        let names = ["pre", "a", "b", "c"];
        let mut text = String::from(
            "table ip t {\n\tmap m {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\
             \t\telements = { 10.96.0.1 . tcp . 80 : goto a }\n\t}\n\tset affinity-x {\n\
             \t\ttype ipv4_addr\n\t\tflags dynamic,timeout\n\t}\n",
        );
        for (name, rules) in names.iter().zip(&chains) {
            text.push_str(&format!("\tchain {name} {{\n"));
            if *name == "pre" {
                text.push_str("\t\ttype nat hook prerouting priority dstnat; policy accept;\n");
            }
            for r in rules {
                text.push_str(&format!("\t\t{r}\n"));
            }
            text.push_str("\t}\n");
        }
        text.push_str("\tchain out {\n\t\ttype filter hook output priority 0; policy drop;\n\t\tjump a\n\t}\n}\n");
        let parsed = rulelint_nft::parse(&text);
        let node = NftTraceNode::new("n", &parsed.ruleset);
        let mut spec = PacketSpec::to(Endpoint { ip: "10.96.0.1".parse().unwrap(), port: Some(dport) });
        if host {
            spec.from = Some(Origin::Host);
        }
        let t = trace_nft(&node, &spec);
        prop_assert!(!t.outcomes.is_empty());
        let total: f64 = t.outcomes.iter().map(|o| o.probability).sum();
        prop_assert!(total.is_finite());
    }
}

fn trace_listing(text: &str, spec: &PacketSpec) -> NodeTrace {
    let parsed = rulelint_nft::parse(text);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    let node = NftTraceNode::new("n", &parsed.ruleset);
    trace_nft(&node, spec)
}

#[test]
fn a_header_the_packet_lacks_fails_the_statement_even_with_not_equal() {
    let text = "table inet f {\n\tchain fwd {\n\t\ttype filter hook prerouting priority 0; policy accept;\n\
                \t\ttcp dport != 80 drop\n\t\tip6 daddr != ::1 drop\n\t}\n}\n";
    let mut spec = PacketSpec::to("10.1.2.3:53".parse().unwrap());
    spec.protocol = Some(17);
    spec.node_ips.push("192.168.0.1".parse().unwrap());
    let t = trace_listing(text, &spec);
    assert!(
        t.outcomes.iter().all(|o| o.verdict == Verdict::Forward),
        "{:?}",
        t.outcomes
    );
    // The same rule drops a tcp packet to another port.
    spec.protocol = Some(6);
    let t = trace_listing(text, &spec);
    assert!(t.outcomes.iter().all(|o| o.verdict == Verdict::Drop));
}

#[test]
fn a_lookup_on_an_unknown_key_forks_per_element() {
    let text = "table ip f {\n\tchain pre {\n\t\ttype filter hook prerouting priority 0; policy accept;\n\
                \t\tip saddr vmap { 10.0.0.1 : goto a, 10.0.0.2 : goto b }\n\t}\n\
                \tchain a {\n\t\tdrop\n\t}\n\tchain b {\n\t\treject\n\t}\n}\n";
    // From a pod of a listing without a pod network: the source is unknown.
    let mut spec = PacketSpec::to("10.1.2.3:80".parse().unwrap());
    spec.node_ips.push("192.168.0.1".parse().unwrap());
    let t = trace_listing(text, &spec);
    let mut verdicts: Vec<Verdict> = t.outcomes.iter().map(|o| o.verdict).collect();
    verdicts.sort();
    assert_eq!(
        verdicts,
        [Verdict::Forward, Verdict::Drop, Verdict::Reject],
        "{:?}",
        t.outcomes
    );
    assert!(t.outcomes.iter().all(|o| !o.assumptions.is_empty()));
    spec.src = Some("10.0.0.2".parse().unwrap());
    let t = trace_listing(text, &spec);
    assert!(t.outcomes.iter().all(|o| o.verdict == Verdict::Reject));
}

#[test]
fn an_accept_ends_only_its_base_chain_and_priorities_order_tables() {
    // `late` (priority 10) is written first but runs after `early` (filter - 5): the accept in
    // `early` does not save the packet from the drop in `late`.
    let text = "table inet late {\n\tchain fwd {\n\t\ttype filter hook forward priority 10; policy accept;\n\
                \t\tip daddr 10.9.9.9 drop\n\t}\n}\n\
                table ip early {\n\tchain fwd {\n\t\ttype filter hook forward priority filter - 5; policy accept;\n\
                \t\taccept\n\t}\n}\n";
    let mut spec = PacketSpec::to("10.9.9.9:80".parse().unwrap());
    spec.node_ips.push("192.168.0.1".parse().unwrap());
    let t = trace_listing(text, &spec);
    assert_eq!(t.outcomes.len(), 1);
    let o = &t.outcomes[0];
    assert_eq!(o.verdict, Verdict::Drop);
    let effects: Vec<&str> = o.steps.iter().map(|s| s.effect.as_str()).collect();
    let accept = effects
        .iter()
        .position(|e| e.starts_with("accept"))
        .expect("accept step");
    let drop = effects
        .iter()
        .position(|e| *e == "drop")
        .expect("drop step");
    assert!(accept < drop, "{effects:?}");
}
