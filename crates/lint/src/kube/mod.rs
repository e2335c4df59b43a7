//! The Kubernetes model: what kube-proxy (iptables mode) and kubelet wrote into a ruleset, read
//! back: the layout generation, and every Service port with its chains, addresses and
//! endpoints.
//!
//! kube-proxy names all chains of one Service port with the same hash (`KUBE-SVC-<h>`,
//! `KUBE-SVL-<h>`, `KUBE-EXT-<h>`, `KUBE-FW-<h>`), so the model groups by hash and needs no
//! comment; comments only add the `namespace/name:port` names. That matters because kube-proxy
//! drops the per-endpoint comments on large clusters (over 1,000 endpoints).
//!
//! ```
//! use rulelint_lint::kube::{AddressKind, KubeModel};
//! let dump = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n\
//!     :KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n\
//!     -A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment \"default/kubernetes:https cluster IP\" -m tcp --dport 443 -j KUBE-SVC-AAAAAAAAAAAAAAAA\n\
//!     -A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-SEP-BBBBBBBBBBBBBBBB\n\
//!     -A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m tcp -j DNAT --to-destination 192.168.1.5:6443\nCOMMIT\n";
//! let parsed = rulelint_parser::parse(dump);
//! let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
//! let model = KubeModel::build(&parsed.ruleset, &graph);
//! let api = &model.services[0];
//! assert_eq!(api.name.as_deref(), Some("default/kubernetes:https"));
//! assert_eq!(api.addresses[0].kind, AddressKind::ClusterIp);
//! let endpoint = &model.endpoints[model.endpoint_index(api.endpoints[0].chain.unwrap()).unwrap()];
//! assert_eq!(endpoint.destination, Some("192.168.1.5:6443"));
//! ```

pub mod catalog;
mod catalog_ipvs;
mod dispatch_key;
pub mod doc;
pub mod names;
pub mod owners;

use ipnet::IpNet;
use names::{CommentRole, ServiceChainKind, is_endpoint_chain, service_chain, service_comment};
use rulelint_parser::views::{Mark, NatAddress, Negatable, PortRange, unquote};
use rulelint_parser::{
    ChainGraph, ChainId, ChainRef, Family, RuleId, RuleRef, Ruleset, TableKind, TableRef,
    TargetClass, Token, TokenKind,
};
use rustc_hash::FxHashMap;
use serde::Serialize;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::sync::{Mutex, PoisonError};

#[cfg(test)]
pub(crate) use dispatch_key::protocol_number;
pub(crate) use dispatch_key::{DispatchKey, DispatchKeys, read_dispatch_key};

/// Above this many endpoints kube-proxy runs in large-cluster mode: it leaves out the
/// per-endpoint comments and removes stale chains lazily (`largeClusterEndpointsThreshold`).
pub const LARGE_CLUSTER_ENDPOINTS: usize = 1000;

/// Which generation of kube-proxy's and kubelet's rules the dump holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generation {
    /// No kube-proxy chains at all.
    None,
    /// kubelet's `KUBE-MARK-DROP` and its `0x8000` KUBE-FIREWALL rule, `KUBE-XLB-*`, no
    /// `KUBE-PROXY-FIREWALL`: Kubernetes up to about 1.23 (see `docs/kubernetes-layouts.md`).
    Legacy,
    /// `KUBE-PROXY-FIREWALL` (load-balancer source ranges in filter), `KUBE-EXT-*`,
    /// `KUBE-SVL-*`: Kubernetes from about 1.24 on.
    Modern,
}

impl Generation {
    /// A short description for humans.
    pub fn describe(self) -> &'static str {
        match self {
            Generation::None => "no kube-proxy rules",
            Generation::Legacy => {
                "legacy kube-proxy layout (KUBE-MARK-DROP, KUBE-XLB: up to about 1.23)"
            }
            Generation::Modern => {
                "modern kube-proxy layout (KUBE-PROXY-FIREWALL, KUBE-EXT, KUBE-SVL: about 1.24 on)"
            }
        }
    }
}

/// Which program proxies Services on this node, as the dump shows it. Decided before any
/// Kubernetes lint runs: each lint applies only to the modes whose rules it knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyMode {
    /// kube-proxy's iptables mode: nat `KUBE-SERVICES` dispatching to `KUBE-SVC-*`, filter
    /// `KUBE-EXTERNAL-SERVICES`, `KUBE-NODEPORTS`, ...
    Iptables,
    /// kube-proxy's IPVS mode: `KUBE-NODE-PORT`, `KUBE-LOAD-BALANCER`, `KUBE-IPVS-*`, matches on
    /// its ipsets (iptables-mode leftovers beside them are `mixed-proxy-mode`'s finding).
    Ipvs,
    /// kube-proxy's userspace mode (removed in 1.26): `KUBE-PORTALS-*`, `KUBE-NODEPORT-*`.
    Userspace,
    /// kube-router's service proxy (IPVS): `KUBE-ROUTER-SERVICES`.
    KubeRouter,
    /// No Service proxy rules rulelint knows: kubelet's chains alone (another proxy such as
    /// Cilium's eBPF replacement), or nothing of Kubernetes.
    None,
}

impl ProxyMode {
    /// A short description for humans.
    pub fn describe(self) -> &'static str {
        match self {
            ProxyMode::Iptables => "kube-proxy iptables mode",
            ProxyMode::Ipvs => "kube-proxy IPVS mode",
            ProxyMode::Userspace => {
                "kube-proxy userspace mode (KUBE-PORTALS, KUBE-NODEPORT-*: removed in 1.26)"
            }
            ProxyMode::KubeRouter => "kube-router service proxy (KUBE-ROUTER-SERVICES, IPVS)",
            ProxyMode::None => "no kube-proxy rules",
        }
    }
}

/// The layout facts the lints decide on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Which program proxies Services.
    pub mode: ProxyMode,
    /// kubelet's chains are present (`KUBE-MARK-DROP`, `KUBE-FIREWALL`, `KUBE-IPTABLES-HINT`,
    /// ...): a Kubernetes node whatever proxies its Services.
    pub kubelet: bool,
    /// The generation of kube-proxy's iptables or IPVS rules (`legacy` for a node with only
    /// kubelet's chains of that age).
    pub generation: Generation,
    /// nat holds `KUBE-MARK-DROP` (kubelet before 1.28 writes it).
    pub mark_drop: bool,
    /// filter holds `KUBE-PROXY-FIREWALL`.
    pub proxy_firewall: bool,
    /// kube-proxy's `-m nfacct` counters are present (1.31+).
    pub nfacct: bool,
    /// Over [`LARGE_CLUSTER_ENDPOINTS`] endpoints, or endpoint chains without comments.
    pub large_cluster: bool,
    /// IPVS-mode state is present: its chains ([`is_ipvs_chain`]: `KUBE-NODE-PORT`,
    /// `KUBE-LOAD-BALANCER`, `KUBE-IPVS-*`, ...) or its ipset matches ([`is_ipvs_set`]:
    /// `KUBE-CLUSTER-IP`, `KUBE-LOOP-BACK`, ...).
    pub ipvs: bool,
    /// The mark `KUBE-MARK-MASQ` sets, when that chain has its rule.
    #[serde(skip)]
    pub masquerade_mark: Option<Mark>,
}

impl Layout {
    /// Whether kube-proxy, kubelet or kube-router's proxy wrote anything into this ruleset.
    pub fn is_kubernetes(&self) -> bool {
        self.mode != ProxyMode::None || self.kubelet || self.generation != Generation::None
    }

    /// A description for humans: the proxy mode and, for kube-proxy's iptables and IPVS
    /// modes, the generation of its rules.
    pub fn describe(&self) -> &'static str {
        match self.mode {
            ProxyMode::Iptables => self.generation.describe(),
            ProxyMode::None if self.kubelet => {
                "kubelet's chains only, no kube-proxy rules (another service proxy, or none)"
            }
            mode => mode.describe(),
        }
    }
}

/// How traffic reaches a Service port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AddressKind {
    /// The cluster IP, dispatched in nat `KUBE-SERVICES`.
    ClusterIp,
    /// An `externalIPs` address.
    ExternalIp,
    /// A load balancer's ingress IP.
    LoadBalancerIp,
    /// A node port, dispatched in nat `KUBE-NODEPORTS`.
    NodePort,
}

/// One way into a Service port: a dispatch rule (or, for a Service without endpoints, its
/// REJECT).
#[derive(Clone, Debug)]
pub struct ServiceAddress<'a> {
    /// Cluster IP, external IP, load-balancer IP or node port.
    pub kind: AddressKind,
    /// `-d` (none for node ports).
    pub address: Option<IpNet>,
    /// `-p`.
    pub protocol: Option<&'a str>,
    /// `--dport`.
    pub port: Option<PortRange>,
    /// The rule.
    pub rule: RuleId,
}

