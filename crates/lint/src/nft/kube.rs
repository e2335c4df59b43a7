//! The Kubernetes model of an nftables node: what kube-proxy's nftables mode
//! (`pkg/proxy/nftables/proxier.go`) wrote into `table ip kube-proxy` / `table ip6 kube-proxy`,
//! read back into the backend-neutral [`CatalogService`]s, with the layout generation.
//!
//! kube-proxy names every per-Service chain `PREFIX-HASH-ns/name/proto/port` (`service-`,
//! `local-`, `external-`, `firewall-`) and every endpoint chain
//! `endpoint-HASH-ns/name/proto/port__IP/PORT`, so the chain name alone says which Service port
//! it serves; the verdict maps `service-ips` and `service-nodeports` are the ways in, and
//! `no-endpoint-services` / `no-endpoint-nodeports` carry the `ns/name:port` comments of
//! Services without (local) endpoints.

use crate::kube::AddressKind;
use crate::kube::catalog::{
    Affinity, CatalogAddress, CatalogEndpoint, CatalogService, NodePortAddresses, Origin,
    SourceRange,
};
use ipnet::IpNet;
use rulelint_nft::{
    ChainGraph, ChainId, Element, Expr, Family, LineIndex, Node, Proto, Ruleset, Set, SetId, Stmt,
    TableId, Value, VerdictKind,
};
use rulelint_parser::views::Mark;
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// What proxies Services on this node, as an nftables listing shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NftMode {
    /// kube-proxy's nftables mode: `table ip kube-proxy` / `table ip6 kube-proxy`.
    Nftables,
    /// kube-proxy's iptables mode on an iptables-nft host, listed by `nft`: `KUBE-*` chains in
    /// the `ip nat` / `ip filter` tables iptables-nft manages. Its Services are read from
    /// `iptables-save`, not from this listing (the comments that name them are gone).
    IptablesNft,
    /// Neither.
    None,
}

impl NftMode {
    /// A short description for humans.
    pub fn describe(self) -> &'static str {
        match self {
            NftMode::Nftables => "kube-proxy nftables mode",
            NftMode::IptablesNft => {
                "kube-proxy iptables mode seen through iptables-nft (not nftables mode): \
                 read its Services from `iptables-save`"
            }
            NftMode::None => "no kube-proxy rules",
        }
    }
}

/// Which generation of kube-proxy's nftables layout the dump holds (the layout changed
/// between releases; see the background notes §1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NftGeneration {
    /// No kube-proxy table.
    None,
    /// The 1.29 alpha: filter base chains at priority -101, one `endpoints-check` chain.
    Alpha,
    /// Filter base chains at `dstnat - 10` (-110) named by hook, `filter-output-post-dnat`
    /// (2024 to mid-2025).
    PostDnatFilter,
    /// `filter-prerouting-pre-dnat` / `filter-output-pre-dnat` at -110, the other filter chains
    /// at 0, a `mark-for-masquerade` chain (kubernetes#132456, mid-2025).
    PreDnatFilter,
    /// As [`PreDnatFilter`](Self::PreDnatFilter) without the `mark-for-masquerade` chain:
    /// marking is inlined (kubernetes#135800, 2026).
    InlineMasquerade,
    /// Service chains DNAT directly through `numgen random mod N map { ... }`, without
    /// endpoint chains in the path (kubernetes#140362 era, mid-2026).
    DirectDnat,
    /// A kube-proxy table whose base chains match none of the layouts above.
    Unrecognised,
}

impl NftGeneration {
    /// The kebab-case name (`services` JSON).
    pub fn name(self) -> &'static str {
        match self {
            NftGeneration::None => "none",
            NftGeneration::Alpha => "alpha",
            NftGeneration::PostDnatFilter => "post-dnat-filter",
            NftGeneration::PreDnatFilter => "pre-dnat-filter",
            NftGeneration::InlineMasquerade => "inline-masquerade",
            NftGeneration::DirectDnat => "direct-dnat",
            NftGeneration::Unrecognised => "unrecognised",
        }
    }

    /// A short description for humans.
    pub fn describe(self) -> &'static str {
        match self {
            NftGeneration::None => "no kube-proxy rules",
            NftGeneration::Alpha => {
                "kube-proxy nftables mode, alpha layout (filter chains at priority -101: 1.29)"
            }
            NftGeneration::PostDnatFilter => {
                "kube-proxy nftables mode, post-dnat-filter layout (filter chains at -110, \
                 filter-output-post-dnat: 1.30 to 1.33)"
            }
            NftGeneration::PreDnatFilter => {
                "kube-proxy nftables mode, pre-dnat-filter layout (filter-prerouting-pre-dnat, \
                 mark-for-masquerade: 1.34 on)"
            }
            NftGeneration::InlineMasquerade => {
                "kube-proxy nftables mode, inline-masquerade layout (no mark-for-masquerade \
                 chain: 2026)"
            }
            NftGeneration::DirectDnat => {
                "kube-proxy nftables mode, direct-dnat layout (service chains DNAT through a \
                 numgen map: 2026)"
            }
            NftGeneration::Unrecognised => {
                "kube-proxy nftables mode, unrecognised layout (base chains of no known release)"
            }
        }
    }
}

