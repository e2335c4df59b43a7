//! The same cluster as [`crate::generate`], seen from a node whose kube-proxy
//! runs in nftables mode: `table ip kube-proxy` (or `ip6`) in the layout of
//! Kubernetes 1.34 (`filter-prerouting-pre-dnat`/`filter-output-pre-dnat` at
//! priority -110, the filter checks at priority 0, `mark-for-masquerade`), in
//! one of three forms:
//!
//! - [`NftForm::List`]: what `nft list ruleset` (nftables 1.0.6) prints;
//! - [`NftForm::Json`]: what `nft -j list ruleset` prints;
//! - [`NftForm::Transaction`]: `add table/set/map/chain/rule/element` lines, the
//!   form kube-proxy pipes to `nft -f -`, ordered so that one `nft -f` loads it.
//!
//! All three come from one in-memory ruleset, so they describe the same
//! objects. Elements are printed in kube-proxy's order; the kernel lists them
//! in its own (hash) order, which is why `scripts/check-dumpgen-nft.sh`
//! compares element lists as sets. Handles in the JSON form are the ones the
//! kernel assigns when the transaction form is loaded into an empty network
//! namespace: one counter per table for sets, chains, rules and the anonymous
//! sets of verdict maps.

use crate::Shape;
use crate::model::{self, Kind, Net, Planner, Pod, PortSpec, Proto, ServiceSpec};
use crate::text::{chain_hash, push_host_port, push_ip, push_u64};

/// Which text an nftables-mode node is printed as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NftForm {
    /// `nft list ruleset`.
    #[default]
    List,
    /// `nft -j list ruleset`.
    Json,
    /// The `add ...` transaction kube-proxy writes to `nft -f -`.
    Transaction,
}

/// `sessionAffinityConfig.clientIP.timeoutSeconds` default.
const STICKY_SECONDS: u64 = 10_800;
const MASQ_CHAIN: &str = "mark-for-masquerade";
const REJECT_CHAIN: &str = "reject-chain";

/// The whole nftables-mode node for `shape`, in `form`. `shape.layout` and
/// `shape.counters` do not apply to nftables mode and are ignored.
pub fn generate_nft(shape: &Shape, form: NftForm) -> String {
    let ruleset = build(shape);
    match form {
        NftForm::List => print_list(&ruleset),
        NftForm::Json => print_json(&ruleset),
        NftForm::Transaction => print_transaction(&ruleset),
    }
}

/// Number of rules in an nftables-mode node of `shape` (the same in every
/// form), for sizing benchmarks.
pub fn nft_rule_count(shape: &Shape) -> usize {
    build(shape).chains.iter().map(|c| c.rules.len()).sum()
}

// ---- the ruleset ----------------------------------------------------------

struct Ruleset {
    v6: bool,
    sets: Vec<Set>,
    chains: Vec<Chain>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Addr,
    ProtoPort,
    AddrProtoPort,
}

struct Set {
    name: String,
    key: Key,
    /// A verdict map rather than a set.
    map: bool,
    comment: Option<&'static str>,
    /// An affinity set: `flags dynamic,timeout`, filled by the data path.
    affinity: bool,
    elems: Vec<Elem>,
}

struct Elem {
    addr: u128,
    proto: Proto,
    port: u16,
    comment: Option<String>,
    verdict: Option<Verdict>,
}

#[derive(Clone)]
enum Verdict {
    Drop,
    Goto(String),
}

struct Chain {
    name: String,
    base: Option<(&'static str, &'static str, i32)>,
    comment: Option<&'static str>,
    rules: Vec<Rule>,
}

struct Rule {
    stmts: Vec<Stmt>,
    comment: Option<&'static str>,
}

/// A prefix (`10.0.0.0/8`) or a host address, as written in source ranges.
type Cidr = String;

