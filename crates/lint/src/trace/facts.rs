//! What the trace reads about an iptables-save node, in a few light passes rather than through
//! the Kubernetes model.
//!
//! The model ([`KubeModel`](crate::kube::KubeModel)) reads every Service and endpoint chain's
//! rules and comments: on a 250k-rule node that costs more than the parse. A trace needs far
//! less: the proxy mode (chain names and the fixed chains' matches), the Service addresses
//! (nat `KUBE-SERVICES`' dispatch rules), the endpoints' pod addresses (each `KUBE-SEP-*`
//! chain's DNAT), the local endpoints (the few `KUBE-SVL-*` chains) and the pod network (the
//! first cluster chain's `! -s` rule). One thing needs the Services' names, which only their
//! comments give: whether a filter "has no endpoints" rule stands for a Service with chains.
//! It is asked only for an address that rule names, and read once, then.
//!
//! Every fact here equals what the model gives (`tests/trace_facts.rs` compares them on the
//! corpus and on generated clusters).

use super::NodeFacts;
use super::index::ChainIndexes;
use super::lines::Lines;
use crate::kube::names::{
    CommentRole, ServiceChainKind, is_endpoint_chain, service_chain, service_comment,
};
use crate::kube::{
    Layout, LayoutSigns, ProxyMode, is_ipvs_chain, is_ipvs_set, is_kube_proxy_chain,
};
use ipnet::IpNet;
use rulelint_parser::views::{NatAddress, unquote};
use rulelint_parser::{ChainId, ChainRef, RuleRef, Ruleset, TableKind, TableRef, TokenKind};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::{Mutex, OnceLock};

/// The filter chains whose "has no endpoints" / "has no local endpoints" rules give the
/// addresses of Services that have no chains in nat (as the model reads them).
const NO_ENDPOINT_CHAINS: [&str; 4] = [
    "KUBE-SERVICES",
    "KUBE-EXTERNAL-SERVICES",
    "KUBE-PROXY-FIREWALL",
    "KUBE-NODEPORTS",
];

/// One Service port's chains in nat, as the model keys them: by the chains' shared hash, in the
/// order the hash first appears; the first chain of each kind.
#[derive(Clone, Copy, Debug, Default)]
struct ServiceSlots {
    cluster: Option<ChainId>,
    local: Option<ChainId>,
    external: Option<ChainId>,
    firewall: Option<ChainId>,
}

impl ServiceSlots {
    fn slot(&mut self, kind: ServiceChainKind) -> &mut Option<ChainId> {
        match kind {
            ServiceChainKind::Cluster => &mut self.cluster,
            ServiceChainKind::Local => &mut self.local,
            ServiceChainKind::External => &mut self.external,
            ServiceChainKind::Firewall => &mut self.firewall,
        }
    }

    /// The chains in the order the model reads them for names.
    fn iter(&self) -> impl Iterator<Item = (ServiceChainKind, ChainId)> {
        [
            (ServiceChainKind::Cluster, self.cluster),
            (ServiceChainKind::Local, self.local),
            (ServiceChainKind::External, self.external),
            (ServiceChainKind::Firewall, self.firewall),
        ]
        .into_iter()
        .filter_map(|(k, c)| c.map(|c| (k, c)))
    }
}

