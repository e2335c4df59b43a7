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
use crate::kube::names::{
    CommentRole, ServiceChainKind, is_endpoint_chain, service_chain, service_comment,
};
use crate::kube::{
    Layout, LayoutSigns, ProxyMode, is_ipvs_chain, is_ipvs_set, is_kube_proxy_chain,
};
use rulelint_parser::views::{NatAddress, unquote};
use rulelint_parser::{ChainId, ChainRef, LineIndex, RuleRef, Ruleset, TableKind, TableRef};
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::OnceLock;

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
    /// Addresses, pod network, endpoint addresses; `service_ips` holds the addresses of nat
    /// `KUBE-SERVICES`' dispatch rules only ([`IptablesFacts::is_service_ip`] adds the rest).
    pub facts: NodeFacts,
    /// The proxy mode.
    pub mode: ProxyMode,
    /// The proxy mode and layout in words (the model's `Layout::describe`).
    pub layout: &'static str,
    /// Pod addresses of node-local endpoints (`KUBE-SVL-*` jumps).
    pub local_endpoints: Vec<IpAddr>,
    /// Service ports by hash, in the model's order.
    services: Vec<ServiceSlots>,
    /// The destinations of the rules of filter's [`NO_ENDPOINT_CHAINS`]: only these can be
    /// the addresses of Services without nat chains.
    filter_destinations: FxHashSet<IpAddr>,
    /// The addresses of Services without nat chains, read on the first question about one of
    /// `filter_destinations` (it needs the names of all Services with chains).
    chainless_service_ips: OnceLock<FxHashSet<IpAddr>>,
}