/// The statements kube-proxy writes, each printable in all three forms.
enum Stmt {
    CtStateNew,
    DaddrInSet(&'static str),
    DaddrIs(u128),
    DaddrInPrefix(&'static str),
    SaddrIs(u128),
    SaddrInPrefix(&'static str),
    SaddrNotInPrefix(&'static str),
    SaddrInSet(String),
    /// `ip saddr != { ... }`: the elements kube-proxy writes, and the ones
    /// the kernel keeps and nft lists (sorted, touching intervals merged).
    /// One element written: nft makes no anonymous set and lists no braces.
    SaddrNotIn {
        written: Vec<Cidr>,
        kept: Vec<Cidr>,
    },
    FibSaddrLocal,
    /// `ip daddr . meta l4proto . th dport vmap @map`.
    VmapAddrProtoPort(&'static str),
    /// `meta l4proto . th dport vmap @map`.
    VmapProtoPort(&'static str),
    /// `numgen random mod N vmap { i : goto chain_i }`.
    Numgen(Vec<String>),
    MarkSetOr,
    MarkAndZero,
    MarkSetXor,
    Masquerade,
    Reject,
    Drop,
    Return,
    Jump(String),
    Goto(String),
    UpdateSaddr(String),
    L4proto(Proto),
    Dnat(u128, u16),
}

fn rule(stmts: Vec<Stmt>) -> Rule {
    Rule {
        stmts,
        comment: None,
    }
}

fn commented(stmts: Vec<Stmt>, comment: &'static str) -> Rule {
    Rule {
        stmts,
        comment: Some(comment),
    }
}

fn plain_chain(name: &str, rules: Vec<Rule>) -> Chain {
    Chain {
        name: name.to_owned(),
        base: None,
        comment: None,
        rules,
    }
}

fn base_chain(
    name: &str,
    kind: &'static str,
    hook: &'static str,
    prio: i32,
    rules: Vec<Rule>,
) -> Chain {
    Chain {
        name: name.to_owned(),
        base: Some((kind, hook, prio)),
        comment: None,
        rules,
    }
}

fn set(name: &str, key: Key, map: bool, comment: &'static str) -> Set {
    Set {
        name: name.to_owned(),
        key,
        map,
        comment: Some(comment),
        affinity: false,
        elems: Vec::new(),
    }
}

/// Indices of the fixed sets, in creation order.
const CLUSTER_IPS: usize = 0;
const NODEPORT_IPS: usize = 1;
const FIREWALL_IPS: usize = 2;
const NO_EP_NODEPORTS: usize = 3;
const NO_EP_SERVICES: usize = 4;
const SERVICE_IPS: usize = 5;
const SERVICE_NODEPORTS: usize = 6;

/// kube-proxy's fixed objects (`setupNFTables` and the base rules).
fn fixed(net: &Net, node_ip: u128) -> Ruleset {
    use Stmt::*;
    let mut sets = vec![
        set("cluster-ips", Key::Addr, false, "Active ClusterIPs"),
        set(
            "nodeport-ips",
            Key::Addr,
            false,
            "IPs that accept NodePort traffic",
        ),
        set(
            "firewall-ips",
            Key::AddrProtoPort,
            true,
            "destinations that are subject to LoadBalancerSourceRanges",
        ),
        set(
            "no-endpoint-nodeports",
            Key::ProtoPort,
            true,
            "vmap to drop or reject packets to service nodeports with no endpoints",
        ),
        set(
            "no-endpoint-services",
            Key::AddrProtoPort,
            true,
            "vmap to drop or reject packets to services with no endpoints",
        ),
        set(
            "service-ips",
            Key::AddrProtoPort,
            true,
            "ClusterIP, ExternalIP and LoadBalancer IP traffic",
        ),
        set(
            "service-nodeports",
            Key::ProtoPort,
            true,
            "NodePort traffic",
        ),
    ];
    sets[NODEPORT_IPS].elems.push(Elem {
        addr: node_ip,
        proto: Proto::Tcp,
        port: 0,
        comment: None,
        verdict: None,
    });
    let service_cidr = if net.v6 {
        "fd00:10:96::/108"
    } else {
        "10.96.0.0/12"
    };
    let jump = |c: &str| Jump(c.to_owned());
    let chains = vec![
        plain_chain(
            "cluster-ips-check",
            vec![
                commented(
                    vec![DaddrInSet("cluster-ips"), Reject],
                    "Reject traffic to invalid ports of ClusterIPs",
                ),
                commented(
                    vec![DaddrInPrefix(service_cidr), Drop],
                    "Drop traffic to unallocated ClusterIPs",
                ),
            ],
        ),
        base_chain(
            "filter-prerouting-pre-dnat",
            "filter",
            "prerouting",
            -110,
            vec![rule(vec![CtStateNew, jump("firewall-check")])],
        ),
        base_chain(
            "filter-output-pre-dnat",
            "filter",
            "output",
            -110,
            vec![rule(vec![CtStateNew, jump("firewall-check")])],
        ),
        base_chain(
            "filter-forward",
            "filter",
            "forward",
            0,
            vec![
                rule(vec![CtStateNew, jump("service-endpoints-check")]),
                rule(vec![CtStateNew, jump("cluster-ips-check")]),
            ],
        ),
        base_chain(
            "filter-input",
            "filter",
            "input",
            0,
            vec![
                rule(vec![CtStateNew, jump("nodeport-endpoints-check")]),
                rule(vec![CtStateNew, jump("service-endpoints-check")]),
            ],
        ),
        base_chain(
            "filter-output",
            "filter",
            "output",
            0,
            vec![
                rule(vec![CtStateNew, jump("service-endpoints-check")]),
                rule(vec![CtStateNew, jump("cluster-ips-check")]),
            ],
        ),
        plain_chain(
            "firewall-check",
            vec![rule(vec![VmapAddrProtoPort("firewall-ips")])],
        ),
        plain_chain(MASQ_CHAIN, vec![rule(vec![MarkSetOr])]),
        plain_chain(
            "masquerading",
            vec![
                rule(vec![MarkAndZero, Return]),
                rule(vec![MarkSetXor]),
                rule(vec![Masquerade]),
            ],
        ),
        base_chain(
            "nat-output",
            "nat",
            "output",
            -100,
            vec![rule(vec![jump("services")])],
        ),
        base_chain(
            "nat-postrouting",
            "nat",
            "postrouting",
            100,
            vec![rule(vec![jump("masquerading")])],
        ),
        base_chain(
            "nat-prerouting",
            "nat",
            "prerouting",
            -100,
            vec![rule(vec![jump("services")])],
        ),
        plain_chain(
            "nodeport-endpoints-check",
            vec![rule(vec![
                DaddrInSet("nodeport-ips"),
                VmapProtoPort("no-endpoint-nodeports"),
            ])],
        ),
        Chain {
            comment: Some("helper for @no-endpoint-services / @no-endpoint-nodeports"),
            ..plain_chain(REJECT_CHAIN, vec![rule(vec![Reject])])
        },
        plain_chain(
            "services",
            vec![
                rule(vec![VmapAddrProtoPort("service-ips")]),
                rule(vec![
                    DaddrInSet("nodeport-ips"),
                    VmapProtoPort("service-nodeports"),
                ]),
            ],
        ),
        plain_chain(
            "service-endpoints-check",
            vec![rule(vec![VmapAddrProtoPort("no-endpoint-services")])],
        ),
    ];
    Ruleset {
        v6: net.v6,
        sets,
        chains,
    }
}

/// `HASH-ns/name/proto/portname`: kube-proxy's `servicePortChainNameBase`.
fn chain_base(spec: &PortSpec) -> String {
    let (ns, rest) = spec.name.split_once('/').unwrap_or(("", &spec.name));
    let (svc, port) = rest.split_once(':').unwrap_or((rest, ""));
    let name = format!("{ns}/{svc}/{}/{port}", spec.proto.as_str());
    with_hash(name)
}

/// `HASH-ns/name/proto/portname__ip/port` (IPv6 colons as dots):
/// `servicePortEndpointChainNameBase`.
fn endpoint_base(spec: &PortSpec, pod: &Pod, v6: bool) -> String {
    let (ns, rest) = spec.name.split_once('/').unwrap_or(("", &spec.name));
    let (svc, port) = rest.split_once(':').unwrap_or((rest, ""));
    let mut ip = String::with_capacity(40);
    push_ip(&mut ip, pod.addr, v6);
    let ip = ip.replace(':', ".");
    let name = format!(
        "{ns}/{svc}/{}/{port}__{ip}/{}",
        spec.proto.as_str(),
        spec.target
    );
    with_hash(name)
}

fn with_hash(name: String) -> String {
    let hash = chain_hash(name.as_bytes());
    let mut out = String::with_capacity(name.len() + 9);
    out.push_str(std::str::from_utf8(&hash[..8]).unwrap_or(""));
    out.push('-');
    out.push_str(&name);
    out
}

fn elem(addr: u128, proto: Proto, port: u16, verdict: Verdict, comment: Option<&str>) -> Elem {
    Elem {
        addr,
        proto,
        port,
        comment: comment.map(str::to_owned),
        verdict: Some(verdict),
    }
}

/// The whole node: fixed objects, then every Service port in kube-proxy's
/// (Go map) order, as `syncProxyRules` writes them.
fn build(shape: &Shape) -> Ruleset {
    let v6 = shape.ipv6;
    let mut planner = Planner::new(shape);
    let net = Net { v6 };
    let mut rs = fixed(&net, planner.node_ip());
    let mut services: Vec<ServiceSpec> = Vec::new();
    let mut ports: Vec<(u32, u32)> = Vec::with_capacity(shape.services);
    while ports.len() < shape.services {
        let mut svc = planner.next_service();
        svc.ports.truncate(shape.services - ports.len());
        if svc.ports.is_empty() {
            break;
        }
        for pi in 0..svc.ports.len() {
            ports.push((services.len() as u32, pi as u32));
        }
        services.push(svc);
    }
    // Same service-port order as the iptables dump of this node.
    let node = shape.node % shape.nodes.clamp(1, 256);
    let order_seed = model::mix(shape.seed, 0x5EED_0000 + u64::from(node));
    let mut order: Vec<u32> = (0..ports.len() as u32).collect();
    order.sort_by_cached_key(|&i| model::mix(order_seed, u64::from(i)));

    let mut cluster_ips_seen = vec![false; services.len()];
    for &i in &order {
        let (s, p) = ports[i as usize];
        let svc = &services[s as usize];
        let spec = &svc.ports[p as usize];
        if !std::mem::replace(&mut cluster_ips_seen[s as usize], true) {
            rs.sets[CLUSTER_IPS].elems.push(Elem {
                addr: svc.cluster_ip,
                proto: spec.proto,
                port: 0,
                comment: None,
                verdict: None,
            });
        }
        service_port(&mut rs, &net, svc, spec);
    }
    rs
}

fn service_port(rs: &mut Ruleset, net: &Net, svc: &ServiceSpec, spec: &PortSpec) {
    use Stmt::*;
    let v6 = net.v6;
    let base = chain_base(spec);
    let cluster_chain = format!("service-{base}");
    let local_chain = format!("local-{base}");
    let external_chain = format!("external-{base}");
    let fw_chain = format!("firewall-{base}");
    let n = svc.pods.len();
    let local_n = svc.local_pods();
    let np = spec.node_port != 0;
    let lb = svc.kind == Kind::LoadBalancer;
    let has_endpoints = n > 0;
    let has_external = has_endpoints && (!svc.local || local_n > 0);
    let uses_external = has_endpoints && (np || lb);
    let uses_local = svc.local && local_n > 0;
    let ranges = model::source_ranges(v6, svc.ranges);
    let uses_fw = lb && !ranges.is_empty();
    let proto = spec.proto;

    let endpoint_bases: Vec<String> = svc
        .pods
        .iter()
        .map(|pod| endpoint_base(spec, pod, v6))
        .collect();
    let endpoint_chain = |i: usize| format!("endpoint-{}", endpoint_bases[i]);
    let affinity_set = |i: usize| format!("affinity-{}", endpoint_bases[i]);

    // Verdicts for traffic that cannot be served here.
    let reject = Verdict::Goto(REJECT_CHAIN.to_owned());
    let external_verdict = if has_endpoints {
        Verdict::Drop
    } else {
        reject.clone()
    };

    // Elements.
    if has_endpoints {
        rs.sets[SERVICE_IPS].elems.push(elem(
            svc.cluster_ip,
            proto,
            spec.port,
            Verdict::Goto(cluster_chain.clone()),
            None,
        ));
    } else {
        rs.sets[NO_EP_SERVICES].elems.push(elem(
            svc.cluster_ip,
            proto,
            spec.port,
            reject.clone(),
            Some(&spec.name),
        ));
    }
    if lb {
        if has_endpoints {
            rs.sets[SERVICE_IPS].elems.push(elem(
                svc.lb_ip,
                proto,
                spec.port,
                Verdict::Goto(external_chain.clone()),
                None,
            ));
        }
        if uses_fw {
            rs.sets[FIREWALL_IPS].elems.push(elem(
                svc.lb_ip,
                proto,
                spec.port,
                Verdict::Goto(fw_chain.clone()),
                None,
            ));
        }
        if !has_external {
            rs.sets[NO_EP_SERVICES].elems.push(elem(
                svc.lb_ip,
                proto,
                spec.port,
                external_verdict.clone(),
                Some(&spec.name),
            ));
        }
    }
    if np {
        if has_endpoints {
            rs.sets[SERVICE_NODEPORTS].elems.push(elem(
                0,
                proto,
                spec.node_port,
                Verdict::Goto(external_chain.clone()),
                None,
            ));
        }
        if !has_external {
            rs.sets[NO_EP_NODEPORTS].elems.push(elem(
                0,
                proto,
                spec.node_port,
                external_verdict,
                Some(&spec.name),
            ));
        }
    }

    // Affinity sets, one per endpoint.
    if svc.affinity {
        for i in 0..n {
            rs.sets.push(Set {
                name: affinity_set(i),
                key: Key::Addr,
                map: false,
                comment: None,
                affinity: true,
                elems: Vec::new(),
            });
        }
    }

    // Chains, in kube-proxy's `ensureChain` order: endpoints, the cluster
    // and local policy chains, the external chain, the firewall chain.
    let endpoints_rules = |indices: &[usize]| {
        let mut rules = Vec::new();
        if svc.affinity {
            for &i in indices {
                rules.push(rule(vec![
                    SaddrInSet(affinity_set(i)),
                    Goto(endpoint_chain(i)),
                ]));
            }
        }
        rules.push(rule(vec![Numgen(
            indices.iter().map(|&i| endpoint_chain(i)).collect(),
        )]));
        rules
    };
    for (i, pod) in svc.pods.iter().enumerate() {
        let mut rules = vec![rule(vec![SaddrIs(pod.addr), Jump(MASQ_CHAIN.to_owned())])];
        if svc.affinity {
            rules.push(rule(vec![UpdateSaddr(affinity_set(i))]));
        }
        rules.push(rule(vec![L4proto(proto), Dnat(pod.addr, spec.target)]));
        rs.chains.push(plain_chain(&endpoint_chain(i), rules));
    }
    if has_endpoints {
        let all: Vec<usize> = (0..n).collect();
        let mut rules = vec![rule(vec![
            DaddrIs(svc.cluster_ip),
            SaddrNotInPrefix(net.cluster_cidr()),
            Jump(MASQ_CHAIN.to_owned()),
        ])];
        rules.extend(endpoints_rules(&all));
        rs.chains.push(plain_chain(&cluster_chain, rules));
    }
    if uses_local {
        let local: Vec<usize> = (0..n).filter(|&i| svc.pods[i].local).collect();
        rs.chains
            .push(plain_chain(&local_chain, endpoints_rules(&local)));
    }
    if uses_external {
        let mut rules = Vec::new();
        if svc.local {
            rules.push(commented(
                vec![
                    SaddrInPrefix(net.cluster_cidr()),
                    Goto(cluster_chain.clone()),
                ],
                "short-circuit pod traffic",
            ));
            rules.push(commented(
                vec![FibSaddrLocal, Jump(MASQ_CHAIN.to_owned())],
                "masquerade local traffic",
            ));
            rules.push(commented(
                vec![FibSaddrLocal, Goto(cluster_chain.clone())],
                "short-circuit local traffic",
            ));
        } else {
            rules.push(rule(vec![Jump(MASQ_CHAIN.to_owned())]));
        }
        if has_external {
            let target = if svc.local {
                &local_chain
            } else {
                &cluster_chain
            };
            rules.push(rule(vec![Goto(target.clone())]));
        }
        rs.chains.push(plain_chain(&external_chain, rules));
    }
    if uses_fw {
        let mut sources: Vec<Cidr> = ranges.iter().map(|r| (*r).to_owned()).collect();
        if model::ranges_allow_node(svc.ranges) {
            let mut ip = String::new();
            push_ip(&mut ip, svc.lb_ip, v6);
            sources.push(ip);
        }
        let kept = merge_intervals(&sources, v6);
        rs.chains.push(plain_chain(
            &fw_chain,
            vec![rule(vec![
                SaddrNotIn {
                    written: sources,
                    kept,
                },
                Drop,
            ])],
        ));
    }
}

/// The elements of an anonymous interval set as the kernel keeps them and nft
/// lists them: sorted, with overlapping or touching intervals merged, each
/// printed as an address, a prefix or a `low-high` range. Unparsable entries
/// are kept as written, at the end.
fn merge_intervals(cidrs: &[Cidr], v6: bool) -> Vec<Cidr> {
    let bits: u32 = if v6 { 128 } else { 32 };
    let max: u128 = if v6 { u128::MAX } else { u128::from(u32::MAX) };
    let mut intervals: Vec<(u128, u128)> = Vec::with_capacity(cidrs.len());
    let mut unparsed = Vec::new();
    for cidr in cidrs {
        let (addr, len) = cidr.split_once('/').unwrap_or((cidr, ""));
        let len: u32 = if len.is_empty() {
            bits
        } else {
            len.parse().unwrap_or(u32::MAX)
        };
        let start = match addr.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(a)) if !v6 => u128::from(u32::from(a)),
            Ok(std::net::IpAddr::V6(a)) if v6 => u128::from(a),
            _ => u128::MAX,
        };
        if start == u128::MAX || len > bits {
            unparsed.push(cidr.clone());
            continue;
        }
        let host_mask = max.checked_shr(len).unwrap_or(0);
        intervals.push((start & !host_mask, (start & !host_mask) | host_mask));
    }
    intervals.sort_unstable();
    let mut merged: Vec<(u128, u128)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match merged.last_mut() {
            Some(last) if start <= last.1.saturating_add(1) => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let mut out: Vec<Cidr> = merged
        .into_iter()
        .map(|(start, end)| {
            let mut text = String::with_capacity(40);
            push_ip(&mut text, start, v6);
            let size = end - start;
            if size == 0 {
                return text;
            }
            let aligned = size
                .checked_add(1)
                .is_none_or(|n| n.is_power_of_two() && start % n == 0);
            if aligned {
                let host_bits = 128 - size.leading_zeros();
                text.push('/');
                push_u64(&mut text, u64::from(bits - host_bits));
            } else {
                text.push('-');
                push_ip(&mut text, end, v6);
            }
            text
        })
        .collect();
    out.extend(unparsed);
    out
}

// ---- shared printing helpers ------------------------------------------------

fn family(v6: bool) -> &'static str {
    if v6 { "ip6" } else { "ip" }
}

fn addr_type(v6: bool) -> &'static str {
    if v6 { "ipv6_addr" } else { "ipv4_addr" }
}

fn key_type(key: Key, v6: bool) -> String {
    match key {
        Key::Addr => addr_type(v6).to_owned(),
        Key::ProtoPort => "inet_proto . inet_service".to_owned(),
        Key::AddrProtoPort => format!("{} . inet_proto . inet_service", addr_type(v6)),
    }
}

fn push_key(out: &mut String, key: Key, e: &Elem, v6: bool) {
    if key != Key::ProtoPort {
        push_ip(out, e.addr, v6);
    }
    if key != Key::Addr {
        if key == Key::AddrProtoPort {
            out.push_str(" . ");
        }
        out.push_str(e.proto.as_str());
        out.push_str(" . ");
        push_u64(out, u64::from(e.port));
    }
}

fn push_verdict(out: &mut String, v: &Verdict) {
    match v {
        Verdict::Drop => out.push_str("drop"),
        Verdict::Goto(c) => {
            out.push_str("goto ");
            out.push_str(c);
        }
    }
}

/// A quoted nft string (names and comments here never hold `"`).
fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    out.push_str(s);
    out.push('"');
}

/// Which text form a statement is printed in: kube-proxy's input, or what
/// `nft list` prints back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Input,
    Listed,
}

fn push_stmt(out: &mut String, stmt: &Stmt, v6: bool, syntax: Syntax) {
    use Stmt::*;
    let ipx = family(v6);
    let listed = syntax == Syntax::Listed;
    match stmt {
        CtStateNew => out.push_str("ct state new"),
        DaddrInSet(s) => {
            out.push_str(ipx);
            out.push_str(" daddr @");
            out.push_str(s);
        }
        DaddrIs(a) => {
            out.push_str(ipx);
            out.push_str(" daddr ");
            push_ip(out, *a, v6);
        }
        DaddrInPrefix(p) => {
            out.push_str(ipx);
            out.push_str(if listed { " daddr " } else { " daddr { " });
            out.push_str(p);
            if !listed {
                out.push_str(" }");
            }
        }
        SaddrIs(a) => {
            out.push_str(ipx);
            out.push_str(" saddr ");
            push_ip(out, *a, v6);
        }
        SaddrInPrefix(p) => {
            out.push_str(ipx);
            out.push_str(" saddr ");
            out.push_str(p);
        }
        SaddrNotInPrefix(p) => {
            out.push_str(ipx);
            out.push_str(" saddr != ");
            out.push_str(p);
        }
        SaddrInSet(s) => {
            out.push_str(ipx);
            out.push_str(" saddr @");
            out.push_str(s);
        }
        SaddrNotIn { written, kept } => {
            let sources = if listed { kept } else { written };
            out.push_str(ipx);
            out.push_str(" saddr != ");
            if listed && written.len() == 1 {
                out.push_str(&sources[0]);
            } else {
                out.push_str("{ ");
                out.push_str(&sources.join(if listed { ", " } else { " , " }));
                out.push_str(" }");
            }
        }
        FibSaddrLocal => out.push_str("fib saddr type local"),
        VmapAddrProtoPort(m) => {
            out.push_str(ipx);
            out.push_str(" daddr . meta l4proto . th dport vmap @");
            out.push_str(m);
        }
        VmapProtoPort(m) => {
            out.push_str("meta l4proto . th dport vmap @");
            out.push_str(m);
        }
        Numgen(targets) => {
            out.push_str("numgen random mod ");
            push_u64(out, targets.len() as u64);
            out.push_str(" vmap { ");
            for (i, t) in targets.iter().enumerate() {
                if i > 0 {
                    out.push_str(if listed { ", " } else { " , " });
                }
                push_u64(out, i as u64);
                out.push_str(" : goto ");
                out.push_str(t);
            }
            out.push_str(" }");
        }
        MarkSetOr => out.push_str(if listed {
            "meta mark set meta mark | 0x00004000"
        } else {
            "mark set mark or 0x4000"
        }),
        MarkAndZero => out.push_str(if listed {
            "meta mark & 0x00004000 == 0x00000000"
        } else {
            "mark and 0x4000 == 0"
        }),
        MarkSetXor => out.push_str(if listed {
            "meta mark set meta mark ^ 0x00004000"
        } else {
            "mark set mark xor 0x4000"
        }),
        Masquerade => out.push_str("masquerade fully-random"),
        Reject => out.push_str("reject"),
        Drop => out.push_str("drop"),
        Return => out.push_str("return"),
        Jump(c) => {
            out.push_str("jump ");
            out.push_str(c);
        }
        Goto(c) => {
            out.push_str("goto ");
            out.push_str(c);
        }
        UpdateSaddr(s) => {
            out.push_str("update @");
            out.push_str(s);
            out.push_str(" { ");
            out.push_str(ipx);
            out.push_str(" saddr }");
        }
        L4proto(p) => {
            out.push_str("meta l4proto ");
            out.push_str(p.as_str());
        }
        Dnat(a, port) => {
            out.push_str("dnat to ");
            push_host_port(out, *a, *port, v6);
        }
    }
}

fn push_rule_text(out: &mut String, r: &Rule, v6: bool, syntax: Syntax) {
    for (i, s) in r.stmts.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        push_stmt(out, s, v6, syntax);
    }
    if let Some(c) = r.comment {
        out.push_str(" comment ");
        push_quoted(out, c);
    }
}

