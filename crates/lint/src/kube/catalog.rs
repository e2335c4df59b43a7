//! The Service catalogue: what a node's Service proxy was told, in the terms a user thinks in
//! (Services by `namespace/name:port`, their addresses, affinity, source ranges, traffic
//! policies and endpoints), the same whether it was read from iptables ([`Catalog::from_iptables`])
//! or from nftables ([`Catalog::from_nft`]). Every fact keeps where it was written ([`Origin`]),
//! so a report can point at it.
//!
//! The chain names are kept too: they are what a user greps for, and kube-proxy's two backends
//! name the same four chains of a Service port the same way (`KUBE-SVC-`/`service-`,
//! `KUBE-SVL-`/`local-`, `KUBE-EXT-`/`external-`, `KUBE-FW-`/`firewall-`).

use super::{AddressKind, Generation, KubeModel, Layout, ProxyMode, Service};
use crate::nft::kube::{NftGeneration, NftKubeModel, NftMode};
use ipnet::IpNet;
use rulelint_parser::views::Mark;
use rulelint_parser::{ChainGraph, ChainId, LineIndex, RuleId, Ruleset, Span, TableKind};
use std::borrow::Cow;

/// Where a fact was written: a byte span into the dump and its first line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The rule, map element or set that states the fact.
    pub span: Span,
    /// The 1-based line of the span's start.
    pub line: u32,
}

impl Origin {
    pub(crate) fn new(lines: &LineIndex, span: Span) -> Origin {
        Origin {
            span,
            line: lines.line(span.start),
        }
    }
}

/// Which packet filter the facts were read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `iptables-save` text (iptables-legacy or iptables-nft).
    Iptables,
    /// `nft list ruleset` text.
    Nftables,
    /// kube-proxy's IPVS state: `ipvsadm -Ln`, `ipset`, `ip addr` ([`Catalog::from_ipvs`]).
    Ipvs,
}

/// The addresses NodePorts are accepted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodePortAddresses {
    /// Not shown by the dump (no NodePort dispatch rule).
    Unknown,
    /// Every local address (`--dst-type LOCAL`, `fib daddr type local`).
    AllLocal,
    /// These addresses only (`--nodeport-addresses`: `-d IP`, the `nodeport-ips` set).
    Listed(Vec<IpNet>),
}

/// The node-level facts.
#[derive(Clone, Debug)]
pub struct NodeFacts {
    /// Where they were read from.
    pub backend: Backend,
    /// `iptables`, `ipvs`, `userspace`, `kube-router`, `nftables`, `iptables-nft` or `none`.
    pub proxy_mode: &'static str,
    /// The layout generation, kebab-case (`modern`, `pre-dnat-filter`, ...).
    pub generation: &'static str,
    /// The mode and generation for humans.
    pub description: &'static str,
    /// The mark that asks for masquerading (`0x4000/0x4000`).
    pub masquerade_mark: Option<Mark>,
    /// Where NodePorts are accepted.
    pub node_port_addresses: NodePortAddresses,
    /// iptables large-cluster mode (over 1,000 endpoints, or no endpoint comments).
    pub large_cluster: bool,
    /// The iptables layout facts that have no nftables counterpart (`KUBE-MARK-DROP`,
    /// `KUBE-PROXY-FIREWALL`, nfacct, IPVS state); `None` for nftables.
    pub iptables: Option<Layout>,
}

/// One way into a Service port.
#[derive(Clone, Debug)]
pub struct CatalogAddress<'a> {
    /// Cluster IP, external IP, load-balancer IP or node port. nftables writes external and
    /// load-balancer IPs alike: an address there is a load-balancer IP only when it has source
    /// ranges (`firewall-ips`), an external IP otherwise.
    pub kind: AddressKind,
    /// The destination (none for node ports).
    pub address: Option<IpNet>,
    /// `tcp`, `udp`, `sctp`.
    pub protocol: Option<&'a str>,
    /// The port (the first of a range).
    pub port: Option<u16>,
    /// The dispatch rule or map element (for a Service without endpoints, its reject).
    pub origin: Origin,
}

