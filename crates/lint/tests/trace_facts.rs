//! The trace reads its node facts in light passes (`trace/facts.rs`), not through the
//! Kubernetes model. Here they are compared with what the model gives (the way the trace read
//! them before): on every dump of the corpus and on generated clusters of every layout and
//! family, the node addresses, the pod network and why, the Service and endpoint addresses, the
//! local endpoints and the proxy mode must be the same.

use ipnet::IpNet;
use rulelint_dumpgen::{Layout, Shape, generate};
use rulelint_lint::kube::{AddressKind, KubeModel};
use rulelint_lint::trace::TraceNode;
use rulelint_parser::views::NatAddress;
use rulelint_parser::{ChainGraph, LineIndex, RuleId, Ruleset, TableKind, parse};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The facts as the model gives them.
#[derive(Debug, PartialEq)]
struct Reference {
    addresses: Vec<(IpAddr, RuleId)>,
    pod_cidr: Option<(IpNet, String)>,
    service_ips: BTreeSet<IpAddr>,
    endpoint_ips: BTreeSet<IpAddr>,
    local_endpoints: BTreeSet<IpAddr>,
    layout: &'static str,
    mode: String,
}

fn first_ip(destination: &str) -> Option<IpAddr> {
    NatAddress::parse(destination).ok()?.first
}

/// The network most endpoints share, widened to a /16 or /64 (as `trace::pod_cidr_around`).
fn pod_cidr_around(endpoint_ips: &BTreeSet<IpAddr>) -> Option<(IpNet, String)> {
    let mut counts: Vec<(IpNet, usize)> = Vec::new();
    for ip in endpoint_ips {
        let net = IpNet::new(*ip, if ip.is_ipv4() { 16 } else { 64 })
            .ok()?
            .trunc();
        match counts.iter_mut().find(|(n, _)| *n == net) {
            Some((_, c)) => *c += 1,
            None => counts.push((net, 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts.first().map(|(net, n)| {
        (
            *net,
            format!("the network around {n} of the endpoints' pod addresses"),
        )
    })
}

/// What `TraceNode::new` read from the model before it read the dump itself.
fn reference(set: &Ruleset<'_>) -> Reference {
    let graph = ChainGraph::build(set);
    let model = KubeModel::build(set, &graph);
    let lines = LineIndex::new(set.source());
    let mut addresses: Vec<(IpAddr, RuleId)> = Vec::new();
    if let Some(nat) = set.table_by_kind(TableKind::Nat)
        && let Some(services) = nat.chain("KUBE-SERVICES")
    {
        for rule in services.rules() {
            if rule.target().is_some_and(|t| t.name() == "KUBE-NODEPORTS")
                && let Some(d) = rule.destination()
                && !d.negated
                && d.value.prefix_len() == d.value.max_prefix_len()
                && !d.value.addr().is_loopback()
                && !addresses.iter().any(|(a, _)| *a == d.value.addr())
            {
                addresses.push((d.value.addr(), rule.id));
            }
        }
    }
    let mut service_ips = BTreeSet::new();
    let mut pod_cidr = None;
    for service in &model.services {
        for address in &service.addresses {
            if address.kind != AddressKind::NodePort
                && let Some(net) = address.address
            {
                service_ips.insert(net.addr());
            }
        }
        if pod_cidr.is_none()
            && let Some(chain) = service.chains.cluster
        {
            for rule in set.chain(chain).rules() {
                if rule.target().is_some_and(|t| t.name() == "KUBE-MARK-MASQ")
                    && let Some(s) = rule.source()
                    && s.negated
                {
                    pod_cidr = Some((
                        s.value.trunc(),
                        format!(
                            "from `! -s {}` in {}, line {}",
                            s.value,
                            set.chain(chain).name(),
                            lines.line(rule.get().span.start)
                        ),
                    ));
                    break;
                }
            }
        }
    }
    let endpoint_ips: BTreeSet<IpAddr> = model
        .endpoints
        .iter()
        .filter_map(|e| first_ip(e.destination?))
        .collect();
    if pod_cidr.is_none() {
        pod_cidr = pod_cidr_around(&endpoint_ips);
    }
    let local_endpoints = model
        .services
        .iter()
        .flat_map(|s| &s.local_endpoints)
        .filter_map(|j| model.endpoint(j))
        .filter_map(|e| first_ip(e.destination?))
        .collect();
    Reference {
        addresses,
        pod_cidr,
        service_ips,
        endpoint_ips,
        local_endpoints,
        layout: model.layout.describe(),
        mode: format!("{:?}", model.layout.mode),
    }
}

/// How far `ip` is from the start of `net`.
fn offset(net: IpNet, ip: IpAddr) -> u128 {
    match (net.network(), ip) {
        (IpAddr::V4(b), IpAddr::V4(i)) => u128::from(u32::from(i) - u32::from(b)),
        (IpAddr::V6(b), IpAddr::V6(i)) => u128::from(i) - u128::from(b),
        _ => u128::MAX,
    }
}

/// Compares the node's facts with the model's; `what` names the dump.
fn compare(what: &str, text: &str) {
    let parsed = parse(text);
    let set = &parsed.ruleset;
    let want = reference(set);
    let node = TraceNode::new("n", set);
    let facts = node.facts();
    // Every address the dump names, and the endpoints': the model's Service addresses are
    // exactly those the node answers yes for.
    let mut probes: BTreeSet<IpAddr> = set
        .iter_rules()
        .filter_map(|r| r.destination().map(|d| d.value.addr()))
        .collect();
    probes.extend(want.endpoint_ips.iter().copied());
    let service_ips: BTreeSet<IpAddr> = probes
        .into_iter()
        .filter(|ip| node.is_service_ip(*ip))
        .collect();
    // The endpoints near an address, read without the set of them all (before it exists,
    // unless the pod network needed it): the pod network's first addresses and the /24 (/80)
    // around each local endpoint, as the default source asks.
    let mut nets: Vec<IpNet> = facts.pod_cidr.iter().map(|(n, _)| *n).collect();
    for ip in node
        .local_endpoints()
        .iter()
        .chain(want.endpoint_ips.iter().take(3))
    {
        nets.push(
            IpNet::new(*ip, if ip.is_ipv4() { 24 } else { 80 })
                .unwrap()
                .trunc(),
        );
    }
    nets.sort();
    nets.dedup();
    for net in nets {
        for count in [2050, 7] {
            let near: Vec<IpAddr> = want
                .endpoint_ips
                .iter()
                .copied()
                .filter(|ip| net.contains(ip) && offset(net, *ip) < u128::from(count))
                .collect();
            assert_eq!(
                node.endpoint_ips_near(net, count),
                near,
                "{what}: the endpoints near {net}"
            );
        }
    }
    let got = Reference {
        addresses: facts.addresses.clone(),
        pod_cidr: facts.pod_cidr.clone(),
        service_ips,
        endpoint_ips: node.endpoint_ips().iter().copied().collect(),
        local_endpoints: node.local_endpoints().iter().copied().collect(),
        layout: node.layout_description(),
        mode: format!("{:?}", node.proxy_mode()),
    };
    assert_eq!(
        got, want,
        "{what}: the trace's facts differ from the model's"
    );
}

fn dumps(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            dumps(&path, out);
        } else if path.extension().is_some_and(|e| e == "txt") {
            out.push(path);
        }
    }
}

#[test]
fn corpus_facts_equal_the_models() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let mut files = Vec::new();
    dumps(&root, &mut files);
    files.sort();
    assert!(files.len() > 100, "the corpus has {} dumps", files.len());
    let mut with_services = 0;
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        compare(&path.display().to_string(), &text);
        with_services += usize::from(text.contains("KUBE-SVC-"));
    }
    assert!(
        with_services > 20,
        "{with_services} corpus dumps have Services"
    );
}