// ---- nft list ruleset -------------------------------------------------------

/// The priority as nft 1.0.6 prints it for the `ip`/`ip6` families: a
/// standard name (or name ± up to 10) valid for the hook, else the number.
fn priority_text(hook: &str, prio: i32) -> String {
    const NAMED: [(&str, i32, Option<&str>); 6] = [
        ("raw", -300, None),
        ("mangle", -150, None),
        ("dstnat", -100, Some("prerouting")),
        ("filter", 0, None),
        ("security", 50, None),
        ("srcnat", 100, Some("postrouting")),
    ];
    for (name, value, only) in NAMED {
        if only.is_some_and(|h| h != hook) {
            continue;
        }
        let offset = prio - value;
        if offset == 0 {
            return name.to_owned();
        }
        if offset.abs() <= 10 {
            let sign = if offset > 0 { '+' } else { '-' };
            return format!("{name} {sign} {}", offset.abs());
        }
    }
    prio.to_string()
}

/// `3h`, `1d2h3m4s`: nft's time format.
fn duration_text(mut secs: u64) -> String {
    let mut out = String::new();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
        if secs >= size {
            push_u64(&mut out, secs / size);
            out.push_str(unit);
            secs %= size;
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

fn print_list(rs: &Ruleset) -> String {
    let v6 = rs.v6;
    let mut out = String::with_capacity(estimate(rs));
    out.push_str("table ");
    out.push_str(family(v6));
    out.push_str(" kube-proxy {\n\tcomment \"rules for kube-proxy\"\n");
    let mut first = true;
    for s in &rs.sets {
        if !std::mem::replace(&mut first, false) {
            out.push('\n');
        }
        out.push_str(if s.map { "\tmap " } else { "\tset " });
        out.push_str(&s.name);
        out.push_str(" {\n\t\ttype ");
        out.push_str(&key_type(s.key, v6));
        if s.map {
            out.push_str(" : verdict");
        }
        out.push('\n');
        if s.affinity {
            out.push_str("\t\tsize 65535\n\t\tflags dynamic,timeout\n\t\ttimeout ");
            out.push_str(&duration_text(STICKY_SECONDS));
            out.push('\n');
        }
        if let Some(c) = s.comment {
            out.push_str("\t\tcomment ");
            push_quoted(&mut out, c);
            out.push('\n');
        }
        if !s.elems.is_empty() {
            out.push_str("\t\telements = { ");
            // nft wraps IPv4 address lists two to a line, other element
            // types (IPv6 addresses, concatenations) one to a line.
            let per_line = if s.key == Key::Addr && !v6 { 2 } else { 1 };
            for (i, e) in s.elems.iter().enumerate() {
                if i > 0 {
                    out.push_str(if i % per_line == 0 {
                        ",\n\t\t\t     "
                    } else {
                        ", "
                    });
                }
                push_key(&mut out, s.key, e, v6);
                if let Some(c) = &e.comment {
                    out.push_str(" comment ");
                    push_quoted(&mut out, c);
                }
                if let Some(v) = &e.verdict {
                    out.push_str(" : ");
                    push_verdict(&mut out, v);
                }
            }
            out.push_str(" }\n");
        }
        out.push_str("\t}\n");
    }
    for c in &rs.chains {
        if !std::mem::replace(&mut first, false) {
            out.push('\n');
        }
        out.push_str("\tchain ");
        out.push_str(&c.name);
        out.push_str(" {\n");
        if let Some((kind, hook, prio)) = c.base {
            out.push_str("\t\ttype ");
            out.push_str(kind);
            out.push_str(" hook ");
            out.push_str(hook);
            out.push_str(" priority ");
            out.push_str(&priority_text(hook, prio));
            out.push_str("; policy accept;\n");
        }
        if let Some(comment) = c.comment {
            out.push_str("\t\tcomment ");
            push_quoted(&mut out, comment);
            out.push('\n');
        }
        for r in &c.rules {
            out.push_str("\t\t");
            push_rule_text(&mut out, r, v6, Syntax::Listed);
            out.push('\n');
        }
        out.push_str("\t}\n");
    }
    out.push_str("}\n");
    out
}

/// Output size guess: about 110 bytes per rule and 60 per element.
fn estimate(rs: &Ruleset) -> usize {
    let rules: usize = rs.chains.iter().map(|c| c.rules.len() + 2).sum();
    let elems: usize = rs.sets.iter().map(|s| s.elems.len() + 4).sum();
    4096 + rules * 110 + elems * 60
}

// ---- the transaction --------------------------------------------------------

fn print_transaction(rs: &Ruleset) -> String {
    let v6 = rs.v6;
    let fam = family(v6);
    let mut out = String::with_capacity(estimate(rs) * 2);
    let head = |out: &mut String, what: &str| {
        out.push_str("add ");
        out.push_str(what);
        out.push(' ');
        out.push_str(fam);
        out.push_str(" kube-proxy ");
    };
    out.push_str("add table ");
    out.push_str(fam);
    out.push_str(" kube-proxy { comment \"rules for kube-proxy\" ; }\n");
    for s in &rs.sets {
        head(&mut out, if s.map { "map" } else { "set" });
        out.push_str(&s.name);
        out.push_str(" { type ");
        out.push_str(&key_type(s.key, v6));
        if s.map {
            out.push_str(" : verdict");
        }
        out.push_str(" ; ");
        if s.affinity {
            out.push_str("flags dynamic,timeout ; timeout ");
            push_u64(&mut out, STICKY_SECONDS);
            out.push_str("s ; ");
        }
        if let Some(c) = s.comment {
            out.push_str("comment ");
            push_quoted(&mut out, c);
            out.push_str(" ; ");
        }
        out.push_str("}\n");
    }
    for c in &rs.chains {
        head(&mut out, "chain");
        out.push_str(&c.name);
        if let Some((kind, hook, prio)) = c.base {
            out.push_str(" { type ");
            out.push_str(kind);
            out.push_str(" hook ");
            out.push_str(hook);
            out.push_str(" priority ");
            out.push_str(&prio.to_string());
            out.push_str(" ; }");
        } else if let Some(comment) = c.comment {
            out.push_str(" { comment ");
            push_quoted(&mut out, comment);
            out.push_str(" ; }");
        }
        out.push('\n');
    }
    for c in &rs.chains {
        for r in &c.rules {
            head(&mut out, "rule");
            out.push_str(&c.name);
            out.push(' ');
            push_rule_text(&mut out, r, v6, Syntax::Input);
            out.push('\n');
        }
    }
    for s in &rs.sets {
        for e in &s.elems {
            head(&mut out, "element");
            out.push_str(&s.name);
            out.push_str(" { ");
            push_key(&mut out, s.key, e, v6);
            if let Some(c) = &e.comment {
                out.push_str(" comment ");
                push_quoted(&mut out, c);
            }
            if let Some(v) = &e.verdict {
                out.push_str(" : ");
                push_verdict(&mut out, v);
            }
            out.push_str(" }\n");
        }
    }
    out
}

// ---- nft -j list ruleset ----------------------------------------------------

/// A JSON string; names and comments here are ASCII without `"` or `\`, but
/// escape them anyway so the output stays valid JSON.
fn push_json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_json_ip(out: &mut String, addr: u128, v6: bool) {
    out.push('"');
    push_ip(out, addr, v6);
    out.push('"');
}

/// `{"prefix": {"addr": "10.0.0.0", "len": 8}}`, `{"range": [a, b]}`, or a
/// plain address string.
fn push_json_cidr(out: &mut String, cidr: &str) {
    if let Some((low, high)) = cidr.split_once('-') {
        out.push_str("{\"range\": [");
        push_json_str(out, low);
        out.push_str(", ");
        push_json_str(out, high);
        out.push_str("]}");
        return;
    }
    match cidr.split_once('/') {
        Some((addr, len)) => {
            out.push_str("{\"prefix\": {\"addr\": ");
            push_json_str(out, addr);
            out.push_str(", \"len\": ");
            out.push_str(len);
            out.push_str("}}");
        }
        None => push_json_str(out, cidr),
    }
}

fn push_json_payload(out: &mut String, v6: bool, field: &str) {
    out.push_str("{\"payload\": {\"protocol\": \"");
    out.push_str(family(v6));
    out.push_str("\", \"field\": \"");
    out.push_str(field);
    out.push_str("\"}}");
}

fn push_json_match(
    out: &mut String,
    op: &str,
    left: impl FnOnce(&mut String),
    right: impl FnOnce(&mut String),
) {
    out.push_str("{\"match\": {\"op\": \"");
    out.push_str(op);
    out.push_str("\", \"left\": ");
    left(out);
    out.push_str(", \"right\": ");
    right(out);
    out.push_str("}}");
}

fn push_json_verdict(out: &mut String, v: &Verdict) {
    match v {
        Verdict::Drop => out.push_str("{\"drop\": null}"),
        Verdict::Goto(c) => push_json_jump(out, "goto", c),
    }
}

fn push_json_jump(out: &mut String, kind: &str, target: &str) {
    out.push_str("{\"");
    out.push_str(kind);
    out.push_str("\": {\"target\": ");
    push_json_str(out, target);
    out.push_str("}}");
}

const THREE_KEY: &str = "\"key\": {\"concat\": [";

fn push_json_stmt(out: &mut String, stmt: &Stmt, v6: bool) {
    use Stmt::*;
    let ip = |out: &mut String, a: u128| push_json_ip(out, a, v6);
    match stmt {
        CtStateNew => out.push_str("{\"match\": {\"op\": \"in\", \"left\": {\"ct\": {\"key\": \"state\"}}, \"right\": \"new\"}}"),
        DaddrInSet(s) => push_json_match(
            out,
            "==",
            |o| push_json_payload(o, v6, "daddr"),
            |o| push_json_str(o, &format!("@{s}")),
        ),
        DaddrIs(a) => push_json_match(out, "==", |o| push_json_payload(o, v6, "daddr"), |o| ip(o, *a)),
        DaddrInPrefix(p) => push_json_match(out, "==", |o| push_json_payload(o, v6, "daddr"), |o| push_json_cidr(o, p)),
        SaddrIs(a) => push_json_match(out, "==", |o| push_json_payload(o, v6, "saddr"), |o| ip(o, *a)),
        SaddrInPrefix(p) => push_json_match(out, "==", |o| push_json_payload(o, v6, "saddr"), |o| push_json_cidr(o, p)),
        SaddrNotInPrefix(p) => push_json_match(out, "!=", |o| push_json_payload(o, v6, "saddr"), |o| push_json_cidr(o, p)),
        SaddrInSet(s) => push_json_match(
            out,
            "==",
            |o| push_json_payload(o, v6, "saddr"),
            |o| push_json_str(o, &format!("@{s}")),
        ),
        SaddrNotIn { written, kept: sources } => push_json_match(
            out,
            "!=",
            |o| push_json_payload(o, v6, "saddr"),
            |o| {
                if let ([only], 1) = (sources.as_slice(), written.len()) {
                    push_json_cidr(o, only);
                } else {
                    o.push_str("{\"set\": [");
                    for (i, s) in sources.iter().enumerate() {
                        if i > 0 {
                            o.push_str(", ");
                        }
                        push_json_cidr(o, s);
                    }
                    o.push_str("]}");
                }
            },
        ),
        FibSaddrLocal => out.push_str(
            "{\"match\": {\"op\": \"==\", \"left\": {\"fib\": {\"result\": \"type\", \"flags\": [\"saddr\"]}}, \"right\": \"local\"}}",
        ),
        VmapAddrProtoPort(m) => {
            out.push_str("{\"vmap\": {");
            out.push_str(THREE_KEY);
            push_json_payload(out, v6, "daddr");
            out.push_str(", {\"meta\": {\"key\": \"l4proto\"}}, {\"payload\": {\"protocol\": \"th\", \"field\": \"dport\"}}]}, \"data\": ");
            push_json_str(out, &format!("@{m}"));
            out.push_str("}}");
        }
        VmapProtoPort(m) => {
            out.push_str("{\"vmap\": {\"key\": {\"concat\": [{\"meta\": {\"key\": \"l4proto\"}}, {\"payload\": {\"protocol\": \"th\", \"field\": \"dport\"}}]}, \"data\": ");
            push_json_str(out, &format!("@{m}"));
            out.push_str("}}");
        }
        Numgen(targets) => {
            out.push_str("{\"vmap\": {\"key\": {\"numgen\": {\"mode\": \"random\", \"mod\": ");
            push_u64(out, targets.len() as u64);
            out.push_str(", \"offset\": 0}}, \"data\": {\"set\": [");
            for (i, t) in targets.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push('[');
                push_u64(out, i as u64);
                out.push_str(", ");
                push_json_jump(out, "goto", t);
                out.push(']');
            }
            out.push_str("]}}}");
        }
        MarkSetOr | MarkSetXor => {
            out.push_str("{\"mangle\": {\"key\": {\"meta\": {\"key\": \"mark\"}}, \"value\": {\"");
            out.push(if matches!(stmt, MarkSetOr) { '|' } else { '^' });
            out.push_str("\": [{\"meta\": {\"key\": \"mark\"}}, 16384]}}}");
        }
        MarkAndZero => out.push_str(
            "{\"match\": {\"op\": \"==\", \"left\": {\"&\": [{\"meta\": {\"key\": \"mark\"}}, 16384]}, \"right\": 0}}",
        ),
        Masquerade => out.push_str("{\"masquerade\": {\"flags\": \"fully-random\"}}"),
        Reject => out.push_str(if v6 {
            "{\"reject\": {\"type\": \"icmpv6\", \"expr\": \"port-unreachable\"}}"
        } else {
            "{\"reject\": {\"type\": \"icmp\", \"expr\": \"port-unreachable\"}}"
        }),
        Drop => out.push_str("{\"drop\": null}"),
        Return => out.push_str("{\"return\": null}"),
        Jump(c) => push_json_jump(out, "jump", c),
        Goto(c) => push_json_jump(out, "goto", c),
        UpdateSaddr(s) => {
            out.push_str("{\"set\": {\"op\": \"update\", \"elem\": ");
            push_json_payload(out, v6, "saddr");
            out.push_str(", \"set\": ");
            push_json_str(out, &format!("@{s}"));
            out.push_str("}}");
        }
        L4proto(p) => {
            out.push_str("{\"match\": {\"op\": \"==\", \"left\": {\"meta\": {\"key\": \"l4proto\"}}, \"right\": \"");
            out.push_str(p.as_str());
            out.push_str("\"}}");
        }
        Dnat(a, port) => {
            out.push_str("{\"dnat\": {\"addr\": ");
            ip(out, *a);
            out.push_str(", \"port\": ");
            push_u64(out, u64::from(*port));
            out.push_str("}}");
        }
    }
}

/// Whether the kernel holds this statement's data in an anonymous set, which
/// takes a handle of its own before the rule's.
fn anonymous_set(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Numgen(_) => true,
        Stmt::SaddrNotIn { written, .. } => written.len() > 1,
        _ => false,
    }
}