/// One endpoint entry of a Service port's cluster or local chain.
#[derive(Clone, Debug)]
pub struct CatalogEndpoint<'a> {
    /// The endpoint chain (`KUBE-SEP-*`, `endpoint-*`); `None` when it is not declared.
    pub chain: Option<&'a str>,
    /// The DNAT destination as written (`10.180.0.1:80`).
    pub destination: Option<Cow<'a, str>>,
    /// As written: iptables' `--probability` (conditional on the rules before it; `None` for
    /// the last), nftables' `1/N` of `numgen random mod N`.
    pub probability: Option<f64>,
    /// The share of new connections it gets, whatever the backend (`None` for affinity checks).
    pub share: Option<f64>,
    /// The session-affinity check for this endpoint (`-m recent --rcheck`, `ip saddr
    /// @affinity-...`), which comes before the balanced pick.
    pub affinity_check: bool,
    /// Its chain marks hairpin traffic (the endpoint talking to itself) for masquerading.
    pub hairpin_masquerade: bool,
    /// The jump or verdict-map element.
    pub origin: Origin,
}

/// ClientIP session affinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Affinity {
    /// `--seconds`, the affinity set's `timeout`.
    pub timeout_seconds: Option<u64>,
    /// The rule or set that shows it.
    pub origin: Origin,
}

/// A load balancer's allowed source range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceRange {
    /// The network.
    pub network: IpNet,
    /// The firewall rule.
    pub origin: Origin,
}

/// The chains of one Service port, by kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChainNames<'a> {
    /// `KUBE-SVC-*`, `service-*`.
    pub cluster: Option<&'a str>,
    /// `KUBE-SVL-*`/`KUBE-XLB-*`, `local-*`.
    pub local: Option<&'a str>,
    /// `KUBE-EXT-*`, `external-*`.
    pub external: Option<&'a str>,
    /// `KUBE-FW-*`, `firewall-*`.
    pub firewall: Option<&'a str>,
}

/// One Service port.
#[derive(Clone, Debug, Default)]
pub struct CatalogService<'a> {
    /// `namespace/name:port` (`namespace/name` for an unnamed port); `None` when nothing
    /// names it.
    pub name: Option<Cow<'a, str>>,
    /// The protocol (from the chain name, or the first address).
    pub protocol: Option<&'a str>,
    /// The hash its chains share.
    pub hash: Option<&'a str>,
    /// Its chains.
    pub chains: ChainNames<'a>,
    /// Ways in.
    pub addresses: Vec<CatalogAddress<'a>>,
    /// The entries of the cluster chain, in order (affinity checks included).
    pub endpoints: Vec<CatalogEndpoint<'a>>,
    /// The entries of the local chain (Local traffic policy), in order.
    pub local_endpoints: Vec<CatalogEndpoint<'a>>,
    /// ClientIP session affinity.
    pub affinity: Option<Affinity>,
    /// `loadBalancerSourceRanges`.
    pub source_ranges: Vec<SourceRange>,
    /// `internalTrafficPolicy: Local`: the cluster IP leads to the local chain.
    pub internal_local: bool,
    /// `externalTrafficPolicy: Local`: external traffic is kept to local endpoints.
    pub external_local: bool,
    /// The rejects of a Service without endpoints ("has no endpoints", `goto reject-chain`).
    pub rejects_without_endpoints: Vec<Origin>,
    /// The drops of a Local-policy Service without endpoints on this node.
    pub drops_without_local_endpoints: Vec<Origin>,
}

impl CatalogService<'_> {
    /// `(namespace, name, port)` split out of [`name`](Self::name).
    pub fn parts(&self) -> Option<(&str, &str, Option<&str>)> {
        let name = self.name.as_deref()?;
        let (namespace, rest) = name.split_once('/')?;
        Some(match rest.split_once(':') {
            Some((service, port)) => (namespace, service, Some(port)),
            None => (namespace, rest, None),
        })
    }
}

/// Everything a node's Service proxy was told.
#[derive(Clone, Debug)]
pub struct Catalog<'a> {
    /// The node-level facts.
    pub node: NodeFacts,
    /// Every Service port, in the order the dump first shows it.
    pub services: Vec<CatalogService<'a>>,
    /// Endpoint chains no Service port leads to.
    pub unused_endpoint_chains: Vec<&'a str>,
    /// Service chains nothing leads to: what kube-proxy leaves of a deleted Service until its
    /// next sync (nftables; iptables keeps such chains as unnamed Services, as before).
    pub stale_chains: Vec<&'a str>,
}

/// The kebab-case name `rulelint services` has always printed for an iptables proxy mode.
fn proxy_mode_name(mode: ProxyMode) -> &'static str {
    match mode {
        ProxyMode::Iptables => "iptables",
        ProxyMode::Ipvs => "ipvs",
        ProxyMode::Userspace => "userspace",
        ProxyMode::KubeRouter => "kube-router",
        ProxyMode::None => "none",
    }
}