/// What an iptables-save dump says about its node, for the trace.
#[derive(Debug)]
pub struct IptablesFacts {
    /// The node's addresses and the pod network. `service_ips` and `endpoint_ips` stay empty:
    /// [`IptablesFacts::is_service_ip`] and [`IptablesFacts::endpoint_ips`] answer them on
    /// demand.
    pub facts: NodeFacts,
    /// The proxy mode.
    pub mode: ProxyMode,
    /// The proxy mode and layout in words (the model's `Layout::describe`).
    pub layout: &'static str,
    /// Pod addresses of node-local endpoints (`KUBE-SVL-*` jumps), in the order of those chains.
    pub local_endpoints: Vec<IpAddr>,
    /// nat `KUBE-SERVICES`.
    dispatch: Option<ChainId>,
    /// One bit per chain of the ruleset: a nat chain named as a Service's.
    service_chains: Vec<u64>,
    /// nat's `KUBE-SEP-*` chains, in order.
    endpoint_chains: Vec<ChainId>,
    /// The addresses of dispatch rules that jump to a Service chain with a destination that is
    /// not a host (`-d 10.96.0.0/24`: not in the index's buckets), sorted.
    dispatch_networks: OnceLock<Vec<IpAddr>>,
    /// The destinations of the rules of filter's [`NO_ENDPOINT_CHAINS`]: only these can be
    /// the addresses of Services without nat chains.
    filter_destinations: OnceLock<FxHashSet<IpAddr>>,
    /// The addresses of Services without nat chains, read on the first question about one of
    /// `filter_destinations` (it needs the names of all Services with chains).
    chainless_service_ips: OnceLock<FxHashSet<IpAddr>>,
    /// Every endpoint chain's pod address, read on the first question that needs them all.
    endpoint_ips: OnceLock<FxHashSet<IpAddr>>,
    /// For a network and a count: the endpoint addresses among its first `count` addresses.
    endpoints_near: Mutex<Vec<(IpNet, u32, Vec<IpAddr>)>>,
}