/// A jump from a service chain to an endpoint chain.
#[derive(Clone, Copy, Debug)]
pub struct EndpointJump {
    /// The rule.
    pub rule: RuleId,
    /// The `KUBE-SEP-*` chain jumped to; `None` when it is not declared.
    pub chain: Option<ChainId>,
    /// `-m statistic --probability`.
    pub probability: Option<f64>,
    /// A session-affinity rule (`-m recent --rcheck`), which comes before the balanced jumps.
    pub affinity: bool,
}

/// The chains of one Service port.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServiceChains {
    /// `KUBE-SVC-*`.
    pub cluster: Option<ChainId>,
    /// `KUBE-SVL-*` or `KUBE-XLB-*`.
    pub local: Option<ChainId>,
    /// `KUBE-EXT-*`.
    pub external: Option<ChainId>,
    /// `KUBE-FW-*`.
    pub firewall: Option<ChainId>,
}

impl ServiceChains {
    /// The chains that exist, with their kind.
    pub fn iter(&self) -> impl Iterator<Item = (ServiceChainKind, ChainId)> {
        [
            (ServiceChainKind::Cluster, self.cluster),
            (ServiceChainKind::Local, self.local),
            (ServiceChainKind::External, self.external),
            (ServiceChainKind::Firewall, self.firewall),
        ]
        .into_iter()
        .filter_map(|(k, c)| c.map(|c| (k, c)))
    }

    fn slot(&mut self, kind: ServiceChainKind) -> &mut Option<ChainId> {
        match kind {
            ServiceChainKind::Cluster => &mut self.cluster,
            ServiceChainKind::Local => &mut self.local,
            ServiceChainKind::External => &mut self.external,
            ServiceChainKind::Firewall => &mut self.firewall,
        }
    }
}

/// A Service port's addresses, in order: a slice (`Deref`). Most Services have one, held
/// inline; a `Vec` each was an allocation made while the model is built and a free after the
/// lints, both on the check's critical path. (Not a `SmallVec`: that would make the model
/// invariant in `'a`, which its users' borrows do not allow.)
#[derive(Clone, Debug, Default)]
pub struct Addresses<'a>(AddressList<'a>);

#[derive(Clone, Debug, Default)]
enum AddressList<'a> {
    #[default]
    Empty,
    One(ServiceAddress<'a>),
    Many(Vec<ServiceAddress<'a>>),
}

impl<'a> Addresses<'a> {
    /// Adds an address after the others.
    pub fn push(&mut self, address: ServiceAddress<'a>) {
        self.0 = match std::mem::take(&mut self.0) {
            AddressList::Empty => AddressList::One(address),
            AddressList::One(first) => AddressList::Many(vec![first, address]),
            AddressList::Many(mut all) => {
                all.push(address);
                AddressList::Many(all)
            }
        };
    }
}

impl<'a> std::ops::Deref for Addresses<'a> {
    type Target = [ServiceAddress<'a>];

    fn deref(&self) -> &[ServiceAddress<'a>] {
        match &self.0 {
            AddressList::Empty => &[],
            AddressList::One(address) => std::slice::from_ref(address),
            AddressList::Many(all) => all,
        }
    }
}

impl<'s, 'a> IntoIterator for &'s Addresses<'a> {
    type Item = &'s ServiceAddress<'a>;
    type IntoIter = std::slice::Iter<'s, ServiceAddress<'a>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A Service port's jumps to its endpoints: held inline up to four. A node of 250k rules has
/// tens of thousands of Services; a `Vec` each was an allocation made while the model is built
/// and a free after the lints, both on the check's critical path.
pub type EndpointJumps = SmallVec<[EndpointJump; 4]>;

/// One Service port as kube-proxy programmed it.
#[derive(Clone, Debug, Default)]
pub struct Service<'a> {
    /// `namespace/name:port`, from the comments; `None` when no rule names it.
    pub name: Option<Cow<'a, str>>,
    /// The hash its chains share; `None` for a Service known only by a "has no endpoints" rule.
    pub hash: Option<&'a str>,
    /// Its chains.
    pub chains: ServiceChains,
    /// Its dispatch rules, and for a Service without endpoints its REJECT rules.
    pub addresses: Addresses<'a>,
    /// The jumps of the `KUBE-SVC-*` chain to endpoints, in order.
    pub endpoints: EndpointJumps,
    /// The jumps of the `KUBE-SVL-*` chain to its local endpoints, in order.
    pub local_endpoints: Vec<EndpointJump>,
    /// filter's "has no endpoints" REJECT rules.
    pub no_endpoints_rules: Vec<RuleId>,
    /// The "has no local endpoints" DROP rules (Local traffic policy, none on this node): filter's
    /// `-j DROP` (1.25 and later, kubernetes#110290), or, before that, the `-j KUBE-MARK-DROP` kube-proxy writes into
    /// the `KUBE-SVL-*`/`KUBE-XLB-*` chain itself.
    pub no_local_endpoints_rules: Vec<RuleId>,
}

impl Service<'_> {
    /// The name for messages: `default/kubernetes:https`, or the cluster chain when unnamed.
    pub fn display_name<'s>(&'s self, set: &'s Ruleset<'_>) -> Cow<'s, str> {
        if let Some(name) = &self.name {
            return Cow::Borrowed(name.as_ref());
        }
        match self.chains.iter().next() {
            Some((_, chain)) => Cow::Borrowed(set.chain(chain).name()),
            None => Cow::Borrowed("an unnamed Service"),
        }
    }

    /// Whether something other than the Service's own chains (`KUBE-SERVICES`,
    /// `KUBE-NODEPORTS`, ...) jumps to `chain`.
    pub fn dispatched(&self, graph: &ChainGraph, chain: ChainId) -> bool {
        graph
            .jumps_into(chain)
            .any(|(from, _)| !self.chains.iter().any(|(_, own)| own == from))
    }

    /// Whether the Service is still programmed: something outside its own chains jumps to one
    /// of them. The chains of a deleted Service that kube-proxy left behind are not.
    pub fn is_live(&self, graph: &ChainGraph) -> bool {
        self.chains.iter().any(|(_, c)| self.dispatched(graph, c))
    }

    /// The balanced endpoint jumps (session-affinity rules left out).
    pub fn balanced(jumps: &[EndpointJump]) -> impl Iterator<Item = &EndpointJump> {
        jumps.iter().filter(|j| !j.affinity)
    }
}

/// One `KUBE-SEP-*` chain.
#[derive(Clone, Debug)]
pub struct Endpoint<'a> {
    /// The chain.
    pub chain: ChainId,
    /// The DNAT rule, if any.
    pub dnat: Option<RuleId>,
    /// Its `--to-destination` as written; `None` when there is no DNAT or no such option.
    pub destination: Option<&'a str>,
    /// The DNAT is sound: one `--to-destination`, a single `address:port` of the dump's family,
    /// no `[unsupported revision]` marker. Read once here, while the rule is in cache, so that
    /// the lints over endpoints (RL408) only look again at the few that are not.
    pub sound: bool,
    /// A sound destination in the plain `a.b.c.d:port` form as one number: equal keys, equal
    /// destinations, compared without reading the text again (RL408's duplicates).
    pub destination_key: Option<u64>,
    /// A rule before the DNAT marks for masquerading traffic from the destination's host as
    /// iptables-save prints it (`-s HOST/32 -j KUBE-MARK-MASQ`): the hairpin rule, found
    /// without parsing an address. Read with the DNAT, on the thread that reads those, so that
    /// `RL415 missing-hairpin` only looks again at the endpoints where this is false.
    pub hairpin_as_written: bool,
}

impl<'a> Endpoint<'a> {
    /// The Service port its comments name. Read on demand: only messages about the chain
    /// need it, and reading the comment of every endpoint chain of a large node costs more than
    /// the rest of the endpoint.
    pub fn name(&self, set: &Ruleset<'a>) -> Option<Cow<'a, str>> {
        endpoint_chain_name(set, self.chain)
    }
}

/// The Service port an endpoint chain's comments name.
fn endpoint_chain_name<'a>(set: &Ruleset<'a>, chain: ChainId) -> Option<Cow<'a, str>> {
    set.chain(chain)
        .rules()
        .find_map(|rule| rule_service_name(rule).map(|(n, _)| n))
}

/// What kube-proxy and kubelet wrote into one ruleset.
#[derive(Clone, Debug)]
pub struct KubeModel<'a> {
    /// The layout facts.
    pub layout: Layout,
    /// Every Service port, in the order its first chain or rule appears.
    pub services: Vec<Service<'a>>,
    /// Every `KUBE-SEP-*` chain of nat, in order.
    pub endpoints: Vec<Endpoint<'a>>,
    /// Per chain (indexed by `ChainId`): its service or endpoint, or [`NONE`]. Dense tables
    /// rather than hash maps: lookups by chain are the model's hot path, and a hash map of
    /// 100k chains misses the cache on every one.
    service_by_chain: Vec<u32>,
    endpoint_by_chain: Vec<u32>,
    /// RL409's keys of nat `KUBE-SERVICES`'s dispatch rules, read with their Services.
    pub(crate) dispatch_keys: DispatchKeys,
}