/// The chains of one Service port in the ruleset.
#[derive(Clone, Debug, Default)]
pub struct NftServiceChains {
    /// `service-*`, `local-*`, `external-*`, `firewall-*`.
    pub service_chains: Vec<ChainId>,
    /// `endpoint-*` chains named after the Service port.
    pub endpoint_chains: Vec<ChainId>,
}

/// What kube-proxy wrote into an nftables ruleset.
#[derive(Clone, Debug)]
pub struct NftKubeModel<'a> {
    /// Which program proxies Services.
    pub mode: NftMode,
    /// The layout generation (of the first kube-proxy table).
    pub generation: NftGeneration,
    /// `table ip kube-proxy`, `table ip6 kube-proxy`.
    pub tables: Vec<TableId>,
    /// Every live Service port, in the order the dump first shows it.
    pub services: Vec<CatalogService<'a>>,
    /// The chains of each of [`services`](Self::services) (same index).
    pub chains: Vec<NftServiceChains>,
    /// The masquerade mark (`mark-for-masquerade`, or the `masquerading` chain's test).
    pub masquerade_mark: Option<Mark>,
    /// Where NodePorts are accepted.
    pub node_port_addresses: NodePortAddresses,
    /// Endpoint chains of live Service ports that nothing leads to.
    pub unused_endpoint_chains: Vec<&'a str>,
    /// Chains of Service ports nothing leads to: what kube-proxy leaves of a deleted Service
    /// until a sync a second later (flushed and unreferenced), not an error.
    pub stale_chains: Vec<&'a str>,
}

/// The per-Service chain kinds, by name prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChainKind {
    Cluster,
    Local,
    External,
    Firewall,
    Endpoint,
}

/// `PREFIX-HASH-ns/name/proto/port[__IP/PORT]` split into kind, hash, `ns/name:port`,
/// protocol. kube-proxy treats every chain name with a `/` as one of these.
struct ChainName<'a> {
    kind: ChainKind,
    hash: &'a str,
    service: Cow<'a, str>,
    protocol: &'a str,
}

fn chain_name(name: &str) -> Option<ChainName<'_>> {
    let (prefix, rest) = name.split_once('-')?;
    let kind = match prefix {
        "service" | "svc" => ChainKind::Cluster,
        "local" => ChainKind::Local,
        "external" => ChainKind::External,
        "firewall" => ChainKind::Firewall,
        "endpoint" => ChainKind::Endpoint,
        _ => return None,
    };
    let (hash, base) = rest.split_once('-')?;
    let base = match kind {
        ChainKind::Endpoint => base.split_once("__").map_or(base, |(b, _)| b),
        _ => base,
    };
    // A name cut to nft's length limit ends in `...`: no reliable Service name.
    if base.ends_with("...") {
        return None;
    }
    let mut parts = base.splitn(4, '/');
    let (namespace, service, protocol, port) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if namespace.is_empty() || service.is_empty() || protocol.is_empty() {
        return None;
    }
    let service = if port.is_empty() {
        Cow::Owned(format!("{namespace}/{service}"))
    } else {
        Cow::Owned(format!("{namespace}/{service}:{port}"))
    };
    Some(ChainName {
        kind,
        hash,
        service,
        protocol,
    })
}

/// The names only kube-proxy's nftables mode gives its maps and fixed chains.
const KUBE_PROXY_OBJECTS: &[&str] = &[
    "service-ips",
    "service-nodeports",
    "no-endpoint-services",
    "no-endpoint-nodeports",
    "firewall-ips",
    "cluster-ips",
    "nodeport-ips",
    "filter-prerouting-pre-dnat",
    "filter-output-pre-dnat",
    "filter-output-post-dnat",
    "service-endpoints-check",
    "nodeport-endpoints-check",
    "cluster-ips-check",
    "mark-for-masquerade",
];