#[test]
fn generated_cluster_facts_equal_the_models() {
    for layout in [Layout::Modern, Layout::Legacy] {
        for ipv6 in [false, true] {
            for seed in 1..4u64 {
                let shape = Shape {
                    services: 150,
                    endpoints_per_service: 3,
                    nodeport_share: 0.3,
                    loadbalancer_share: 0.2,
                    local_policy_share: 0.5,
                    empty_share: 0.1,
                    affinity_share: 0.1,
                    layout,
                    ipv6,
                    seed,
                    node: seed as u32,
                    nodes: 4,
                    ..Shape::default()
                };
                compare(
                    &format!("{layout:?} ipv6={ipv6} seed={seed}"),
                    &generate(&shape),
                );
            }
        }
    }
}

/// The endpoints near a network are told apart by their text before they are parsed: every
/// spelling `--to-destination` may take (brackets, a range, no port, a neighbour that shares
/// the first digits, IPv6, an unreadable one) gives the model's answer.
#[test]
fn endpoint_spellings_equal_the_models() {
    let mut dump = String::from(
        "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n",
    );
    let targets = [
        "10.244.3.5:80",
        "[10.244.3.6]:80",
        "10.244.3.7-10.244.3.9:80",
        "10.244.3.8",
        "10.244.30.5:80",
        "10.244.3.10:80-90",
        "010.244.3.11:80",
        "[fd00::3:5]:80",
        "10.245.3.12:80",
        "not-an-address",
        ":8080",
    ];
    for (i, _) in targets.iter().enumerate() {
        dump.push_str(&format!(":KUBE-SEP-{i:0>16} - [0:0]\n"));
    }
    dump.push_str("-A PREROUTING -j KUBE-SERVICES\n");
    dump.push_str(
        "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n",
    );
    // The pod network from this rule: the endpoints are not all read to guess it, so the
    // questions below read them by their text.
    dump.push_str(
        "-A KUBE-SVC-AAAAAAAAAAAAAAAA ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m tcp --dport 80 -j KUBE-MARK-MASQ\n",
    );
    for (i, to) in targets.iter().enumerate() {
        dump.push_str(&format!(
            "-A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-SEP-{i:0>16}\n\
             -A KUBE-SEP-{i:0>16} -s 10.244.3.5/32 -j KUBE-MARK-MASQ\n\
             -A KUBE-SEP-{i:0>16} -p tcp -m tcp -j DNAT --to-destination {to}\n"
        ));
    }
    dump.push_str("COMMIT\n");
    compare("spellings", &dump);
    // And the networks compare() does not ask about: wider, narrower, not on an octet.
    let parsed = parse(&dump);
    let node = TraceNode::new("n", &parsed.ruleset);
    let reference = reference(&parsed.ruleset);
    assert!(
        reference
            .pod_cidr
            .is_some_and(|(n, _)| n.to_string() == "10.244.0.0/16")
    );
    let want = reference.endpoint_ips;
    assert!(want.len() >= 6, "{want:?}");
    for net in [
        "10.244.3.0/24",
        "10.244.0.0/16",
        "10.0.0.0/8",
        "10.244.3.8/29",
        "10.244.0.0/19",
        "0.0.0.0/0",
        "fd00::/64",
    ] {
        let net: IpNet = net.parse().unwrap();
        let near: Vec<IpAddr> = want
            .iter()
            .copied()
            .filter(|ip| net.contains(ip) && offset(net, *ip) < 2050)
            .collect();
        assert_eq!(node.endpoint_ips_near(net, 2050), near, "near {net}");
    }
}