impl IptablesFacts {
    /// Reads the facts in one pass over nat's chain names, one over filter's, and the rules of
    /// `KUBE-SERVICES`, the endpoint chains' DNATs, the local chains and one cluster chain.
    pub fn read(set: &Ruleset<'_>, lines: &LineIndex) -> IptablesFacts {
        let nat = set.table_by_kind(TableKind::Nat);
        let filter = set.table_by_kind(TableKind::Filter);
        let mut facts = NodeFacts::default();
        let mut flags = LayoutFlags::default();
        let mut services: Vec<ServiceSlots> = Vec::new();
        let mut by_hash: FxHashMap<&str, usize> = FxHashMap::default();
        let mut has_endpoints = false;
        if let Some(nat) = nat {
            for chain in nat.chains() {
                let name = chain.name();
                if !name.starts_with("KUBE-") {
                    continue;
                }
                if let Some((kind, hash)) = service_chain(name) {
                    let next = services.len();
                    let i = *by_hash.entry(hash).or_insert(next);
                    if i == next {
                        services.push(ServiceSlots::default());
                    }
                    services[i].slot(kind).get_or_insert(chain.id);
                    flags.kube_chains = true;
                    flags.modern_chains |=
                        name.starts_with("KUBE-EXT-") || name.starts_with("KUBE-SVL-");
                    continue;
                }
                if is_endpoint_chain(name) {
                    has_endpoints = true;
                    flags.kube_chains = true;
                    if let Some(ip) = endpoint_ip(chain) {
                        facts.endpoint_ips.insert(ip);
                    }
                    continue;
                }
                flags.fixed_chain(chain);
            }
            // The node's addresses and the cluster, external and load-balancer IPs.
            if let Some(dispatch) = nat.chain("KUBE-SERVICES") {
                for rule in dispatch.rules() {
                    let to = rule.target_chain();
                    if rule.target().is_some_and(|t| t.name() == "KUBE-NODEPORTS")
                        && let Some(d) = rule.destination()
                        && !d.negated
                        && d.value.prefix_len() == d.value.max_prefix_len()
                        && !d.value.addr().is_loopback()
                        && !facts.addresses.iter().any(|(a, _)| *a == d.value.addr())
                    {
                        facts.addresses.push((d.value.addr(), rule.id));
                    }
                    if let Some(to) = to
                        && service_chain(set.chain(to).name()).is_some()
                        && let Some(d) = rule.destination()
                        && !d.negated
                    {
                        facts.service_ips.insert(d.value.addr());
                    }
                }
            }
        }
        let mut filter_destinations = FxHashSet::default();
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
            filter_destinations = NO_ENDPOINT_CHAINS
                .iter()
                .filter_map(|n| filter.chain(n))
                .flat_map(|c| c.rule_ids().iter().map(|&id| set.rule(id)))
                .filter_map(|r| r.destination().filter(|d| !d.negated))
                .map(|d| d.value.addr())
                .collect();
        }
        let layout = flags.layout(nat, filter, !services.is_empty() || has_endpoints);
        let local_endpoints = services
            .iter()
            .filter_map(|s| s.local)
            .flat_map(|chain| set.chain(chain).rule_ids())
            .map(|&id| set.rule(id))
            .filter_map(|rule| rule.target_chain())
            .filter(|&to| {
                let name = set.chain(to).name();
                service_chain(name).is_none() && is_endpoint_chain(name)
            })
            .filter_map(|to| endpoint_ip(set.chain(to)))
            .collect();
        facts.pod_cidr = services
            .iter()
            .filter_map(|s| s.cluster)
            .find_map(|chain| masquerade_source(set.chain(chain), lines))
            .or_else(|| super::pod_cidr_around(&facts.endpoint_ips));
        IptablesFacts {
            facts,
            mode: layout.mode,
            layout: layout.describe(),
            local_endpoints,
            services,
            filter_destinations,
            chainless_service_ips: OnceLock::new(),
        }
    }

    /// Whether `ip` is a Service address (cluster, external or load-balancer IP, not a node
    /// port) as the model lists them: a dispatch rule's destination, or the destination of a
    /// filter "has no endpoints" rule of a Service without nat chains.
    pub fn is_service_ip(&self, set: &Ruleset<'_>, ip: IpAddr) -> bool {
        self.facts.service_ips.contains(&ip)
            || (self.filter_destinations.contains(&ip)
                && self
                    .chainless_service_ips
                    .get_or_init(|| self.chainless_service_ips(set))
                    .contains(&ip))
    }

    /// The destinations of filter's "has no endpoints" and "has no local endpoints" rules
    /// (not node ports: `--dst-type LOCAL`) of Services that have no nat chains.
    fn chainless_service_ips(&self, set: &Ruleset<'_>) -> FxHashSet<IpAddr> {
        let mut ips = FxHashSet::default();
        let Some(filter) = set.table_by_kind(TableKind::Filter) else {
            return ips;
        };
        let names = self.chain_service_names(set);
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

    /// The names the model gives the Services that have nat chains: from their chains'
    /// comments, then from the dispatch rules' comments, each name to the first Service that
    /// claims it.
    fn chain_service_names(&self, set: &Ruleset<'_>) -> FxHashSet<String> {
        {
            let mut claimed: FxHashSet<String> = FxHashSet::default();
            let mut named = vec![false; self.services.len()];
            let mut claim = |i: usize, name: Cow<'_, str>, named: &mut Vec<bool>| {
                if !named[i] && !claimed.contains(name.as_ref()) {
                    named[i] = true;
                    claimed.insert(name.into_owned());
                }
            };
            for (i, slots) in self.services.iter().enumerate() {
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
            // Service's hash is its, numbered in the order the hashes first appear, as `read`
            // numbered them).
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
    }
}

/// The pod address an endpoint chain DNATs to: its first DNAT rule's first address.
fn endpoint_ip(chain: ChainRef<'_, '_>) -> Option<IpAddr> {
    let rule = chain
        .rules()
        .find(|r| r.target().is_some_and(|t| t.name() == "DNAT"))?;
    let text = rule.dnat_destination()?;
    match plain_address_port(text) {
        Some(ip) => Some(ip),
        None => NatAddress::parse(text).ok()?.first,
    }
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
fn masquerade_source(chain: ChainRef<'_, '_>, lines: &LineIndex) -> Option<(ipnet::IpNet, String)> {
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
        for m in chain.rules().flat_map(|r| r.matches()) {
            match m.module() {
                Some("nfacct") => self.nfacct = true,
                Some("set") => {
                    self.ipvs |= m.options().any(|o| {
                        matches!(o.name(), "--match-set" | "--set")
                            && o.args().next().is_some_and(is_ipvs_set)
                    });
                }
                _ => {}
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