impl IptablesFacts {
    /// Reads the facts in one pass over nat's chain names and one over filter's (the fixed
    /// chains' module words with them), then the dispatch rules' targets, the few local
    /// chains, and the first Service's cluster chain. Endpoint addresses, the index of
    /// `KUBE-SERVICES` and the Services' names are read when a question needs them.
    pub(crate) fn read(set: &Ruleset<'_>, lines: &Lines<'_>) -> IptablesFacts {
        let nat = set.table_by_kind(TableKind::Nat);
        let filter = set.table_by_kind(TableKind::Filter);
        let mut facts = NodeFacts::default();
        let mut flags = LayoutFlags::default();
        let mut service_chains = vec![0u64; set.chains.len().div_ceil(64)];
        let mut endpoint_chains = Vec::new();
        let mut local_chains: Vec<(&str, ChainId)> = Vec::new();
        let mut has_services = false;
        // The pod network: the first Service's (by the order its hash first appears) cluster
        // chain with a `! -s` masquerade rule, as the model finds it.
        let mut hashes_tried: FxHashSet<&str> = FxHashSet::default();
        let mut cluster_name = String::new();
        if let Some(nat) = nat {
            for chain in nat.chains() {
                let name = chain.name();
                if !name.starts_with("KUBE-") {
                    continue;
                }
                if let Some((kind, hash)) = service_chain(name) {
                    has_services = true;
                    let bit = chain.id.index();
                    service_chains[bit / 64] |= 1 << (bit % 64);
                    flags.kube_chains = true;
                    flags.modern_chains |=
                        name.starts_with("KUBE-EXT-") || name.starts_with("KUBE-SVL-");
                    if kind == ServiceChainKind::Local {
                        local_chains.push((hash, chain.id));
                    }
                    if facts.pod_cidr.is_none() && hashes_tried.insert(hash) {
                        cluster_name.clear();
                        cluster_name.push_str("KUBE-SVC-");
                        cluster_name.push_str(hash);
                        facts.pod_cidr = nat
                            .chain(&cluster_name)
                            .and_then(|c| masquerade_source(c, lines));
                    }
                    continue;
                }
                if is_endpoint_chain(name) {
                    endpoint_chains.push(chain.id);
                    flags.kube_chains = true;
                    continue;
                }
                flags.fixed_chain(chain);
            }
        }
        if let Some(filter) = filter {
            for chain in filter.chains() {
                let name = chain.name();
                if !name.starts_with("KUBE-") {
                    continue;
                }
                if service_chain(name).is_some() || is_endpoint_chain(name) {
                    flags.kube_chains = true;
                    flags.modern_chains |=
                        name.starts_with("KUBE-EXT-") || name.starts_with("KUBE-SVL-");
                    continue;
                }
                flags.fixed_chain(chain);
            }
        }
        let layout = flags.layout(nat, filter, has_services || !endpoint_chains.is_empty());
        let dispatch = nat.and_then(|t| t.chain("KUBE-SERVICES"));
        // The node's addresses: `-d <ip> -j KUBE-NODEPORTS` in nat KUBE-SERVICES. The target is
        // told by chain id (a number), its name read only for a target that is not a chain.
        if let Some(dispatch) = dispatch {
            let nodeports = nat.and_then(|t| t.chain("KUBE-NODEPORTS")).map(|c| c.id);
            for rule in dispatch.rules() {
                let to_nodeports = match rule.target_chain() {
                    Some(to) => Some(to) == nodeports,
                    None => rule.target().is_some_and(|t| t.name() == "KUBE-NODEPORTS"),
                };
                if to_nodeports
                    && let Some(d) = rule.destination()
                    && !d.negated
                    && d.value.prefix_len() == d.value.max_prefix_len()
                    && !d.value.addr().is_loopback()
                    && !facts.addresses.iter().any(|(a, _)| *a == d.value.addr())
                {
                    facts.addresses.push((d.value.addr(), rule.id));
                }
            }
        }
        // Each hash's first local chain (`KUBE-SVL-` or the older `KUBE-XLB-`), as the model
        // keys them.
        let mut local_hashes: FxHashSet<&str> = FxHashSet::default();
        let mut local_endpoints = Vec::new();
        for (hash, chain) in local_chains {
            if !local_hashes.insert(hash) {
                continue;
            }
            for rule in set.chain(chain).rules() {
                if let Some(to) = rule.target_chain()
                    && !is_bit(&service_chains, to)
                    && is_endpoint_chain(set.chain(to).name())
                    && let Some(ip) = endpoint_ip(set.chain(to))
                {
                    local_endpoints.push(ip);
                }
            }
        }
        let mut read = IptablesFacts {
            facts,
            mode: layout.mode,
            layout: layout.describe(),
            local_endpoints,
            dispatch: dispatch.map(|c| c.id),
            service_chains,
            endpoint_chains,
            dispatch_networks: OnceLock::new(),
            filter_destinations: OnceLock::new(),
            chainless_service_ips: OnceLock::new(),
            endpoint_ips: OnceLock::new(),
            endpoints_near: Mutex::new(Vec::new()),
        };
        if read.facts.pod_cidr.is_none() {
            read.facts.pod_cidr = super::pod_cidr_around(read.endpoint_ips(set));
        }
        read
    }

    /// Whether `chain` is a nat chain named as a Service's.
    fn is_service_chain(&self, chain: ChainId) -> bool {
        is_bit(&self.service_chains, chain)
    }

    /// Whether `ip` is a Service address (cluster, external or load-balancer IP, not a node
    /// port) as the model lists them: the destination of a nat `KUBE-SERVICES` rule that jumps
    /// to a Service chain (found through the chain's index: the rules bucketed under `ip`), or
    /// of a filter "has no endpoints" rule of a Service without nat chains.
    pub fn is_service_ip(&self, set: &Ruleset<'_>, index: &ChainIndexes, ip: IpAddr) -> bool {
        self.is_dispatched(set, index, ip)
            || (self
                .filter_destinations
                .get_or_init(|| filter_destinations(set))
                .contains(&ip)
                && self
                    .chainless_service_ips
                    .get_or_init(|| self.chainless_service_ips(set))
                    .contains(&ip))
    }