/// kube-proxy's tables: `table ip kube-proxy`, `table ip6 kube-proxy`, and a pasted fragment
/// without its `table` line whose chains or maps carry kube-proxy's names (users paste one map
/// or one chain).
fn kube_tables(set: &Ruleset<'_>) -> Vec<TableId> {
    set.tables
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            (t.name == Some("kube-proxy") && matches!(t.family, Some(Family::Ip | Family::Ip6)))
                || (t.is_headerless()
                    && (t.chains.iter().any(|&c| {
                        let name = set.chains[c.index()].name;
                        KUBE_PROXY_OBJECTS.contains(&name)
                            || chain_name(name).is_some()
                            || jumps_to_kube_proxy_chain(set, c)
                    }) || t
                        .sets
                        .iter()
                        .any(|m| KUBE_PROXY_OBJECTS.contains(&set.sets[m.index()].name))))
        })
        .map(|(i, _)| TableId(i as u32))
        .collect()
}

/// A rule of `chain` jumps to one of kube-proxy's fixed chains (`ct state new jump
/// nodeport-endpoints-check` in a pasted `filter-input`).
fn jumps_to_kube_proxy_chain(set: &Ruleset<'_>, chain: ChainId) -> bool {
    set.rules_of(chain).any(|r| {
        set.statements_of(r).iter().any(|s| {
            matches!(&s.kind, Stmt::Verdict(v) if v.target.is_some_and(|t| KUBE_PROXY_OBJECTS.contains(&t)))
        })
    })
}

/// An iptables-nft listing of kube-proxy's iptables mode: `KUBE-SERVICES` or `KUBE-SVC-*`
/// chains in an `ip`/`ip6` `nat` table.
fn is_iptables_nft(set: &Ruleset<'_>) -> bool {
    set.chains.iter().any(|c| {
        let table = &set.tables[c.table.index()];
        table.name == Some("nat")
            && matches!(table.family, Some(Family::Ip | Family::Ip6))
            && (c.name == "KUBE-SERVICES" || c.name.starts_with("KUBE-SVC-"))
    })
}

fn generation(set: &Ruleset<'_>, table: TableId) -> NftGeneration {
    let chains = &set.tables[table.index()].chains;
    let named = |name: &str| set.chain_in(table, name);
    let filter_priorities: Vec<i32> = chains
        .iter()
        .filter_map(|c| set.chains[c.index()].base.as_ref())
        .filter(|b| b.kind == "filter")
        .filter_map(|b| b.priority.value)
        .collect();
    let direct_dnat = chains.iter().any(|&c| {
        chain_name(set.chains[c.index()].name).is_some_and(|n| n.kind == ChainKind::Cluster)
            && set.rules_of(c).any(|r| {
                set.statements_of(r).iter().any(|s| {
                    matches!(&s.kind, Stmt::Nat(nat) if nat.kind == "dnat"
                        && matches!(&nat.to, Some(Expr::Map { key, .. }) if matches!(**key, Expr::Numgen(_))))
                })
            })
    });
    if direct_dnat {
        NftGeneration::DirectDnat
    } else if named("filter-prerouting-pre-dnat").is_some()
        || named("filter-output-pre-dnat").is_some()
    {
        if named("mark-for-masquerade").is_some() {
            NftGeneration::PreDnatFilter
        } else {
            NftGeneration::InlineMasquerade
        }
    } else if named("filter-output-post-dnat").is_some() || filter_priorities.contains(&-110) {
        NftGeneration::PostDnatFilter
    } else if named("endpoints-check").is_some() || filter_priorities.contains(&-101) {
        NftGeneration::Alpha
    } else {
        NftGeneration::Unrecognised
    }
}

/// A literal's text, when `e` is one.
fn literal<'a>(e: &Expr<'a>) -> Option<&'a str> {
    match e {
        Expr::Literal(s) => Some(s),
        _ => None,
    }
}

/// A map element's key as `[address,] protocol, port`.
fn key_parts<'a>(element: &Element<'a>) -> Vec<&'a str> {
    match &element.key {
        Expr::Concat(parts) => parts.iter().filter_map(literal).collect(),
        e => literal(e).into_iter().collect(),
    }
}

fn verdict<'a>(element: &Element<'a>) -> Option<(VerdictKind, Option<&'a str>)> {
    match &element.value {
        Some(Value::Verdict(v)) => Some((v.kind, v.target)),
        _ => None,
    }
}