/// True when a DNAT rule has no `[unsupported revision]` marker and exactly one
/// `--to-destination`, whose value is one `address:port` (not a range, port not 0) of the
/// dump's family (either family when it is not known). RL408 reports every DNAT for which this
/// is false and the marker is absent.
pub fn dnat_sound(rule: RuleRef<'_, '_>, family: Option<Family>) -> bool {
    dnat_read(rule, family).1
}

/// A DNAT rule's first `--to-destination` value ([`RuleRef::dnat_destination`]) and whether
/// the rule is [`dnat_sound`], from one pass over the target's options.
fn dnat_read<'a>(rule: RuleRef<'_, 'a>, family: Option<Family>) -> (Option<&'a str>, bool) {
    let (destination, sound, _) = dnat_read_keyed(rule, family);
    (destination, sound)
}

/// [`dnat_read`] and the destination's `plain_ipv4_key` when the DNAT is sound and plain.
fn dnat_read_keyed<'a>(
    rule: RuleRef<'_, 'a>,
    family: Option<Family>,
) -> (Option<&'a str>, bool, Option<u64>) {
    let words = rule.tokens();
    let (destination, one) = match lone_destination(rule, &words) {
        Some(text) => (Some(text), true),
        None => {
            let Some(target) = rule.target() else {
                return (None, false, None);
            };
            let mut options = target.options().filter(|o| o.name() == "--to-destination");
            let first = options.next();
            let destination = first.and_then(|o| o.args().next());
            (destination, first.is_some() && options.next().is_none())
        }
    };
    // As `RuleRef::has_unsupported_revision`, over the words already at hand.
    if !one || words.iter().any(|t| t.kind() == TokenKind::Unsupported) {
        return (destination, false, None);
    }
    let Some(text) = destination else {
        return (None, false, None);
    };
    // The form kube-proxy writes, read without the general parser (this runs once per endpoint).
    if let Some(key) = plain_ipv4_key(text) {
        let sound = family != Some(Family::Ipv6);
        return (destination, sound, sound.then_some(key));
    }
    let Ok(parsed) = NatAddress::parse(text) else {
        return (destination, false, None);
    };
    let (Some(address), Some(ports)) = (parsed.first, parsed.ports) else {
        return (destination, false, None);
    };
    let sound = parsed.last == Some(address)
        && ports.first == ports.last
        && !matches!(
            (family, address.is_ipv6()),
            (Some(Family::Ipv4), true) | (Some(Family::Ipv6), false)
        );
    (destination, sound, None)
}

/// The value of the `--to-destination` of a rule that ends, as kube-proxy writes its DNAT, in
/// `-j DNAT --to-destination VALUE`: the target is its third word from the end, so that option
/// is its only one. `None` for any other shape, which the caller reads through the target's
/// options. The rule's target is its last `-j`/`-g` word ([`is_rule_target`]): told from the
/// words without [`RuleRef::target`] (this runs for every endpoint).
fn lone_destination<'a>(rule: RuleRef<'_, 'a>, words: &[Token]) -> Option<&'a str> {
    let [.., jump, option, value] = words else {
        return None;
    };
    (is_rule_target(rule, jump)
        && option.kind() == TokenKind::Option
        && value.kind() == TokenKind::Arg
        && word_bytes(rule, option) == b"--to-destination")
        .then(|| rule.token_text(value))
}

/// The bytes of one of `rule`'s words (of its name, for a module or target word), to compare
/// with a fixed word: slicing bytes skips the character-boundary checks of
/// [`RuleRef::token_text`], which these readers (run for every endpoint and Service rule) made
/// on every word they compared.
#[inline]
pub(crate) fn word_bytes<'a>(rule: RuleRef<'_, 'a>, word: &Token) -> &'a [u8] {
    rule.ruleset()
        .source()
        .as_bytes()
        .get(word.name_span().range())
        .unwrap_or_default()
}

/// Whether `word`, one of `rule`'s words that no `-j`/`-g` word follows (the callers check the
/// words after it), is the rule's target ([`RuleRef::target`]): the parser keeps a rule's last
/// `-j`/`-g` as its target, so it is exactly when the rule has one (its class is not `None`).
fn is_rule_target(rule: RuleRef<'_, '_>, word: &Token) -> bool {
    word.kind() == TokenKind::Target && rule.target_class() != TargetClass::None
}

/// Whether `text` is `a.b.c.d:port` with decimal octets up to 255 without leading zeros and a
/// port from 1 to 65535 without leading zeros: a form [`NatAddress::parse`] reads as one IPv4
/// address and one port. Other forms (IPv6, ranges, zeros in front) are left to it.
#[cfg(test)]
fn plain_ipv4_destination(text: &str) -> bool {
    plain_ipv4_key(text).is_some()
}

/// The address and port of a plain `a.b.c.d:port` (see `plain_ipv4_destination`) as one
/// number (`address << 16 | port`), `None` for any other text. The plain form has no leading
/// zeros, so two such texts are equal exactly when their keys are.
fn plain_ipv4_key(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    // `0.0.0.0:1` to `255.255.255.255:65535`.
    if !(9..=21).contains(&b.len()) {
        return None;
    }
    // One pass over the bytes (this runs once per endpoint): the octets read so far, and the
    // value and digit count of the part being read.
    let mut key: u64 = 0;
    let mut octets = 0;
    let mut value: u32 = 0;
    let mut digits = 0;
    for &byte in b {
        let digit = byte.wrapping_sub(b'0');
        if digit < 10 {
            // A second digit after a leading zero, or a sixth digit (the value stays far
            // from overflowing): not the plain form.
            if (digits > 0 && value == 0) || digits == 5 {
                return None;
            }
            value = value * 10 + u32::from(digit);
            digits += 1;
            continue;
        }
        let separator = if octets < 3 { b'.' } else { b':' };
        // An octet has no leading zero, so one over 255 has more than three digits too.
        if byte != separator || octets == 4 || digits == 0 || value > 255 {
            return None;
        }
        key = (key << 8) | u64::from(value);
        octets += 1;
        value = 0;
        digits = 0;
    }
    (octets == 4 && value != 0 && value <= 65_535).then_some((key << 16) | u64::from(value))
}

/// What the DNAT rule of each `KUBE-SEP-*` chain of nat says, in chain order: the model's
/// endpoints. It is the part of the model that reads the most rules (one endpoint chain per two
/// or three nat rules), and it depends on nothing else the model reads: on two threads it is
/// read on one while the other builds the rest (`LintContext::kube`), which then takes the
/// endpoints over ([`EndpointDnats::take`]) rather than copy them.
pub(crate) struct EndpointDnats<'a>(Mutex<Vec<Endpoint<'a>>>);

impl<'a> EndpointDnats<'a> {
    /// Reads the DNAT of every endpoint chain of the nat table in effect.
    pub(crate) fn read(set: &Ruleset<'a>) -> EndpointDnats<'a> {
        let Some(nat) = table(set, TableKind::Nat) else {
            return EndpointDnats(Mutex::new(Vec::new()));
        };
        // Sized for every nat chain (an upper bound; pages never written are never mapped), so
        // that it is written once rather than copied through every doubling.
        let mut dnats = Vec::with_capacity(nat.get().chains.len());
        // Written once, in order: huge pages spare a 250k-rule node a thousand page faults.
        rulelint_parser::huge_pages::advise(&dnats);
        dnats.extend(
            nat.chains()
                .filter(|c| is_endpoint_chain(c.name()))
                .map(|c| Endpoint::read(c, set.family)),
        );
        EndpointDnats(Mutex::new(dnats))
    }

    /// The endpoints read, leaving none: the model takes them once.
    fn take(&self) -> Vec<Endpoint<'a>> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<'a> Endpoint<'a> {
    /// An endpoint chain and what its DNAT rule says.
    fn read(chain: ChainRef<'_, 'a>, family: Option<Family>) -> Endpoint<'a> {
        let rule = chain
            .rules()
            .find(|rule| rule.target_class() == TargetClass::Dnat);
        let (destination, sound, destination_key) =
            rule.map_or((None, false, None), |rule| dnat_read_keyed(rule, family));
        // The rules before the DNAT were just read: still in cache.
        let hairpin_as_written = rule.is_some_and(|dnat| {
            destination.and_then(destination_host).is_some_and(|host| {
                chain
                    .rules()
                    .take_while(|r| r.id != dnat.id)
                    .any(|r| marks_from_text(r, host))
            })
        });
        Endpoint {
            chain: chain.id,
            dnat: rule.map(|r| r.id),
            destination,
            sound,
            destination_key,
            hairpin_as_written,
        }
    }
}