    /// A dispatch rule with destination `ip` (not negated) jumps to a Service chain.
    fn is_dispatched(&self, set: &Ruleset<'_>, index: &ChainIndexes, ip: IpAddr) -> bool {
        let Some(dispatch) = self.dispatch else {
            return false;
        };
        let to_service = |rule: RuleRef<'_, '_>| {
            rule.target_chain()
                .is_some_and(|to| self.is_service_chain(to))
        };
        let chain = set.chain(dispatch);
        let ids = chain.rule_ids();
        let Some(ix) = index.get(set, dispatch) else {
            // A small chain: read it.
            return chain.rules().any(|rule| {
                to_service(rule)
                    && rule
                        .destination()
                        .is_some_and(|d| !d.negated && d.value.addr() == ip)
            });
        };
        // Bucketed under `ip`: an exact, non-negated `-d ip`.
        ix.host_positions(ip)
            .iter()
            .any(|&p| to_service(set.rule(ids[p as usize])))
            || self
                .dispatch_networks
                .get_or_init(|| {
                    let mut addrs: Vec<IpAddr> = ix
                        .rest()
                        .iter()
                        .map(|&p| set.rule(ids[p as usize]))
                        .filter(|&rule| to_service(rule))
                        .filter_map(|rule| rule.destination().filter(|d| !d.negated))
                        .map(|d| d.value.addr())
                        .collect();
                    addrs.sort_unstable();
                    addrs.dedup();
                    addrs
                })
                .binary_search(&ip)
                .is_ok()
    }

    /// Every endpoint chain's pod address (its first DNAT's), as the model lists them: read
    /// once, on the first call.
    pub fn endpoint_ips(&self, set: &Ruleset<'_>) -> &FxHashSet<IpAddr> {
        self.endpoint_ips.get_or_init(|| {
            let mut ips = FxHashSet::default();
            ips.reserve(self.endpoint_chains.len());
            ips.extend(
                self.endpoint_chains
                    .iter()
                    .filter_map(|&c| endpoint_ip(set.chain(c))),
            );
            ips
        })
    }

    /// The endpoint addresses among the first `count` addresses of `net`, sorted: the default
    /// source of a trace avoids them. One pass over the endpoint chains per network, without
    /// a set of all of them; remembered.
    pub fn endpoints_near(&self, set: &Ruleset<'_>, net: IpNet, count: u32) -> Vec<IpAddr> {
        let mut near = self
            .endpoints_near
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, ips)) = near.iter().find(|(n, c, _)| *n == net && *c == count) {
            return ips.clone();
        }
        let ips = match self.endpoint_ips.get() {
            Some(all) => addresses_near(all.iter().copied(), net, count),
            None => {
                let lead = v4_text_prefix(net);
                addresses_near(
                    self.endpoint_chains.iter().filter_map(|&c| {
                        let text = endpoint_dnat(set.chain(c))?;
                        // Most addresses are told apart from the network's by their first
                        // characters, without parsing them.
                        if let Some(lead) = &lead
                            && !text.starts_with(lead.as_str())
                            && !text
                                .strip_prefix('[')
                                .is_some_and(|t| t.starts_with(lead.as_str()))
                        {
                            return None;
                        }
                        dnat_address(text)
                    }),
                    net,
                    count,
                )
            }
        };
        near.push((net, count, ips.clone()));
        ips
    }

    /// The destinations of filter's "has no endpoints" and "has no local endpoints" rules
    /// (not node ports: `--dst-type LOCAL`) of Services that have no nat chains.
    fn chainless_service_ips(&self, set: &Ruleset<'_>) -> FxHashSet<IpAddr> {
        let mut ips = FxHashSet::default();
        let Some(filter) = set.table_by_kind(TableKind::Filter) else {
            return ips;
        };
        let names = chain_service_names(set);
        for chain in NO_ENDPOINT_CHAINS.iter().filter_map(|n| filter.chain(n)) {
            for rule in chain.rules() {
                if let Some(d) = rule.destination()
                    && !d.negated
                    && let Some((service, role)) = rule_service_name(rule)
                    && matches!(
                        role,
                        CommentRole::NoEndpoints | CommentRole::NoLocalEndpoints
                    )
                    && rule.dst_type().is_none_or(|t| t.value != "LOCAL")
                    && !names.contains(service.as_ref())
                {
                    ips.insert(d.value.addr());
                }
            }
        }
        ips
    }
}