/// Seconds of an nft duration: `3h`, `10800s`, `1d2h3m4s`.
fn duration_seconds(text: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            number = Some(number.unwrap_or(0).checked_mul(10)?.checked_add(d as u64)?);
            continue;
        }
        let unit = match c {
            'd' => 86_400,
            'h' => 3_600,
            'm' => 60,
            's' => 1,
            _ => return None,
        };
        total = total.checked_add(number.take()?.checked_mul(unit)?)?;
    }
    if number.is_some() {
        return None;
    }
    Some(total)
}

/// `0x00004000` as a number.
fn hex_or_decimal(text: &str) -> Option<u32> {
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The networks of a match's right side: `10.0.0.0/8` or `{ a, b }`.
fn networks(e: &Expr<'_>) -> Vec<IpNet> {
    let parse = |s: &str| rulelint_parser::views::parse_address(s).ok();
    match e {
        Expr::Literal(s) => parse(s).into_iter().collect(),
        Expr::Set(elements) => elements
            .iter()
            .filter_map(|el| literal(&el.key).and_then(parse))
            .collect(),
        _ => Vec::new(),
    }
}

fn is_saddr(e: &Expr<'_>) -> bool {
    matches!(
        e,
        Expr::Payload {
            proto: Proto::Ip | Proto::Ip6,
            field: "saddr"
        }
    )
}

struct Builder<'r, 'a> {
    set: &'r Ruleset<'a>,
    graph: &'r ChainGraph,
    lines: LineIndex,
    services: Vec<CatalogService<'a>>,
    chains: Vec<NftServiceChains>,
    by_name: FxHashMap<Cow<'a, str>, usize>,
    /// Per chain: the Service port index of a per-Service or endpoint chain.
    service_of_chain: FxHashMap<ChainId, usize>,
    /// Chains and sets by table and name: `Ruleset::chain_in` scans a table, and a node of
    /// 5,000 Services looks up tens of thousands of names.
    chain_index: FxHashMap<(TableId, &'a str), ChainId>,
    set_index: FxHashMap<(TableId, &'a str), SetId>,
}

impl<'r, 'a> Builder<'r, 'a> {
    fn origin(&self, span: rulelint_parser::Span) -> Origin {
        Origin::new(&self.lines, span)
    }

    fn service(&mut self, name: Cow<'a, str>) -> usize {
        if let Some(&i) = self.by_name.get(&name) {
            return i;
        }
        self.services.push(CatalogService {
            name: Some(name.clone()),
            ..CatalogService::default()
        });
        self.chains.push(NftServiceChains::default());
        self.by_name.insert(name, self.services.len() - 1);
        self.services.len() - 1
    }

    fn map(&self, table: TableId, name: &str) -> Option<&'r Set<'a>> {
        let set = *self.set_index.get(&(table, name))?;
        Some(&self.set.sets[set.index()])
    }

    fn chain_in(&self, table: TableId, name: &str) -> Option<ChainId> {
        self.chain_index.get(&(table, name)).copied()
    }

    fn read_chains(&mut self, table: TableId) {
        for &id in &self.set.tables[table.index()].chains {
            let chain = &self.set.chains[id.index()];
            let Some(name) = chain_name(chain.name) else {
                continue;
            };
            let i = self.service(name.service);
            self.service_of_chain.insert(id, i);
            let service = &mut self.services[i];
            service.protocol.get_or_insert(name.protocol);
            let slot = match name.kind {
                ChainKind::Cluster => &mut service.chains.cluster,
                ChainKind::Local => &mut service.chains.local,
                ChainKind::External => &mut service.chains.external,
                ChainKind::Firewall => &mut service.chains.firewall,
                ChainKind::Endpoint => {
                    self.chains[i].endpoint_chains.push(id);
                    continue;
                }
            };
            slot.get_or_insert(chain.name);
            if name.kind == ChainKind::Cluster {
                service.hash.get_or_insert(name.hash);
            }
            self.chains[i].service_chains.push(id);
        }
    }

    /// The ways in: `service-ips`, `service-nodeports`, and the no-endpoint maps.
    fn read_maps(&mut self, table: TableId) {
        let firewalled: Vec<Vec<&'a str>> = self
            .map(table, "firewall-ips")
            .map(|m| m.elements.iter().map(key_parts).collect())
            .unwrap_or_default();
        let cluster_ips: Vec<&'a str> = self
            .map(table, "cluster-ips")
            .map(|s| s.elements.iter().filter_map(|e| literal(&e.key)).collect())
            .unwrap_or_default();
        for (map_name, node_port) in [("service-ips", false), ("service-nodeports", true)] {
            let Some(map) = self.map(table, map_name) else {
                continue;
            };
            for element in &map.elements {
                let Some((_, Some(target))) = verdict(element) else {
                    continue;
                };
                let Some(target_id) = self.chain_in(table, target) else {
                    continue;
                };
                let Some(&i) = self.service_of_chain.get(&target_id) else {
                    continue;
                };
                let kind = chain_name(target).map(|n| n.kind);
                let key = key_parts(element);
                let address = self.address(&key, node_port, element, |key| {
                    if node_port {
                        AddressKind::NodePort
                    } else if matches!(kind, Some(ChainKind::Cluster | ChainKind::Local)) {
                        AddressKind::ClusterIp
                    } else if firewalled.iter().any(|f| f == key) {
                        AddressKind::LoadBalancerIp
                    } else {
                        AddressKind::ExternalIp
                    }
                });
                let service = &mut self.services[i];
                if address.kind == AddressKind::ClusterIp && kind == Some(ChainKind::Local) {
                    service.internal_local = true;
                }
                service.addresses.push(address);
            }
        }
        for (map_name, node_port) in [
            ("no-endpoint-services", false),
            ("no-endpoint-nodeports", true),
        ] {
            let Some(map) = self.map(table, map_name) else {
                continue;
            };
            for element in &map.elements {
                let Some(comment) = element.comment else {
                    continue;
                };
                let Some((verdict, _)) = verdict(element) else {
                    continue;
                };
                let i = self.service(Cow::Borrowed(comment));
                let key = key_parts(element);
                let address = self.address(&key, node_port, element, |key| {
                    if node_port {
                        AddressKind::NodePort
                    } else if key.first().is_some_and(|a| cluster_ips.contains(a)) {
                        AddressKind::ClusterIp
                    } else if firewalled.iter().any(|f| f == key) {
                        AddressKind::LoadBalancerIp
                    } else {
                        AddressKind::ExternalIp
                    }
                });
                let origin = address.origin;
                let service = &mut self.services[i];
                if service.protocol.is_none() {
                    service.protocol = address.protocol;
                }
                if verdict == VerdictKind::Drop {
                    service.drops_without_local_endpoints.push(origin);
                    service.external_local = true;
                } else {
                    service.rejects_without_endpoints.push(origin);
                }
                // A Service without endpoints is known by these elements: its addresses. (A
                // load balancer keeps its firewall chain then, and the map leads to it only
                // for the load-balancer IP.)
                let known = service.addresses.iter().any(|a| {
                    (a.address, a.protocol, a.port)
                        == (address.address, address.protocol, address.port)
                        && (a.kind == AddressKind::NodePort)
                            == (address.kind == AddressKind::NodePort)
                });
                if !known {
                    service.addresses.push(address);
                }
            }
        }
    }

    fn address(
        &self,
        key: &[&'a str],
        node_port: bool,
        element: &Element<'a>,
        kind: impl Fn(&[&'a str]) -> AddressKind,
    ) -> CatalogAddress<'a> {
        let (address, rest) = if node_port {
            (None, key)
        } else {
            match key.split_first() {
                Some((a, rest)) => (rulelint_parser::views::parse_address(a).ok(), rest),
                None => (None, key),
            }
        };
        CatalogAddress {
            kind: kind(key),
            address,
            protocol: rest.first().copied(),
            port: rest
                .get(1)
                .and_then(|p| p.split('-').next())
                .and_then(|p| p.parse().ok()),
            origin: self.origin(element.span),
        }
    }

    /// The DNAT destination and hairpin marking of an endpoint chain.
    fn endpoint_chain(&self, chain: ChainId) -> (Option<Cow<'a, str>>, bool) {
        let mut destination = None;
        let mut hairpin = false;
        for rule in self.set.rules_of(chain) {
            let from_itself = self.set.statements_of(rule).iter().any(|s| {
                matches!(&s.kind, Stmt::Match { left, op: None | Some("=="), right: Expr::Literal(_) } if is_saddr(left))
            });
            let marks = self.set.statements_of(rule).iter().any(|s| match &s.kind {
                Stmt::Verdict(v) => v.kind.takes_chain() && v.target == Some("mark-for-masquerade"),
                Stmt::Assign { left, .. } => matches!(left, Expr::Meta { key: "mark", .. }),
                _ => false,
            });
            hairpin |= from_itself && marks;
            for s in self.set.statements_of(rule) {
                if let Stmt::Nat(nat) = &s.kind
                    && nat.kind == "dnat"
                    && let Some(Expr::Literal(to)) = &nat.to
                {
                    destination.get_or_insert(Cow::Borrowed(*to));
                }
            }
        }
        (destination, hairpin)
    }

    fn endpoint_entry(
        &self,
        target: &'a str,
        table: TableId,
        share: Option<f64>,
        affinity_check: bool,
        span: rulelint_parser::Span,
    ) -> CatalogEndpoint<'a> {
        let chain = self.chain_in(table, target);
        let (destination, hairpin_masquerade) = chain
            .map(|c| self.endpoint_chain(c))
            .unwrap_or((None, false));
        CatalogEndpoint {
            chain: Some(target),
            destination,
            probability: share,
            share,
            affinity_check,
            hairpin_masquerade,
            origin: self.origin(span),
        }
    }

    /// The endpoint entries of a `service-*` or `local-*` chain.
    fn balancing_chain(&self, chain: ChainId, table: TableId) -> Vec<CatalogEndpoint<'a>> {
        let mut out = Vec::new();
        for rule in self.set.rules_of(chain) {
            let affinity = self.set.statements_of(rule).iter().any(|s| {
                matches!(&s.kind, Stmt::Match { left, right: Expr::SetRef(set), .. }
                    if is_saddr(left) && set.starts_with("affinity-"))
            });
            for s in self.set.statements_of(rule) {
                match &s.kind {
                    Stmt::Vmap {
                        key: Expr::Numgen(numgen),
                        map: Expr::Set(elements),
                    } => {
                        let n: Option<f64> = numgen
                            .modulus
                            .parse::<u32>()
                            .ok()
                            .filter(|&n| n > 0)
                            .map(f64::from);
                        for element in elements {
                            if let Some((kind, Some(target))) = verdict(element)
                                && kind.takes_chain()
                            {
                                out.push(self.endpoint_entry(
                                    target,
                                    table,
                                    n.map(|n| 1.0 / n),
                                    false,
                                    element.span,
                                ));
                            }
                        }
                    }
                    Stmt::Verdict(v) if v.kind.takes_chain() => {
                        if let Some(target) = v.target
                            && target.starts_with("endpoint-")
                        {
                            let share = (!affinity).then_some(1.0);
                            out.push(
                                self.endpoint_entry(target, table, share, affinity, rule.span),
                            );
                        }
                    }
                    Stmt::Nat(nat) if nat.kind == "dnat" => {
                        if let Some(to) = &nat.to {
                            out.extend(self.direct_dnat(to, rule.span));
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// A service chain's own DNAT (the direct-dnat layout): `dnat to IP:PORT` or
    /// `dnat ip addr . port to numgen random mod N map { 0 : IP . PORT, ... }`.
    fn direct_dnat(&self, to: &Expr<'a>, span: rulelint_parser::Span) -> Vec<CatalogEndpoint<'a>> {
        let entry = |destination: Cow<'a, str>, share: Option<f64>, span| CatalogEndpoint {
            chain: None,
            destination: Some(destination),
            probability: share,
            share,
            affinity_check: false,
            hairpin_masquerade: false,
            origin: self.origin(span),
        };
        match to {
            Expr::Literal(text) => vec![entry(Cow::Borrowed(*text), Some(1.0), span)],
            Expr::Map { key, map } => {
                let (Expr::Numgen(numgen), Expr::Set(elements)) = (&**key, &**map) else {
                    return Vec::new();
                };
                let share = numgen
                    .modulus
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .map(|n| 1.0 / f64::from(n));
                elements
                    .iter()
                    .filter_map(|element| {
                        let Some(Value::Data(data)) = &element.value else {
                            return None;
                        };
                        let text = match &**data {
                            Expr::Concat(parts) => {
                                let parts: Vec<&str> = parts.iter().filter_map(literal).collect();
                                match parts[..] {
                                    [ip, port] if ip.contains(':') => format!("[{ip}]:{port}"),
                                    [ip, port] => format!("{ip}:{port}"),
                                    _ => return None,
                                }
                            }
                            e => literal(e)?.to_string(),
                        };
                        Some(entry(Cow::Owned(text), share, element.span))
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    fn read_service_chains(&mut self, table: TableId) {
        for i in 0..self.services.len() {
            let chain_ids = self.chains[i].service_chains.clone();
            for chain in chain_ids {
                if self.set.chains[chain.index()].table != table {
                    continue;
                }
                let name = self.set.chains[chain.index()].name;
                match chain_name(name).map(|n| n.kind) {
                    Some(ChainKind::Cluster) => {
                        let entries = self.balancing_chain(chain, table);
                        self.services[i].endpoints.extend(entries);
                    }
                    Some(ChainKind::Local) => {
                        let entries = self.balancing_chain(chain, table);
                        self.services[i].local_endpoints.extend(entries);
                    }
                    Some(ChainKind::External) => {
                        let local = self.set.rules_of(chain).any(|r| {
                            self.set.statements_of(r).iter().any(|s| match &s.kind {
                                Stmt::Comment(c) => c.starts_with("short-circuit"),
                                Stmt::Verdict(v) => {
                                    v.target.is_some_and(|t| t.starts_with("local-"))
                                }
                                _ => false,
                            })
                        });
                        self.services[i].external_local |= local;
                    }
                    Some(ChainKind::Firewall) => {
                        let mut ranges = Vec::new();
                        for rule in self.set.rules_of(chain) {
                            for s in self.set.statements_of(rule) {
                                if let Stmt::Match {
                                    left,
                                    op: Some("!="),
                                    right,
                                } = &s.kind
                                    && is_saddr(left)
                                {
                                    for network in networks(right) {
                                        ranges.push(SourceRange {
                                            network,
                                            origin: self.origin(rule.span),
                                        });
                                    }
                                }
                            }
                        }
                        self.services[i].source_ranges.extend(ranges);
                    }
                    _ => {}
                }
            }
            // The affinity set of any endpoint gives the timeout.
            if self.services[i].endpoints.iter().any(|e| e.affinity_check) {
                let first = self.services[i]
                    .endpoints
                    .iter()
                    .find(|e| e.affinity_check)
                    .map(|e| e.origin);
                let timeout = self.chains[i].endpoint_chains.iter().find_map(|&c| {
                    let name = self.set.chains[c.index()].name.strip_prefix("endpoint-")?;
                    let set = self.map(table, &format!("affinity-{name}"))?;
                    Some((set.timeout.and_then(duration_seconds), set.span))
                });
                self.services[i].affinity = match timeout {
                    Some((timeout_seconds, span)) => Some(Affinity {
                        timeout_seconds,
                        origin: self.origin(span),
                    }),
                    None => first.map(|origin| Affinity {
                        timeout_seconds: None,
                        origin,
                    }),
                };
            }
        }
    }

    /// Whether something other than the Service port's own chains leads to `chain`.
    fn referenced(&self, chain: ChainId, own: &[ChainId]) -> bool {
        self.graph.jumps_into(chain).any(|(from, _)| match from {
            Node::Set(_) => true,
            Node::Chain(c) => !own.contains(&c),
        })
    }

    fn masquerade_mark(&self, table: TableId) -> Option<Mark> {
        let mark_from = |e: &Expr<'_>| match e {
            Expr::Binop(b) if matches!(b.op, "|" | "&" | "^") => {
                literal(&b.right).and_then(hex_or_decimal)
            }
            _ => None,
        };
        for name in ["mark-for-masquerade", "masquerading"] {
            let Some(chain) = self.chain_in(table, name) else {
                continue;
            };
            for rule in self.set.rules_of(chain) {
                for s in self.set.statements_of(rule) {
                    let value = match &s.kind {
                        Stmt::Assign {
                            left: Expr::Meta { key: "mark", .. },
                            value,
                        } => mark_from(value),
                        Stmt::Match {
                            left: Expr::Meta { key: "mark", .. },
                            ..
                        } => None,
                        Stmt::Match { left, .. } => mark_from(left),
                        _ => None,
                    };
                    if let Some(value) = value.filter(|&v| v != 0) {
                        return Some(Mark { value, mask: value });
                    }
                }
            }
        }
        None
    }

    fn node_port_addresses(&self, table: TableId) -> NodePortAddresses {
        if let Some(set) = self.map(table, "nodeport-ips") {
            return NodePortAddresses::Listed(
                set.elements
                    .iter()
                    .filter_map(|e| literal(&e.key))
                    .filter_map(|a| rulelint_parser::views::parse_address(a).ok())
                    .collect(),
            );
        }
        let all_local = self.chain_in(table, "services").is_some_and(|c| {
            self.set.rules_of(c).any(|r| {
                self.set.statements_of(r).iter().any(|s| {
                    matches!(
                        &s.kind,
                        Stmt::Match {
                            left: Expr::Fib(fib),
                            right: Expr::Literal("local"),
                            ..
                        } if fib.result == "type"
                    )
                })
            })
        });
        if all_local {
            NodePortAddresses::AllLocal
        } else {
            NodePortAddresses::Unknown
        }
    }
}

impl<'a> NftKubeModel<'a> {
    /// Reads the model from every kube-proxy table of the ruleset.
    pub fn build(set: &Ruleset<'a>, graph: &ChainGraph) -> NftKubeModel<'a> {
        let tables = kube_tables(set);
        let mode = if !tables.is_empty() {
            NftMode::Nftables
        } else if is_iptables_nft(set) {
            NftMode::IptablesNft
        } else {
            NftMode::None
        };
        let mut b = Builder {
            set,
            graph,
            lines: LineIndex::new(set.text),
            services: Vec::new(),
            chains: Vec::new(),
            by_name: FxHashMap::default(),
            service_of_chain: FxHashMap::default(),
            chain_index: FxHashMap::default(),
            set_index: FxHashMap::default(),
        };
        for &t in &tables {
            let table = &set.tables[t.index()];
            for &c in &table.chains {
                b.chain_index
                    .entry((t, set.chains[c.index()].name))
                    .or_insert(c);
            }
            for &s in &table.sets {
                b.set_index
                    .entry((t, set.sets[s.index()].name))
                    .or_insert(s);
            }
        }
        for &t in &tables {
            b.read_chains(t);
        }
        for &t in &tables {
            b.read_maps(t);
            b.read_service_chains(t);
        }
        // A Service port with chains none of which anything else leads to, and no way in, is a
        // deleted one's leftovers.
        let live: Vec<bool> = b
            .services
            .iter()
            .zip(&b.chains)
            .map(|(service, own)| {
                !service.addresses.is_empty()
                    || !service.rejects_without_endpoints.is_empty()
                    || own
                        .service_chains
                        .iter()
                        .any(|&c| b.referenced(c, &own.service_chains))
            })
            .collect();
        let name = |c: &ChainId| set.chains[c.index()].name;
        let mut stale_chains = Vec::new();
        let mut unused_endpoint_chains = Vec::new();
        let mut services = Vec::new();
        let mut chains = Vec::new();
        let all_chains = std::mem::take(&mut b.chains);
        for ((service, own), live) in std::mem::take(&mut b.services)
            .into_iter()
            .zip(all_chains)
            .zip(live)
        {
            if !live {
                stale_chains.extend(
                    own.service_chains
                        .iter()
                        .chain(&own.endpoint_chains)
                        .map(name),
                );
                continue;
            }
            unused_endpoint_chains.extend(
                own.endpoint_chains
                    .iter()
                    .filter(|&&c| !b.referenced(c, &[]))
                    .map(name),
            );
            services.push(service);
            chains.push(own);
        }
        let first = tables.first().copied();
        NftKubeModel {
            mode,
            generation: first.map_or(NftGeneration::None, |t| generation(set, t)),
            masquerade_mark: tables.iter().find_map(|&t| b.masquerade_mark(t)),
            node_port_addresses: first
                .map_or(NodePortAddresses::Unknown, |t| b.node_port_addresses(t)),
            tables,
            services,
            chains,
            unused_endpoint_chains,
            stale_chains,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_names_give_the_service_port() {
        let n = chain_name("endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80").unwrap();
        assert_eq!(
            (n.kind, n.hash, n.service.as_ref(), n.protocol),
            (ChainKind::Endpoint, "5OJB2KTY", "ns1/svc1:p80", "tcp")
        );
        let n = chain_name("service-ULMVA6XW-ns1/svc1/udp/").unwrap();
        assert_eq!(
            (n.kind, n.service.as_ref(), n.protocol),
            (ChainKind::Cluster, "ns1/svc1", "udp")
        );
        assert!(chain_name("services").is_none());
        assert!(chain_name("filter-prerouting-pre-dnat").is_none());
        assert!(chain_name("service-ABCDEFGH-a/verylongname...").is_none());
    }

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(duration_seconds("3h"), Some(10_800));
        assert_eq!(duration_seconds("10800s"), Some(10_800));
        assert_eq!(duration_seconds("1d2h3m4s"), Some(93_784));
        assert_eq!(duration_seconds("3"), None);
        assert_eq!(duration_seconds("h"), None);
        assert_eq!(duration_seconds("99999999999999999999d"), None);
    }
}