fn generation_name(generation: Generation) -> &'static str {
    match generation {
        Generation::None => "none",
        Generation::Legacy => "legacy",
        Generation::Modern => "modern",
    }
}

/// The share of each entry of an iptables probability ladder: `p_i` times the chance that no
/// earlier rule matched; the last rule (no probability) takes the rest.
fn ladder_shares(probabilities: &[Option<f64>]) -> Vec<f64> {
    let mut rest = 1.0;
    probabilities
        .iter()
        .map(|p| {
            let share = rest * p.unwrap_or(1.0).clamp(0.0, 1.0);
            rest -= share;
            share
        })
        .collect()
}

impl<'a> Catalog<'a> {
    /// The catalogue of an iptables dump, from its [`KubeModel`]; the model is read as it is.
    pub fn from_iptables(
        set: &Ruleset<'a>,
        graph: &ChainGraph,
        model: &KubeModel<'a>,
    ) -> Catalog<'a> {
        let lines = LineIndex::new(set.source());
        let origin = |rule: RuleId| Origin::new(&lines, set.rule(rule).get().span);
        let chain_name = |c: Option<ChainId>| c.map(|c| set.chain(c).name());
        let hairpin = |chain: Option<ChainId>| {
            chain.is_some_and(|c| {
                // The target first: it is cheaper to read than the source address.
                set.chain(c).rules().any(|r| {
                    r.target().is_some_and(|t| t.name() == "KUBE-MARK-MASQ")
                        && r.source().is_some_and(|s| !s.negated)
                })
            })
        };
        let endpoints = |jumps: &[super::EndpointJump]| -> Vec<CatalogEndpoint<'a>> {
            let balanced: Vec<Option<f64>> =
                Service::balanced(jumps).map(|j| j.probability).collect();
            let mut shares = ladder_shares(&balanced).into_iter();
            jumps
                .iter()
                .map(|j| CatalogEndpoint {
                    chain: chain_name(j.chain),
                    destination: model
                        .endpoint(j)
                        .and_then(|e| e.destination)
                        .map(Cow::Borrowed),
                    probability: j.probability,
                    share: if j.affinity { None } else { shares.next() },
                    affinity_check: j.affinity,
                    hairpin_masquerade: hairpin(j.chain),
                    origin: origin(j.rule),
                })
                .collect()
        };
        let services = model
            .services
            .iter()
            .map(|s| {
                let addresses: Vec<CatalogAddress<'a>> = s
                    .addresses
                    .iter()
                    .map(|a| CatalogAddress {
                        kind: a.kind,
                        address: a.address,
                        protocol: a.protocol,
                        port: a.port.map(|p| p.first),
                        origin: origin(a.rule),
                    })
                    .collect();
                let affinity = s.endpoints.iter().find(|j| j.affinity).map(|j| Affinity {
                    timeout_seconds: set
                        .rule(j.rule)
                        .option(Some("recent"), &["--seconds"])
                        .and_then(|o| o.value.parse().ok()),
                    origin: origin(j.rule),
                });
                let source_ranges = s
                    .chains
                    .firewall
                    .map(|fw| {
                        set.chain(fw)
                            .rules()
                            .filter(|r| {
                                r.target().is_some_and(|t| {
                                    s.chains
                                        .iter()
                                        .any(|(_, c)| set.chain(c).name() == t.name())
                                })
                            })
                            .filter_map(|r| {
                                let source = r.source().filter(|s| !s.negated)?;
                                Some(SourceRange {
                                    network: source.value,
                                    origin: origin(r.id),
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let leads_to_local = |from: Option<ChainId>| {
                    from.zip(s.chains.local).is_some_and(|(from, local)| {
                        graph.jumps_into(local).any(|(c, _)| c == from)
                    })
                };
                let local_name = chain_name(s.chains.local);
                let internal_local = local_name.is_some()
                    && s.addresses.iter().any(|a| {
                        a.kind == AddressKind::ClusterIp
                            && set.rule(a.rule).target().map(|t| t.name()) == local_name
                    });
                CatalogService {
                    name: s.name.clone(),
                    protocol: s.addresses.iter().find_map(|a| a.protocol),
                    hash: s.hash,
                    chains: ChainNames {
                        cluster: chain_name(s.chains.cluster),
                        local: local_name,
                        external: chain_name(s.chains.external),
                        firewall: chain_name(s.chains.firewall),
                    },
                    addresses,
                    endpoints: endpoints(&s.endpoints),
                    local_endpoints: endpoints(&s.local_endpoints),
                    affinity,
                    source_ranges,
                    internal_local,
                    external_local: leads_to_local(s.chains.external)
                        || leads_to_local(s.chains.firewall)
                        || !s.no_local_endpoints_rules.is_empty(),
                    rejects_without_endpoints: s
                        .no_endpoints_rules
                        .iter()
                        .map(|&r| origin(r))
                        .collect(),
                    drops_without_local_endpoints: s
                        .no_local_endpoints_rules
                        .iter()
                        .map(|&r| origin(r))
                        .collect(),
                }
            })
            .collect();
        let mut used = vec![false; model.endpoints.len()];
        for s in &model.services {
            for j in s.endpoints.iter().chain(&s.local_endpoints) {
                if let Some(i) = j.chain.and_then(|c| model.endpoint_index(c)) {
                    used[i] = true;
                }
            }
        }
        let layout = model.layout;
        Catalog {
            node: NodeFacts {
                backend: Backend::Iptables,
                proxy_mode: proxy_mode_name(layout.mode),
                generation: generation_name(layout.generation),
                description: layout.describe(),
                masquerade_mark: layout.masquerade_mark,
                node_port_addresses: iptables_node_port_addresses(set),
                large_cluster: layout.large_cluster,
                iptables: Some(layout),
            },
            services,
            unused_endpoint_chains: model
                .endpoints
                .iter()
                .zip(&used)
                .filter(|(_, used)| !**used)
                .map(|(e, _)| set.chain(e.chain).name())
                .collect(),
            stale_chains: Vec::new(),
        }
    }

    /// The catalogue of an nftables dump, from its [`NftKubeModel`].
    pub fn from_nft(model: &NftKubeModel<'a>) -> Catalog<'a> {
        let (proxy_mode, description) = match model.mode {
            NftMode::Nftables => ("nftables", model.generation.describe()),
            NftMode::IptablesNft => ("iptables-nft", NftMode::IptablesNft.describe()),
            NftMode::None => ("none", NftMode::None.describe()),
        };
        Catalog {
            node: NodeFacts {
                backend: Backend::Nftables,
                proxy_mode,
                generation: match model.mode {
                    NftMode::Nftables => model.generation.name(),
                    _ => NftGeneration::None.name(),
                },
                description,
                masquerade_mark: model.masquerade_mark,
                node_port_addresses: model.node_port_addresses.clone(),
                large_cluster: false,
                iptables: None,
            },
            services: model.services.clone(),
            unused_endpoint_chains: model.unused_endpoint_chains.clone(),
            stale_chains: model.stale_chains.clone(),
        }
    }
}

/// nat `KUBE-SERVICES`' jumps to `KUBE-NODEPORTS`: `--dst-type LOCAL` (every local address) or
/// one rule per `--nodeport-addresses` address.
fn iptables_node_port_addresses(set: &Ruleset<'_>) -> NodePortAddresses {
    let Some(services) = set
        .iter_tables()
        .filter(|t| t.kind() == TableKind::Nat && !t.get().superseded)
        .last()
        .and_then(|nat| nat.chain("KUBE-SERVICES"))
    else {
        return NodePortAddresses::Unknown;
    };
    let mut listed = Vec::new();
    for rule in services.rules() {
        if rule.target().is_none_or(|t| t.name() != "KUBE-NODEPORTS") {
            continue;
        }
        if rule
            .dst_type()
            .is_some_and(|t| !t.negated && t.value == "LOCAL")
        {
            return NodePortAddresses::AllLocal;
        }
        if let Some(d) = rule.destination().filter(|d| !d.negated) {
            listed.push(d.value);
        }
    }
    if listed.is_empty() {
        NodePortAddresses::Unknown
    } else {
        NodePortAddresses::Listed(listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_shares_split_evenly() {
        let shares = ladder_shares(&[Some(1.0 / 3.0), Some(0.5), None]);
        for s in shares {
            assert!((s - 1.0 / 3.0).abs() < 1e-9, "{s}");
        }
        assert_eq!(ladder_shares(&[None]), vec![1.0]);
    }

    #[test]
    fn parts_split_the_service_port_name() {
        let s = CatalogService {
            name: Some(Cow::Borrowed("ns1/svc1:p80")),
            ..CatalogService::default()
        };
        assert_eq!(s.parts(), Some(("ns1", "svc1", Some("p80"))));
        let unnamed_port = CatalogService {
            name: Some(Cow::Borrowed("default/kubernetes")),
            ..CatalogService::default()
        };
        assert_eq!(unnamed_port.parts(), Some(("default", "kubernetes", None)));
    }
}