/// The sorted addresses of `ips` among the first `count` addresses of `net`.
fn addresses_near(ips: impl Iterator<Item = IpAddr>, net: IpNet, count: u32) -> Vec<IpAddr> {
    let base = net.network();
    let offset = |ip: IpAddr| match (base, ip) {
        (IpAddr::V4(b), IpAddr::V4(i)) => u128::from(u32::from(i).wrapping_sub(u32::from(b))),
        (IpAddr::V6(b), IpAddr::V6(i)) => u128::from(i).wrapping_sub(u128::from(b)),
        _ => u128::MAX,
    };
    let mut near: Vec<IpAddr> = ips
        .filter(|ip| net.contains(ip) && offset(*ip) < u128::from(count))
        .collect();
    near.sort_unstable();
    near.dedup();
    near
}

fn is_bit(bits: &[u64], chain: ChainId) -> bool {
    let i = chain.index();
    bits.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

/// The destinations of the rules of filter's [`NO_ENDPOINT_CHAINS`].
fn filter_destinations(set: &Ruleset<'_>) -> FxHashSet<IpAddr> {
    let Some(filter) = set.table_by_kind(TableKind::Filter) else {
        return FxHashSet::default();
    };
    NO_ENDPOINT_CHAINS
        .iter()
        .filter_map(|n| filter.chain(n))
        .flat_map(|c| c.rule_ids().iter().map(|&id| set.rule(id)))
        .filter_map(|r| r.destination().filter(|d| !d.negated))
        .map(|d| d.value.addr())
        .collect()
}

/// Service ports by hash, in the order the hash first appears among nat's chains, with the
/// first chain of each kind: as the model keys them.
fn service_slots(set: &Ruleset<'_>) -> Vec<ServiceSlots> {
    let mut services: Vec<ServiceSlots> = Vec::new();
    let Some(nat) = set.table_by_kind(TableKind::Nat) else {
        return services;
    };
    let mut by_hash: FxHashMap<&str, usize> = FxHashMap::default();
    for chain in nat.chains() {
        if let Some((kind, hash)) = service_chain(chain.name()) {
            let next = services.len();
            let i = *by_hash.entry(hash).or_insert(next);
            if i == next {
                services.push(ServiceSlots::default());
            }
            services[i].slot(kind).get_or_insert(chain.id);
        }
    }
    services
}

/// The names the model gives the Services that have nat chains: from their chains'
/// comments, then from the dispatch rules' comments, each name to the first Service that
/// claims it.
fn chain_service_names(set: &Ruleset<'_>) -> FxHashSet<String> {
    let services = service_slots(set);
    let mut claimed: FxHashSet<String> = FxHashSet::default();
    let mut named = vec![false; services.len()];
    let mut claim = |i: usize, name: Cow<'_, str>, named: &mut Vec<bool>| {
        if !named[i] && !claimed.contains(name.as_ref()) {
            named[i] = true;
            claimed.insert(name.into_owned());
        }
    };
    for (i, slots) in services.iter().enumerate() {
        for (kind, chain) in slots.iter() {
            let rules = set.chain(chain).rules();
            if kind == ServiceChainKind::Local {
                for rule in rules {
                    if let Some((name, _)) = rule_service_name(rule) {
                        claim(i, name, &mut named);
                    }
                }
            } else if !named[i]
                && let Some(name) = rules
                    .into_iter()
                    .find_map(|r| rule_service_name(r).map(|(n, _)| n))
            {
                claim(i, name, &mut named);
            }
        }
    }
    // The dispatch rules' comments name the Services they jump to (every chain of a
    // Service's hash is its, numbered in the order the hashes first appear, as
    // `service_slots` numbered them).
    if let Some(nat) = set.table_by_kind(TableKind::Nat) {
        let mut by_hash: FxHashMap<&str, usize> = FxHashMap::default();
        let mut service_of: FxHashMap<ChainId, usize> = FxHashMap::default();
        for chain in nat.chains() {
            if let Some((_, hash)) = service_chain(chain.name()) {
                let next = by_hash.len();
                service_of.insert(chain.id, *by_hash.entry(hash).or_insert(next));
            }
        }
        for name in ["KUBE-SERVICES", "KUBE-NODEPORTS"] {
            let Some(dispatch) = nat.chain(name) else {
                continue;
            };
            let mut jumps: Vec<(u32, usize)> = dispatch
                .rules()
                .filter_map(|r| Some((r.id.0, *service_of.get(&r.target_chain()?)?)))
                .collect();
            if !jumps.is_sorted_by_key(|&(rule, _)| rule) {
                jumps.sort_unstable_by_key(|&(rule, _)| rule);
            }
            for (rule, i) in jumps {
                if !named[i]
                    && let Some((name, _)) =
                        rule_service_name(set.rule(rulelint_parser::RuleId(rule)))
                {
                    claim(i, name, &mut named);
                }
            }
        }
    }
    claimed
}