/// The host of a `--to-destination` as written: `10.244.1.5` of `10.244.1.5:8080`, `fd00::5`
/// of `[fd00::5]:8080`.
pub(crate) fn destination_host(text: &str) -> Option<&str> {
    // A byte search: `split_once` with a `char` costs several times as much on these short
    // texts (this runs once per endpoint). Both bytes are ASCII: the slice is at a boundary.
    match text.strip_prefix('[') {
        Some(rest) => rest.bytes().position(|b| b == b']').map(|at| &rest[..at]),
        None => text.bytes().position(|b| b == b':').map(|at| &text[..at]),
    }
}

/// Whether a rule marks for masquerading traffic whose `-s` is, as written, `host/32` or
/// `host/128`.
pub(crate) fn marks_from_text(rule: RuleRef<'_, '_>, host: &str) -> bool {
    if !matches!(
        rule.target_class(),
        TargetClass::KubeMarkMasq | TargetClass::Mark
    ) {
        return false;
    }
    rule_source(rule).is_some_and(|s| {
        !s.negated
            && s.value
                .strip_prefix(host)
                .is_some_and(|rest| rest == "/32" || rest == "/128")
    })
}

/// `rule.option(None, &["-s", "--source"])`. The form kube-proxy writes before an endpoint's
/// DNAT, `-s HOST/32 -j KUBE-MARK-MASQ` (three words, one match), is read from its words; any
/// other through the rule's matches.
fn rule_source<'a>(rule: RuleRef<'_, 'a>) -> Option<Negatable<&'a str>> {
    const NAMES: &[&str] = &["-s", "--source"];
    match *rule.tokens() {
        [option, value, jump]
            if is_rule_target(rule, &jump)
                && option.kind() == TokenKind::Option
                && value.kind() == TokenKind::Arg =>
        {
            matches!(word_bytes(rule, &option), b"-s" | b"--source").then(|| Negatable {
                negated: option.negated(),
                value: rule.token_text(&value),
            })
        }
        _ => rule.option(None, NAMES),
    }
}

/// No entry in a dense per-chain table. An entry holds its index plus one, so that a fresh
/// table is all zeros: a large one is then zeroed memory the system maps on first write, and
/// the pages of chains that are neither (a million filter chains) never count (issue 16).
const NONE: u32 = 0;

fn lookup(table: &[u32], chain: ChainId) -> Option<usize> {
    table
        .get(chain.index())
        .filter(|&&i| i != NONE)
        .map(|&i| i as usize - 1)
}

/// The entry of a dense per-chain table for index `i`.
fn entry(i: usize) -> u32 {
    i as u32 + 1
}

impl<'a> KubeModel<'a> {
    /// Reads the model from the tables in effect (tables that a later block of the same table
    /// replaces are ignored).
    ///
    /// The chain graph is taken for the callers' convenience and future use; the model reads
    /// each rule's resolved target chain directly.
    pub fn build(set: &Ruleset<'a>, _graph: &ChainGraph) -> KubeModel<'a> {
        let dnats = EndpointDnats::read(set);
        Builder::new(set).build(|| &dnats)
    }

    /// [`build`](Self::build) with the endpoints' DNAT rules read by `dnats`, which another
    /// thread may be reading meanwhile (`LintContext::kube`): it is called last.
    pub(crate) fn build_with<'d>(
        set: &Ruleset<'a>,
        dnats: impl FnOnce() -> &'d EndpointDnats<'a>,
    ) -> KubeModel<'a>
    where
        'a: 'd,
    {
        Builder::new(set).build(dnats)
    }

    /// The Service port a service chain (`KUBE-SVC/SVL/EXT/FW-*`) belongs to.
    pub fn service_of_chain(&self, chain: ChainId) -> Option<&Service<'a>> {
        lookup(&self.service_by_chain, chain).map(|i| &self.services[i])
    }

    /// The index in [`endpoints`](Self::endpoints) of a `KUBE-SEP-*` chain.
    pub fn endpoint_index(&self, chain: ChainId) -> Option<usize> {
        lookup(&self.endpoint_by_chain, chain)
    }

    /// The endpoint chain a jump leads to.
    pub fn endpoint(&self, jump: &EndpointJump) -> Option<&Endpoint<'a>> {
        jump.chain
            .and_then(|c| self.endpoint_index(c))
            .map(|i| &self.endpoints[i])
    }
}

/// The nat and filter tables in effect.
fn table<'r, 'a>(set: &'r Ruleset<'a>, kind: TableKind) -> Option<TableRef<'r, 'a>> {
    set.iter_tables()
        .filter(|t| t.kind() == kind && !t.get().superseded)
        .last()
}

struct Builder<'r, 'a> {
    set: &'r Ruleset<'a>,
    nat: Option<TableRef<'r, 'a>>,
    filter: Option<TableRef<'r, 'a>>,
    services: Vec<Service<'a>>,
    /// nat's endpoint chains, in chain order: the endpoints are made from them and their DNATs
    /// at the end ([`Builder::endpoints`]), each written once.
    endpoint_chains: Vec<ChainId>,
    by_hash: FxHashMap<&'a str, usize>,
    by_name: FxHashMap<Cow<'a, str>, usize>,
    service_by_chain: Vec<u32>,
    endpoint_by_chain: Vec<u32>,
    /// Per chain, one bit: it is an endpoint chain. Asked for every jump of every Service
    /// chain: a table of bits stays in the cache where `endpoint_by_chain` (32 times larger)
    /// misses it.
    is_endpoint: Vec<u64>,
    /// Scratch space for [`Builder::load_jumps`].
    jumps: Vec<(RuleId, ChainId)>,
    /// Layout facts of nat's service and endpoint chains, read while they are listed, and the
    /// other nat chains, which [`Builder::layout`] reads: it then never reads the names of the
    /// (many) per-Service and per-endpoint chains again.
    service_or_endpoint_chains: bool,
    modern_chains: bool,
    other_nat_chains: Vec<ChainId>,
    dispatch_keys: DispatchKeys,
}

impl<'r, 'a> Builder<'r, 'a> {
    fn new(set: &'r Ruleset<'a>) -> Self {
        let nat = table(set, TableKind::Nat);
        // About one Service port per five nat chains on a kube-proxy node: sized once rather
        // than grown (and rehashed) through every power of two.
        let services = nat.map_or(0, |t| t.get().chains.len() / 4);
        // Sized once, as the maps are, so that it is written once rather than copied through
        // every doubling; in order, so huge pages spare a 250k-rule node a thousand page faults.
        let service_list = Vec::with_capacity(services);
        rulelint_parser::huge_pages::advise(&service_list);
        Builder {
            set,
            nat,
            filter: table(set, TableKind::Filter),
            services: service_list,
            endpoint_chains: Vec::new(),
            by_hash: FxHashMap::with_capacity_and_hasher(services, Default::default()),
            by_name: FxHashMap::with_capacity_and_hasher(services, Default::default()),
            service_by_chain: vec![NONE; set.chains.len()],
            endpoint_by_chain: vec![NONE; set.chains.len()],
            is_endpoint: vec![0; set.chains.len().div_ceil(64)],
            jumps: Vec::new(),
            service_or_endpoint_chains: false,
            modern_chains: false,
            other_nat_chains: Vec::new(),
            dispatch_keys: DispatchKeys::default(),
        }
    }

    fn build<'d>(mut self, dnats: impl FnOnce() -> &'d EndpointDnats<'a>) -> KubeModel<'a>
    where
        'a: 'd,
    {
        if let Some(nat) = self.nat {
            self.read_nat_chains(nat);
            // Only nat's chain names give hashes: freed before the dispatch rules are read, the
            // map's memory (800 KB on a 250k-rule node) is not held at the build's peak.
            self.by_hash = FxHashMap::default();
            for name in ["KUBE-SERVICES", "KUBE-NODEPORTS"] {
                if let Some(chain) = nat.chain(name) {
                    self.read_dispatch(chain);
                }
            }
        }
        if let Some(filter) = self.filter {
            for name in [
                "KUBE-SERVICES",
                "KUBE-EXTERNAL-SERVICES",
                "KUBE-PROXY-FIREWALL",
                "KUBE-NODEPORTS",
            ] {
                if let Some(chain) = filter.chain(name) {
                    self.read_filter(chain);
                }
            }
        }
        let layout = self.layout();
        let endpoints = self.endpoints(dnats());
        KubeModel {
            layout,
            services: self.services,
            endpoints,
            service_by_chain: self.service_by_chain,
            endpoint_by_chain: self.endpoint_by_chain,
            dispatch_keys: self.dispatch_keys,
        }
    }

    /// The jumps out of a chain to other chains, in rule order: (rule, chain jumped to), into
    /// the reused `self.jumps`. The parser resolved each rule's target chain already (the
    /// graph's edges are exactly these); reading them from the chain's own rules walks memory
    /// in order, where the graph's per-node edge lists jump about a 250k-rule node.
    fn load_jumps(&mut self, chain: ChainId) {
        self.jumps.clear();
        self.jumps.extend(
            self.set
                .chain(chain)
                .rules()
                .filter_map(|rule| rule.target_chain().map(|to| (rule.id, to))),
        );
        // File order, as the graph gives them (it differs from chain order only for `-I`).
        if !self.jumps.is_sorted_by_key(|&(rule, _)| rule.0) {
            self.jumps.sort_unstable_by_key(|&(rule, _)| rule.0);
        }
    }