fn push_json_key(out: &mut String, key: Key, e: &Elem, v6: bool) {
    match key {
        Key::Addr => push_json_ip(out, e.addr, v6),
        Key::ProtoPort | Key::AddrProtoPort => {
            out.push_str("{\"concat\": [");
            if key == Key::AddrProtoPort {
                push_json_ip(out, e.addr, v6);
                out.push_str(", ");
            }
            out.push('"');
            out.push_str(e.proto.as_str());
            out.push_str("\", ");
            push_u64(out, u64::from(e.port));
            out.push_str("]}");
        }
    }
}

fn print_json(rs: &Ruleset) -> String {
    let v6 = rs.v6;
    let fam = family(v6);
    let mut out = String::with_capacity(estimate(rs) * 3);
    let object_head = |out: &mut String, kind: &str| {
        out.push_str(", {\"");
        out.push_str(kind);
        out.push_str("\": {\"family\": \"");
        out.push_str(fam);
        out.push_str("\", ");
    };
    out.push_str("{\"nftables\": [{\"metainfo\": {\"version\": \"1.0.6\", \"release_name\": \"Lester Gooch #5\", \"json_schema_version\": 1}}");
    out.push_str(", {\"table\": {\"family\": \"");
    out.push_str(fam);
    out.push_str("\", \"name\": \"kube-proxy\", \"handle\": 1}}");
    let mut handle = 0u64;
    for s in &rs.sets {
        handle += 1;
        object_head(&mut out, if s.map { "map" } else { "set" });
        out.push_str("\"name\": ");
        push_json_str(&mut out, &s.name);
        out.push_str(", \"table\": \"kube-proxy\", \"type\": ");
        match s.key {
            Key::Addr => push_json_str(&mut out, addr_type(v6)),
            Key::ProtoPort => out.push_str("[\"inet_proto\", \"inet_service\"]"),
            Key::AddrProtoPort => {
                out.push('[');
                push_json_str(&mut out, addr_type(v6));
                out.push_str(", \"inet_proto\", \"inet_service\"]");
            }
        }
        out.push_str(", \"handle\": ");
        push_u64(&mut out, handle);
        if s.affinity {
            out.push_str(", \"size\": 65535");
        }
        if let Some(c) = s.comment {
            out.push_str(", \"comment\": ");
            push_json_str(&mut out, c);
        }
        if s.map {
            out.push_str(", \"map\": \"verdict\"");
        }
        if s.affinity {
            out.push_str(", \"flags\": [\"timeout\"], \"timeout\": ");
            push_u64(&mut out, STICKY_SECONDS);
        }
        if !s.elems.is_empty() {
            out.push_str(", \"elem\": [");
            for (i, e) in s.elems.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if s.map {
                    out.push('[');
                }
                match &e.comment {
                    Some(c) => {
                        out.push_str("{\"elem\": {\"val\": ");
                        push_json_key(&mut out, s.key, e, v6);
                        out.push_str(", \"comment\": ");
                        push_json_str(&mut out, c);
                        out.push_str("}}");
                    }
                    None => push_json_key(&mut out, s.key, e, v6),
                }
                if let Some(v) = &e.verdict {
                    out.push_str(", ");
                    push_json_verdict(&mut out, v);
                }
                if s.map {
                    out.push(']');
                }
            }
            out.push(']');
        }
        out.push_str("}}");
    }
    for c in &rs.chains {
        handle += 1;
        object_head(&mut out, "chain");
        out.push_str("\"table\": \"kube-proxy\", \"name\": ");
        push_json_str(&mut out, &c.name);
        out.push_str(", \"handle\": ");
        push_u64(&mut out, handle);
        if let Some((kind, hook, prio)) = c.base {
            out.push_str(", \"type\": \"");
            out.push_str(kind);
            out.push_str("\", \"hook\": \"");
            out.push_str(hook);
            out.push_str("\", \"prio\": ");
            out.push_str(&prio.to_string());
            out.push_str(", \"policy\": \"accept\"");
        }
        out.push_str("}}");
    }
    for c in &rs.chains {
        for r in &c.rules {
            handle += r.stmts.iter().filter(|s| anonymous_set(s)).count() as u64;
            handle += 1;
            object_head(&mut out, "rule");
            out.push_str("\"table\": \"kube-proxy\", \"chain\": ");
            push_json_str(&mut out, &c.name);
            out.push_str(", \"handle\": ");
            push_u64(&mut out, handle);
            if let Some(comment) = r.comment {
                out.push_str(", \"comment\": ");
                push_json_str(&mut out, comment);
            }
            out.push_str(", \"expr\": [");
            for (i, s) in r.stmts.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_json_stmt(&mut out, s, v6);
            }
            out.push_str("]}}");
        }
    }
    out.push_str("]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_print_like_nft() {
        assert_eq!(priority_text("prerouting", -110), "dstnat - 10");
        assert_eq!(priority_text("output", -110), "-110");
        assert_eq!(priority_text("output", -100), "-100");
        assert_eq!(priority_text("prerouting", -100), "dstnat");
        assert_eq!(priority_text("forward", 0), "filter");
        assert_eq!(priority_text("postrouting", 100), "srcnat");
    }

    #[test]
    fn durations_print_like_nft() {
        assert_eq!(duration_text(10_800), "3h");
        assert_eq!(duration_text(93_784), "1d2h3m4s");
        assert_eq!(duration_text(0), "0s");
    }

    #[test]
    fn chain_names_hash_like_kube_proxy() {
        // From kube-proxy's TestOverallNFTablesRules.
        let spec = PortSpec {
            name: "ns1/svc1:p80".to_owned(),
            proto: Proto::Tcp,
            port: 80,
            target: 80,
            node_port: 0,
        };
        assert_eq!(chain_base(&spec), "ULMVA6XW-ns1/svc1/tcp/p80");
        let pod = Pod {
            addr: u128::from(0x0ab4_0001u32),
            local: false,
        };
        assert_eq!(
            endpoint_base(&spec, &pod, false),
            "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80"
        );
    }

    #[test]
    fn intervals_merge_like_the_kernel() {
        let v4 = |xs: &[&str]| {
            merge_intervals(&xs.iter().map(|x| x.to_string()).collect::<Vec<_>>(), false)
        };
        let v6 = |xs: &[&str]| {
            merge_intervals(&xs.iter().map(|x| x.to_string()).collect::<Vec<_>>(), true)
        };
        assert_eq!(
            v4(&["192.168.0.0/16", "10.0.0.0/8", "198.18.0.1"]),
            ["10.0.0.0/8", "192.168.0.0/16", "198.18.0.1"]
        );
        assert_eq!(v4(&["10.0.0.0/25", "10.0.0.128/25"]), ["10.0.0.0/24"]);
        assert_eq!(v4(&["0.0.0.0/0"]), ["0.0.0.0/0"]);
        assert_eq!(
            v6(&["2001:db8:3::/48", "2001:db8:4::/48"]),
            ["2001:db8:3::-2001:db8:4:ffff:ffff:ffff:ffff:ffff"]
        );
        assert_eq!(v6(&["::/0"]), ["::/0"]);
        assert_eq!(
            v6(&["2001:db8:2::/48", "fd00::/8", "2001:db8:4c42::9"]),
            ["2001:db8:2::/48", "2001:db8:4c42::9", "fd00::/8"]
        );
        assert_eq!(v4(&["not-an-address"]), ["not-an-address"]);
    }
}