/// The pod address an endpoint chain DNATs to: its first DNAT rule's first address.
fn endpoint_ip(chain: ChainRef<'_, '_>) -> Option<IpAddr> {
    dnat_address(endpoint_dnat(chain)?)
}

/// The `--to-destination` of an endpoint chain's first DNAT rule.
fn endpoint_dnat<'a>(chain: ChainRef<'_, 'a>) -> Option<&'a str> {
    let set = chain.ruleset();
    chain
        .rules()
        .find(|r| match r.target_chain() {
            // A jump (`-j KUBE-MARK-MASQ`): told by the chain's name, not the rule's words,
            // which are not read (a chain named DNAT would still count, as by name).
            Some(to) => set.chain(to).name() == "DNAT",
            None => r.target().is_some_and(|t| t.name() == "DNAT"),
        })?
        .dnat_destination()
}

/// The first address of a `--to-destination`.
fn dnat_address(text: &str) -> Option<IpAddr> {
    match plain_address_port(text) {
        Some(ip) => Some(ip),
        None => NatAddress::parse(text).ok()?.first,
    }
}

/// For an IPv4 network of at least a /8, the text every address in it starts with as
/// `--to-destination` writes it (`10.244.3.` for `10.244.3.0/24`; at most three octets).
/// Exact: the address is read by the standard parser, which takes no leading zeros, so an
/// address has one spelling; `NatAddress` may put it in brackets, which the caller allows.
fn v4_text_prefix(net: IpNet) -> Option<String> {
    let IpNet::V4(v4) = net else {
        return None;
    };
    let octets = usize::from(v4.prefix_len() / 8).min(3);
    (octets > 0).then(|| {
        let mut lead = String::new();
        for o in &v4.network().octets()[..octets] {
            lead.push_str(&o.to_string());
            lead.push('.');
        }
        lead
    })
}

/// The address of kube-proxy's `--to-destination 10.244.1.5:8080` (or `[fd00::5]:8080`): one
/// address and one port, read without `NatAddress::parse`'s generality (this runs for each of a
/// 250k-rule node's 60k endpoints). `None` for any other form, which `NatAddress` then reads.
fn plain_address_port(text: &str) -> Option<IpAddr> {
    let (address, port) = match text.strip_prefix('[') {
        Some(rest) => {
            let (address, port) = rest.split_once("]:")?;
            (IpAddr::V6(address.parse().ok()?), port)
        }
        None => {
            let (address, port) = text.split_once(':')?;
            (IpAddr::V4(address.parse().ok()?), port)
        }
    };
    // Digits without a leading zero, 1 to 65535: what `NatAddress::parse` reads the same way.
    let digits = port.len() <= 5
        && !port.starts_with('0')
        && !port.is_empty()
        && port.bytes().all(|b| b.is_ascii_digit());
    (digits && port.parse::<u16>().is_ok()).then_some(address)
}