    fn service_for_hash(&mut self, hash: &'a str) -> usize {
        *self.by_hash.entry(hash).or_insert_with(|| {
            self.services.push(Service {
                hash: Some(hash),
                ..Service::default()
            });
            self.services.len() - 1
        })
    }

    /// Gives a service its name from a comment, or finds the service of that name.
    fn name_service(&mut self, index: usize, name: Cow<'a, str>) {
        if self.services[index].name.is_some() {
            return;
        }
        // One hash of the name for the question and the insertion.
        if let std::collections::hash_map::Entry::Vacant(slot) = self.by_name.entry(name) {
            self.services[index].name = Some(slot.key().clone());
            slot.insert(index);
        }
    }

    fn service_for_name(&mut self, name: Cow<'a, str>) -> usize {
        if let Some(&i) = self.by_name.get(&name) {
            return i;
        }
        self.services.push(Service {
            name: Some(name.clone()),
            ..Service::default()
        });
        let i = self.services.len() - 1;
        self.by_name.insert(name, i);
        i
    }

    fn read_nat_chains(&mut self, nat: TableRef<'r, 'a>) {
        for chain in nat.chains() {
            let name = chain.name();
            if let Some((kind, hash)) = service_chain(name) {
                let i = self.service_for_hash(hash);
                self.services[i].chains.slot(kind).get_or_insert(chain.id);
                self.service_by_chain[chain.id.index()] = entry(i);
                self.service_or_endpoint_chains = true;
                self.modern_chains |=
                    name.starts_with("KUBE-EXT-") || name.starts_with("KUBE-SVL-");
            } else if is_endpoint_chain(name) {
                self.read_endpoint(chain);
                self.service_or_endpoint_chains = true;
            } else {
                self.other_nat_chains.push(chain.id);
            }
        }
        // Second pass, now that every endpoint chain is known: the service chains' rules.
        for i in 0..self.services.len() {
            let chains = self.services[i].chains;
            for (kind, chain) in chains.iter() {
                self.read_service_chain(i, kind, self.set.chain(chain));
            }
        }
    }

    /// Lists an endpoint chain; its DNAT is read apart ([`EndpointDnats`], [`Builder::endpoints`]).
    fn read_endpoint(&mut self, chain: ChainRef<'r, 'a>) {
        self.endpoint_by_chain[chain.id.index()] = entry(self.endpoint_chains.len());
        self.is_endpoint[chain.id.index() / 64] |= 1 << (chain.id.index() % 64);
        self.endpoint_chains.push(chain.id);
    }

    /// The endpoints, with their DNATs, taken from `dnats`, which lists the same chains in the
    /// same order (both walk the nat table in effect); were it ever to differ (or to have been
    /// taken already), each DNAT is read here instead.
    fn endpoints(&self, dnats: &EndpointDnats<'a>) -> Vec<Endpoint<'a>> {
        let read = dnats.take();
        if read.len() == self.endpoint_chains.len()
            && read
                .iter()
                .zip(&self.endpoint_chains)
                .all(|(d, &chain)| d.chain == chain)
        {
            read
        } else {
            self.endpoint_chains
                .iter()
                .map(|&chain| Endpoint::read(self.set.chain(chain), self.set.family))
                .collect()
        }
    }

    fn read_service_chain(&mut self, i: usize, kind: ServiceChainKind, chain: ChainRef<'r, 'a>) {
        if kind == ServiceChainKind::Local {
            // Before 1.25 a Local-policy chain without local endpoints holds its own DROP
            // ("has no local endpoints"). Local chains are few: reading every comment is cheap.
            for rule in chain.rules() {
                if let Some((name, role)) = rule_service_name(rule) {
                    if role == CommentRole::NoLocalEndpoints && rule.target().is_some() {
                        self.services[i].no_local_endpoints_rules.push(rule.id);
                    }
                    if self.services[i].name.is_none() {
                        self.name_service(i, name);
                    }
                }
            }
        } else if self.services[i].name.is_none()
            && let Some(name) = chain
                .rules()
                .find_map(|r| rule_service_name(r).map(|(n, _)| n))
        {
            self.name_service(i, name);
        }
        self.load_jumps(chain.id);
        let jumps = std::mem::take(&mut self.jumps);
        for &(rule, to) in &jumps {
            let bit = to.index();
            if self
                .is_endpoint
                .get(bit / 64)
                .is_none_or(|w| w & (1 << (bit % 64)) == 0)
            {
                continue;
            }
            let (probability, affinity) = jump_balance(self.set.rule(rule));
            let jump = EndpointJump {
                rule,
                chain: Some(to),
                probability,
                affinity,
            };
            match kind {
                ServiceChainKind::Cluster => self.services[i].endpoints.push(jump),
                ServiceChainKind::Local => self.services[i].local_endpoints.push(jump),
                // kube-proxy never jumps from these to endpoints; keep the jump visible anyway.
                ServiceChainKind::External | ServiceChainKind::Firewall => {
                    self.services[i].endpoints.push(jump)
                }
            }
        }
        self.jumps = jumps;
    }

    /// nat `KUBE-SERVICES` and `KUBE-NODEPORTS`: the ways into each Service port.
    fn read_dispatch(&mut self, chain: ChainRef<'r, 'a>) {
        let node_ports = chain.name() == "KUBE-NODEPORTS";
        self.load_jumps(chain.id);
        let jumps = std::mem::take(&mut self.jumps);
        if !node_ports {
            self.dispatch_keys = DispatchKeys::for_chain(chain.id, jumps.len());
        }
        for (at, &(rule, to)) in jumps.iter().enumerate() {
            self.prefetch_dispatched(&jumps, at);
            let Some(i) = lookup(&self.service_by_chain, to) else {
                continue;
            };
            // The chain's kind is its slot in the Service (the first chain of each kind); only
            // a second chain of one kind (`KUBE-SVL-` and `KUBE-XLB-` of one hash) is read by name.
            let Some(chain_kind) = self.services[i]
                .chains
                .iter()
                .find(|&(_, c)| c == to)
                .map(|(kind, _)| kind)
                .or_else(|| service_chain(self.set.chain(to).name()).map(|(kind, _)| kind))
            else {
                continue;
            };
            let rule_ref = self.set.rule(rule);
            let shaped = dispatch_shape_tokens(rule_ref);
            let facts =
                DispatchFacts::read_shaped(rule_ref, self.services[i].name.as_deref(), shaped);
            // RL409's key, while the rule's words are in cache, from the address just parsed.
            if !node_ports && shaped.is_some() && !rule_ref.is_goto() {
                self.dispatch_keys.push(rule, facts.dispatch_key());
            }
            let named = facts.named.as_ref().map(|(_, role)| *role);
            let kind = if node_ports {
                AddressKind::NodePort
            } else {
                match (chain_kind, named) {
                    (_, Some(CommentRole::ClusterIp)) => AddressKind::ClusterIp,
                    (_, Some(CommentRole::LoadBalancerIp)) | (ServiceChainKind::Firewall, _) => {
                        AddressKind::LoadBalancerIp
                    }
                    (ServiceChainKind::External, _) => AddressKind::ExternalIp,
                    _ => AddressKind::ClusterIp,
                }
            };
            let address = facts.address(kind, rule);
            if let Some((name, _)) = facts.named
                && self.services[i].name.is_none()
            {
                self.name_service(i, name);
            }
            self.services[i].addresses.push(address);
        }
        self.jumps = jumps;
    }

    /// Prefetches what [`Builder::read_dispatch`] reads of the Services of the dispatch jumps
    /// after `at`: their slots `PREFETCH_AHEAD` jumps ahead, and the text of their names half as
    /// far ahead (their slots are in cache by then). The jumps visit the Services in random
    /// order, and a Service slot is larger than a cache line: without the hints each dispatch
    /// rule waited for two or three misses in turn.
    fn prefetch_dispatched(&self, jumps: &[(RuleId, ChainId)], at: usize) {
        const PREFETCH_AHEAD: usize = 8;
        let service_at = |ahead: usize| {
            jumps
                .get(at + ahead)
                .and_then(|&(_, to)| lookup(&self.service_by_chain, to))
                .and_then(|i| self.services.get(i))
        };
        if let Some(service) = service_at(PREFETCH_AHEAD) {
            rulelint_parser::prefetch::lines(service);
        }
        if let Some(name) = service_at(PREFETCH_AHEAD / 2).and_then(|s| s.name.as_deref()) {
            rulelint_parser::prefetch::line(name);
        }
    }

    /// filter's Service rules: "has no endpoints" REJECTs and "has no local endpoints" DROPs.
    fn read_filter(&mut self, chain: ChainRef<'r, 'a>) {
        for rule in chain.rules() {
            let Some((name, role)) = rule_service_name(rule) else {
                continue;
            };
            match role {
                CommentRole::NoEndpoints | CommentRole::NoLocalEndpoints => {
                    let i = self.service_for_name(name);
                    let kind = if rule.dst_type().is_some_and(|t| t.value == "LOCAL") {
                        AddressKind::NodePort
                    } else if chain.name() == "KUBE-SERVICES" {
                        AddressKind::ClusterIp
                    } else {
                        AddressKind::ExternalIp
                    };
                    let service = &mut self.services[i];
                    if role == CommentRole::NoEndpoints {
                        service.no_endpoints_rules.push(rule.id);
                    } else {
                        service.no_local_endpoints_rules.push(rule.id);
                    }
                    // A Service without chains is known only by these rules: its addresses.
                    if service.hash.is_none() {
                        service.addresses.push(address(rule, kind));
                    }
                }
                _ => {}
            }
        }
    }

    fn layout(&self) -> Layout {
        let nat_chain = |name| self.nat.and_then(|t| t.chain(name));
        // nat's service and endpoint chains were seen in `read_nat_chains`: they are kube-proxy's
        // and hold neither IPVS chains nor nfacct or set matches (see below).
        let mut kube_chains = self.service_or_endpoint_chains;
        let mut nfacct = false;
        let mut ipvs = false;
        let mut modern_chains = self.modern_chains;
        let nat_others = self.other_nat_chains.iter().map(|&c| self.set.chain(c));
        // Without nat, every nat chain is left: `other_nat_chains` is empty then.
        let set = self.set;
        let filter_chains = self
            .filter
            .into_iter()
            .flat_map(move |t| t.get().chains.iter().map(move |&c| set.chain(c)));
        for chain in nat_others.chain(filter_chains) {
            let name = chain.name();
            if !name.starts_with("KUBE-") {
                continue;
            }
            kube_chains |= is_kube_proxy_chain(name);
            modern_chains |= name.starts_with("KUBE-EXT-") || name.starts_with("KUBE-SVL-");
            ipvs |= is_ipvs_chain(name);
            // nfacct counters and IPVS set matches live in the fixed chains, never in the
            // (many) per-Service and per-endpoint ones.
            if service_chain(name).is_some() || is_endpoint_chain(name) {
                continue;
            }
            for rule in chain.rules() {
                let modules = NfacctOrSet::of(rule);
                nfacct |= modules.nfacct;
                // Only a rule with a set match has its matches walked, for their options.
                if !modules.set {
                    continue;
                }
                for m in rule.matches().filter(|m| m.module() == Some("set")) {
                    ipvs |= m.options().any(|o| {
                        matches!(o.name(), "--match-set" | "--set")
                            && o.args().next().is_some_and(is_ipvs_set)
                    });
                }
            }
        }
        let decided = Layout::decide(
            self.nat,
            self.filter,
            LayoutSigns {
                services_or_endpoints: !self.services.is_empty()
                    || !self.endpoint_chains.is_empty(),
                kube_chains,
                modern_chains,
                nfacct,
                ipvs,
            },
        );
        // Past the threshold the comments do not matter: a node in large-cluster mode has none
        // on its endpoints, and looking for one would read every endpoint chain.
        let large_cluster = self.endpoint_chains.len() > LARGE_CLUSTER_ENDPOINTS
            || (!self.endpoint_chains.is_empty()
                && !self
                    .endpoint_chains
                    .iter()
                    .any(|&c| endpoint_chain_name(self.set, c).is_some()));
        let masquerade_mark = nat_chain("KUBE-MARK-MASQ").and_then(|c| {
            c.rules().find_map(|r| {
                let target = r.target()?;
                if target.name() != "MARK" {
                    return None;
                }
                set_mark(
                    target.option_arg("--set-xmark"),
                    target.option_arg("--or-mark"),
                )
            })
        });
        Layout {
            large_cluster,
            masquerade_mark,
            ..decided
        }
    }
}

/// Whether a rule has an `-m nfacct` match, and an `-m set` one, read from its words: each
/// module word before the rule's target opens one match of that module ([`RuleRef::matches`]),
/// so this is what the walk over its matches finds, without building them ([`Builder::layout`]
/// and RL411 read every rule of nat `KUBE-SERVICES`, one per Service port). Pinned by a test.
#[derive(Debug, PartialEq)]
pub(crate) struct NfacctOrSet {
    pub(crate) nfacct: bool,
    pub(crate) set: bool,
}

impl NfacctOrSet {
    pub(crate) fn of(rule: RuleRef<'_, '_>) -> NfacctOrSet {
        let words = rule.tokens();
        // The target is the rule's last `-j`/`-g` word when it has one ([`is_rule_target`]);
        // a lone target (no stored words) has no match before it.
        let end = if rule.target_class() == TargetClass::None {
            words.len()
        } else {
            words
                .iter()
                .rposition(|t| t.kind() == TokenKind::Target)
                .unwrap_or(words.len())
        };
        let mut found = NfacctOrSet {
            nfacct: false,
            set: false,
        };
        for word in words[..end]
            .iter()
            .filter(|t| t.kind() == TokenKind::Module)
        {
            match word_bytes(rule, word) {
                b"nfacct" => found.nfacct = true,
                b"set" => found.set = true,
                _ => {}
            }
        }
        found
    }
}

/// What decides a node's layout besides its fixed chains, read by the model and by the trace's
/// light reader (`trace/facts.rs`), so that both decide the mode and generation alike.
pub(crate) struct LayoutSigns {
    /// Service or endpoint chains (or their facts) were found.
    pub services_or_endpoints: bool,
    /// A `KUBE-*` chain only kube-proxy writes was found.
    pub kube_chains: bool,
    /// `KUBE-EXT-*` or `KUBE-SVL-*` chains (the 1.27+ layout).
    pub modern_chains: bool,
    /// An nfacct match in a fixed chain.
    pub nfacct: bool,
    /// IPVS chains or IPVS ipset matches.
    pub ipvs: bool,
}

impl Layout {
    /// The layout from nat's and filter's fixed chains and the signs read before;
    /// `large_cluster` and `masquerade_mark` are left for the caller.
    pub(crate) fn decide(
        nat: Option<TableRef<'_, '_>>,
        filter: Option<TableRef<'_, '_>>,
        signs: LayoutSigns,
    ) -> Layout {
        let any_chain = |names: &[&str]| {
            [nat, filter]
                .into_iter()
                .flatten()
                .any(|t| names.iter().any(|n| t.chain(n).is_some()))
        };
        let kubelet = any_chain(&[
            "KUBE-MARK-DROP",
            "KUBE-FIREWALL",
            "KUBE-KUBELET-CANARY",
            "KUBE-IPTABLES-HINT",
        ]);
        let proxy_firewall = filter.is_some_and(|t| t.chain("KUBE-PROXY-FIREWALL").is_some());
        let iptables_mode = signs.services_or_endpoints
            || any_chain(&[
                "KUBE-SERVICES",
                "KUBE-NODEPORTS",
                "KUBE-EXTERNAL-SERVICES",
                "KUBE-PROXY-FIREWALL",
                "KUBE-PROXY-CANARY",
                "KUBE-FORWARD",
            ]);
        let mode = if signs.ipvs {
            ProxyMode::Ipvs
        } else if iptables_mode {
            ProxyMode::Iptables
        } else if any_chain(&["KUBE-ROUTER-SERVICES", "KUBE-ROUTER-HAIRPIN"]) {
            ProxyMode::KubeRouter
        } else if any_chain(&[
            "KUBE-PORTALS-CONTAINER",
            "KUBE-PORTALS-HOST",
            "KUBE-NODEPORT-CONTAINER",
            "KUBE-NODEPORT-HOST",
            "KUBE-NODEPORT-NON-LOCAL",
        ]) {
            ProxyMode::Userspace
        } else {
            ProxyMode::None
        };
        let generation = if !signs.kube_chains
            || !matches!(
                mode,
                ProxyMode::Iptables | ProxyMode::Ipvs | ProxyMode::None
            ) {
            Generation::None
        } else if proxy_firewall || signs.modern_chains || signs.nfacct {
            Generation::Modern
        } else {
            // KUBE-MARK-DROP and the 0x8000 KUBE-FIREWALL rule mark it, but kube-proxy chains
            // without any marker are older still: legacy too.
            Generation::Legacy
        };
        Layout {
            mode,
            kubelet,
            generation,
            mark_drop: nat.is_some_and(|t| t.chain("KUBE-MARK-DROP").is_some()),
            proxy_firewall,
            nfacct: signs.nfacct,
            large_cluster: false,
            ipvs: signs.ipvs,
            masquerade_mark: None,
        }
    }
}

/// The mark a `MARK` target sets, from `--set-xmark V/M` (what iptables-save prints) or
/// `--or-mark V` (what kube-proxy writes).
pub fn set_mark(set_xmark: Option<&str>, or_mark: Option<&str>) -> Option<Mark> {
    if let Some(text) = set_xmark {
        return Mark::parse(text);
    }
    let m = Mark::parse(or_mark?)?;
    Some(Mark {
        value: m.value,
        mask: m.value,
    })
}

/// The chains only kube-proxy's IPVS mode writes (`KUBE-NODE-PORT`, not iptables mode's
/// `KUBE-NODEPORTS`).
pub fn is_ipvs_chain(name: &str) -> bool {
    matches!(
        name,
        "KUBE-LOAD-BALANCER"
            | "KUBE-NODE-PORT"
            | "KUBE-IPVS-FILTER"
            | "KUBE-IPVS-OUT-FILTER"
            | "KUBE-SOURCE-RANGES-FIREWALL"
    ) || name.starts_with("KUBE-IPVS")
}

/// The ipsets kube-proxy's IPVS mode matches on (`KUBE-CLUSTER-IP`, `KUBE-LOOP-BACK`,
/// `KUBE-NODE-PORT-TCP`, ...; IPv6 sets of a dual-stack node are named `KUBE-6-...`).
pub fn is_ipvs_set(name: &str) -> bool {
    let name = match name.strip_prefix("KUBE-6-") {
        Some(rest) => rest,
        None => match name.strip_prefix("KUBE-") {
            Some(rest) => rest,
            None => return false,
        },
    };
    [
        "CLUSTER-IP",
        "LOOP-BACK",
        "EXTERNAL-IP",
        "LOAD-BALANCER",
        "NODE-PORT-",
        "HEALTH-CHECK-NODE-PORT",
        "IPVS-IPS",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// kube-proxy's and kubelet's own chains (iptables or IPVS mode), as opposed to kube-router's
/// `KUBE-ROUTER-*` and other tools that borrow the prefix.
pub fn is_kube_proxy_chain(name: &str) -> bool {
    matches!(
        name,
        "KUBE-SERVICES"
            | "KUBE-NODEPORTS"
            | "KUBE-POSTROUTING"
            | "KUBE-MARK-MASQ"
            | "KUBE-MARK-DROP"
            | "KUBE-FORWARD"
            | "KUBE-EXTERNAL-SERVICES"
            | "KUBE-PROXY-FIREWALL"
            | "KUBE-FIREWALL"
    ) || service_chain(name).is_some()
        || is_endpoint_chain(name)
}

fn rule_service_name<'a>(rule: RuleRef<'_, 'a>) -> Option<(Cow<'a, str>, CommentRole)> {
    let raw = match first_comment_as_written(rule) {
        Some(raw) => raw,
        None => rule.option(Some("comment"), &["--comment"])?.value,
    };
    comment_service_name(raw)
}

/// The value of `rule.option(Some("comment"), &["--comment"])` when the rule's first
/// `-m comment`, before any `-j`/`-g` word, is followed by `--comment TEXT`, as kube-proxy
/// writes every comment: that option is the first of the first comment match, read from the
/// words without walking the matches (this runs for every Service chain). `None` for any
/// other shape, which the caller reads through the matches.
fn first_comment_as_written<'a>(rule: RuleRef<'_, 'a>) -> Option<&'a str> {
    let words = rule.tokens();
    let words: &[Token] = &words;
    let at = words
        .iter()
        .take_while(|t| t.kind() != TokenKind::Target)
        .position(|t| t.kind() == TokenKind::Module && word_bytes(rule, t) == b"comment")?;
    match words.get(at + 1..at + 3)? {
        [option, text]
            if option.kind() == TokenKind::Option
                && !option.is_basic()
                && text.kind() == TokenKind::Arg
                && word_bytes(rule, option) == b"--comment" =>
        {
            Some(rule.token_text(text))
        }
        _ => None,
    }
}

/// A kube-proxy comment's Service name and role, from the `--comment` value as written.
fn comment_service_name(raw: &str) -> Option<(Cow<'_, str>, CommentRole)> {
    match names::quoted_phrase_comment(raw) {
        Some(answer) => answer.map(|(name, role)| (Cow::Borrowed(name), role)),
        None => comment_service_name_in_full(raw),
    }
}

/// [`comment_service_name`] of any quoting, without its one-pass reading of kube-proxy's usual
/// `"NAME PHRASE"` (which a test pins against this).
fn comment_service_name_in_full(raw: &str) -> Option<(Cow<'_, str>, CommentRole)> {
    // kube-proxy's comments are one quoted text without escapes: borrow it rather than go
    // through `unquote`'s character-wise checks (this runs for every kube-proxy chain).
    let inner = raw
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .filter(|t| memchr::memchr2(b'"', b'\\', t.as_bytes()).is_none());
    if let Some(text) = inner {
        return service_comment(text).map(|(name, role)| (Cow::Borrowed(name), role));
    }
    match unquote(raw) {
        Cow::Borrowed(text) => {
            service_comment(text).map(|(name, role)| (Cow::Borrowed(name), role))
        }
        Cow::Owned(text) => {
            service_comment(&text).map(|(name, role)| (Cow::Owned(name.to_string()), role))
        }
    }
}

/// [`comment_service_name`] of a comment that is exactly `"NAME PHRASE"`, with `name` a
/// Service port name read before (the Service's, from another of its rules) and one of
/// kube-proxy's fixed phrases: told by comparing bytes, without checking the name's bytes again
/// (a dispatch rule's comment repeats its Service chain's). `None` for any other comment, which
/// the caller reads in full. (Pinned by a test against [`comment_service_name`].)
fn comment_naming<'a>(raw: &'a str, name: &str) -> Option<(Cow<'a, str>, CommentRole)> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    let phrase = inner.strip_prefix(name)?.strip_prefix(' ')?;
    let role = names::phrase_role(phrase)?;
    Some((Cow::Borrowed(&inner[..name.len()]), role))
}

/// A balanced jump's `-m statistic --probability` and whether it is a session-affinity rule
/// (`-m recent --rcheck`), read in one pass over its matches.
fn jump_balance(rule: RuleRef<'_, '_>) -> (Option<f64>, bool) {
    let words = rule.tokens();
    match *words {
        // The jumps kube-proxy writes: `-m statistic --mode random --probability P -j CHAIN`,
        // read from their words, and the last endpoint's `-j CHAIN`, which has no match.
        [module, mode, random, option, value, jump]
            if module.kind() == TokenKind::Module
                && [mode, option]
                    .iter()
                    .all(|o| o.kind() == TokenKind::Option && !o.is_basic())
                && [random, value].iter().all(|a| a.kind() == TokenKind::Arg)
                && jump.kind() == TokenKind::Target
                && word_bytes(rule, &module) == b"statistic"
                && word_bytes(rule, &mode) == b"--mode"
                && word_bytes(rule, &option) == b"--probability" =>
        {
            (parse_probability(rule.token_text(&value)), false)
        }
        [jump] if jump.kind() == TokenKind::Target => (None, false),
        _ => jump_balance_of_matches(rule),
    }
}

/// [`jump_balance`] of any rule, through its matches.
fn jump_balance_of_matches(rule: RuleRef<'_, '_>) -> (Option<f64>, bool) {
    let mut probability = None;
    let mut seen_probability = false;
    let mut affinity = false;
    for m in rule.matches() {
        match m.module() {
            Some("statistic") if !seen_probability => {
                if let Some(o) = m.options().find(|o| o.name() == "--probability") {
                    seen_probability = true;
                    probability = parse_probability(o.args().next().unwrap_or(""));
                }
            }
            Some("recent") if !affinity => {
                affinity = m.options().any(|o| o.name() == "--rcheck");
            }
            _ => {}
        }
    }
    (probability, affinity)
}

/// A `--probability` value as `str::parse::<f64>` reads it. kube-proxy writes `0.` and ten
/// digits, read here as digits / 10^n: both are exact in an f64 up to 15 digits, and one IEEE
/// division is rounded correctly, as `parse` is, so the result is the same (this runs once per
/// endpoint jump). Any other form goes to `parse`.
fn parse_probability(text: &str) -> Option<f64> {
    if let Some(digits) = text.strip_prefix("0.")
        && (1..=15).contains(&digits.len())
    {
        // The digits checked and summed in one pass.
        let mut mantissa: u64 = 0;
        for b in digits.bytes() {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return text.parse().ok();
            }
            mantissa = mantissa * 10 + u64::from(digit);
        }
        return Some(mantissa as f64 / POWERS_OF_TEN[digits.len()]);
    }
    text.parse().ok()
}