/// The pod network from a cluster chain's `! -s <cidr> ... -j KUBE-MARK-MASQ`, with where.
fn masquerade_source(chain: ChainRef<'_, '_>, lines: &Lines<'_>) -> Option<(IpNet, String)> {
    chain.rules().find_map(|rule| {
        let s = rule.source().filter(|s| s.negated)?;
        rule.target()
            .is_some_and(|t| t.name() == "KUBE-MARK-MASQ")
            .then(|| {
                (
                    s.value.trunc(),
                    format!(
                        "from `! -s {}` in {}, line {}",
                        s.value,
                        chain.name(),
                        lines.line(rule.get().span.start)
                    ),
                )
            })
    })
}

/// The Service port a kube-proxy comment names, as the model reads it.
fn rule_service_name<'a>(rule: RuleRef<'_, 'a>) -> Option<(Cow<'a, str>, CommentRole)> {
    let raw = rule.option(Some("comment"), &["--comment"])?.value;
    match unquote(raw) {
        Cow::Borrowed(text) => {
            service_comment(text).map(|(name, role)| (Cow::Borrowed(name), role))
        }
        Cow::Owned(text) => {
            service_comment(&text).map(|(name, role)| (Cow::Owned(name.to_string()), role))
        }
    }
}

/// What the model's layout is decided from, gathered while the chains are read.
#[derive(Default)]
struct LayoutFlags {
    kube_chains: bool,
    modern_chains: bool,
    nfacct: bool,
    ipvs: bool,
}

impl LayoutFlags {
    /// A `KUBE-*` chain that is not a Service's or an endpoint's: its name and matches.
    fn fixed_chain(&mut self, chain: ChainRef<'_, '_>) {
        let name = chain.name();
        self.kube_chains |= is_kube_proxy_chain(name);
        self.ipvs |= is_ipvs_chain(name);
        // The module words alone (`-m NAME` tokens before the target), without building the
        // matches: `KUBE-SERVICES` has a rule per Service port. A rule with `-m set` is read
        // in full.
        for rule in chain.rules() {
            let tokens = rule.tokens();
            let end = tokens
                .iter()
                .rposition(|t| t.kind() == TokenKind::Target)
                .unwrap_or(tokens.len());
            let mut set_match = false;
            for t in tokens[..end]
                .iter()
                .filter(|t| t.kind() == TokenKind::Module)
            {
                match rule.token_text(t) {
                    "nfacct" => self.nfacct = true,
                    "set" => set_match = true,
                    _ => {}
                }
            }
            if set_match {
                for m in rule.matches().filter(|m| m.module() == Some("set")) {
                    self.ipvs |= m.options().any(|o| {
                        matches!(o.name(), "--match-set" | "--set")
                            && o.args().next().is_some_and(is_ipvs_set)
                    });
                }
            }
        }
    }

    /// The layout as the model decides it (`large_cluster` and `masquerade_mark` are not read).
    fn layout(
        &self,
        nat: Option<TableRef<'_, '_>>,
        filter: Option<TableRef<'_, '_>>,
        services_or_endpoints: bool,
    ) -> Layout {
        Layout::decide(
            nat,
            filter,
            LayoutSigns {
                services_or_endpoints,
                kube_chains: self.kube_chains,
                modern_chains: self.modern_chains,
                nfacct: self.nfacct,
                ipvs: self.ipvs,
            },
        )
    }
}