/// 10^0 to 10^15, each exact in an f64.
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// What a dispatch rule says, read in one walk over its matches: its comment's Service name
/// and the fields of its [`ServiceAddress`]. Each is the first option of its kind, as
/// [`rule_service_name`] and [`address`] read them one by one (pinned by a test).
struct DispatchFacts<'a> {
    named: Option<(Cow<'a, str>, CommentRole)>,
    address: Option<IpNet>,
    protocol: Option<&'a str>,
    port: Option<PortRange>,
    /// RL409's port: the first `--dport` or `--destination-port` of any match, unless negated.
    key_port: Option<&'a str>,
    /// RL409's "matches only the key" (read over kube-proxy's shape only).
    only_key: bool,
}

impl<'a> DispatchFacts<'a> {
    #[cfg(test)]
    fn read(rule: RuleRef<'_, 'a>) -> DispatchFacts<'a> {
        Self::read_shaped(rule, None, dispatch_shape_tokens(rule))
    }

    /// [`read`](Self::read) over `shaped`, the rule's words when it has kube-proxy's shape
    /// (`None`: through the walk over its matches), of a rule of a Service port named `known`
    /// already: its comment, when it is that name and one of kube-proxy's phrases, is read
    /// without checking the name again ([`comment_naming`]).
    fn read_shaped(
        rule: RuleRef<'_, 'a>,
        known: Option<&str>,
        shaped: Option<[Token; 11]>,
    ) -> DispatchFacts<'a> {
        let mut comment = None;
        let mut destination = None;
        let mut protocol = None;
        let mut ports = None;
        // RL409's port (`--dport` in any match) and whether the rule matches only its key, as
        // `read_dispatch_key` reads them over kube-proxy's shape, where each match has one
        // option (so a match's module is known when it is its option's); told apart by the
        // same comparisons that pick the slots.
        let mut key_port = None;
        let mut only_key = true;
        // An option by its module's and its own name's bytes; its argument is sliced only for
        // a slot still empty.
        let mut take =
            |module: Option<&[u8]>, name: &[u8], negated: bool, arg: &dyn Fn() -> &'a str| {
                let slot = match module {
                    None => match name {
                        b"-d" | b"--destination" => {
                            only_key &= !negated;
                            &mut destination
                        }
                        b"-p" | b"--protocol" => {
                            only_key &= !negated;
                            &mut protocol
                        }
                        b"--dport" | b"--destination-port" => {
                            only_key &= !negated;
                            &mut key_port
                        }
                        _ => {
                            only_key = false;
                            return;
                        }
                    },
                    Some(module) => {
                        let in_comment = module == b"comment";
                        match name {
                            b"--comment" if in_comment => &mut comment,
                            b"--dport" | b"--destination-port" => {
                                only_key &= in_comment
                                    || (!negated && matches!(module, b"tcp" | b"udp" | b"sctp"));
                                if key_port.is_none() || ports.is_none() {
                                    let text = Some((negated, arg()));
                                    key_port = key_port.or(text);
                                    ports = ports.or(text);
                                }
                                return;
                            }
                            b"--dports" | b"--destination-ports" | b"--ports" => {
                                only_key &= in_comment;
                                &mut ports
                            }
                            _ => {
                                only_key &= in_comment;
                                return;
                            }
                        }
                    }
                };
                if slot.is_none() {
                    *slot = Some((negated, arg()));
                }
            };
        // kube-proxy's shape: the words compared as bytes, without slicing every name as text
        // (the test's `dispatch_shape_options` gives the same options).
        match shaped {
            Some([d, d_arg, p, p_arg, m3, o3, a3, m4, o4, a4, _]) => {
                for (module, option, arg) in [
                    (None, d, d_arg),
                    (None, p, p_arg),
                    (Some(m3), o3, a3),
                    (Some(m4), o4, a4),
                ] {
                    take(
                        module.map(|m| word_bytes(rule, &m)),
                        word_bytes(rule, &option),
                        option.negated(),
                        &|| rule.token_text(&arg),
                    );
                }
            }
            None => word_options(rule).for_each(|o| {
                take(
                    o.module.map(str::as_bytes),
                    o.name.as_bytes(),
                    o.negated,
                    &|| o.arg,
                )
            }),
        }
        DispatchFacts {
            named: comment.and_then(|(_, raw)| {
                known
                    .and_then(|name| comment_naming(raw, name))
                    .or_else(|| comment_service_name(raw))
            }),
            // As `RuleRef::destination`: an unreadable first `-d` is no address.
            address: destination
                .filter(|&(negated, _)| !negated)
                .and_then(|(_, text)| rulelint_parser::views::parse_address(text).ok()),
            protocol: protocol
                .filter(|&(negated, _)| !negated)
                .map(|(_, text)| text),
            // As `RuleRef::destination_ports`: one port or range, every part readable.
            port: ports
                .filter(|&(negated, _)| !negated)
                .and_then(|(_, text)| single_port(text)),
            key_port: key_port
                .filter(|&(negated, _)| !negated)
                .map(|(_, text)| text),
            only_key,
        }
    }

    /// RL409's [`read_dispatch_key`] of a rule of kube-proxy's shape read by
    /// [`read_shaped`](Self::read_shaped) (its first `-d` is [`DispatchFacts::address`]).
    fn dispatch_key(&self) -> dispatch_key::KeyRead {
        let key = (|| {
            let protocol = dispatch_key::protocol_number(self.protocol?)?;
            Some((self.address?, protocol, port_range(self.key_port?)?))
        })();
        (key, self.only_key)
    }

    fn address(&self, kind: AddressKind, rule: RuleId) -> ServiceAddress<'a> {
        ServiceAddress {
            kind,
            address: self.address,
            protocol: self.protocol,
            port: self.port,
            rule,
        }
    }
}

/// One option of a rule as the walk over its matches gives it: the module of its match (`None`
/// for a basic option), its name and negation, and its first argument (`""` when none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct WordOption<'a> {
    pub(crate) module: Option<&'a str>,
    pub(crate) name: &'a str,
    pub(crate) negated: bool,
    pub(crate) arg: &'a str,
}

/// Every option of a rule, match by match ([`RuleRef::matches`], then each match's options).
pub(crate) fn word_options<'r, 'a>(
    rule: RuleRef<'r, 'a>,
) -> impl Iterator<Item = WordOption<'a>> + 'r {
    rule.matches().flat_map(|m| {
        let module = m.module();
        m.options().map(move |o| WordOption {
            module,
            name: o.name(),
            negated: o.negated(),
            arg: o.args().next().unwrap_or(""),
        })
    })
}

/// The eleven words of a rule written as kube-proxy writes its dispatch rules,
/// `-d A -p P -m comment --comment C -m P --dport N -j T` (two basic options, then two matches
/// of one option each, every option with one argument, then the target), unread: a caller that
/// needs only some of their texts slices only those, and reads the options the walk over the
/// matches ([`word_options`]) gives, without that walk (the model, RL409 and RL413 read every
/// dispatch rule so; pinned by a test). `None` for any other shape, which the caller walks.
/// Inlined: a call copies the eleven words out, which cost the other readers more than the
/// split saved.
#[inline(always)]
pub(crate) fn dispatch_shape_tokens(rule: RuleRef<'_, '_>) -> Option<[Token; 11]> {
    use TokenKind::{Arg, Module, Option as Opt, Target};
    let words = rule.tokens();
    let [d, d_arg, p, p_arg, m3, o3, a3, m4, o4, a4, jump] = *words else {
        return None;
    };
    let shape = [d, d_arg, p, p_arg, m3, o3, a3, m4, o4, a4, jump];
    // A basic option after `-m NAME` would end that match: then the walk reads it apart.
    if shape.map(|t| t.kind())
        != [
            Opt, Arg, Opt, Arg, Module, Opt, Arg, Module, Opt, Arg, Target,
        ]
        || o3.is_basic()
        || o4.is_basic()
        || !is_rule_target(rule, &jump)
    {
        return None;
    }
    Some(shape)
}

/// A port or range as [`PortRange::parse`] reads it; kube-proxy's one decimal port is read
/// without its splits (this runs for every dispatch rule).
pub(crate) fn port_range(text: &str) -> Option<PortRange> {
    if (1..=5).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()) {
        let value = text.bytes().fold(0u32, |v, b| v * 10 + u32::from(b - b'0'));
        return u16::try_from(value).ok().map(|port| PortRange {
            first: port,
            last: port,
        });
    }
    PortRange::parse(text)
}

/// A `--dport`-style value that is one port or range (a list of one), as `destination_ports`
/// with a single value reads it; a list of several, or any unreadable part, is none.
fn single_port(text: &str) -> Option<PortRange> {
    let mut parts = text.split(',');
    let first = port_range(parts.next()?)?;
    // `destination_ports` gives none when any part is unreadable, and more than one is no port.
    match parts.next() {
        None => Some(first),
        Some(_) => None,
    }
}

fn address<'a>(rule: RuleRef<'_, 'a>, kind: AddressKind) -> ServiceAddress<'a> {
    ServiceAddress {
        kind,
        address: rule.destination().filter(|d| !d.negated).map(|d| d.value),
        protocol: rule.protocol().filter(|p| !p.negated).map(|p| p.value),
        port: rule
            .destination_ports()
            .filter(|p| !p.negated && p.value.len() == 1)
            .map(|p| p.value[0]),
        rule: rule.id,
    }
}

#[cfg(test)]
mod tests;
