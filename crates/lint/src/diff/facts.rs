//! What one node does, as facts that compare across nodes: each fact is a subject (a Service
//! port's endpoint, a hook jump, a chain's policy) with a value. Two nodes agree on a subject
//! when they hold it with the same value. Names, not positions, identify subjects, so the order
//! of chains and of dispatch rules never shows.

use super::Node;
use super::node_local::{Expected, has_node_local_rules, is_per_pod_chain};
use crate::kube::catalog::CatalogEndpoint;
use crate::kube::names::{ServiceChainKind, is_endpoint_chain, service_chain};
use crate::kube::{AddressKind, EndpointJump, Service};
use ipnet::IpNet;
use rulelint_parser::{ChainId, RuleId, TableKind};

/// What a fact is about, its names borrowed from a node or a [`Group`](super::Group)'s table.
pub type Subject<'r> = SubjectOf<&'r str>;

/// What a fact is about. The order of the variants is the order of the report: Kubernetes
/// first, then chains. `S` is a name: borrowed text, or an id into a table of names (a
/// summary, a [`Group`](super::Group)).
// The fields say what they hold: a Service port's key, a table, chain or address.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SubjectOf<S> {
    /// A Service port is programmed. Value: its status, [`STATUS_DISPATCHED`] and the others.
    Service { service: S },
    /// A Service port has a chain of a kind (`KUBE-EXT-*`, `KUBE-FW-*`, ...).
    ServiceChain { service: S, chain: S },
    /// A way into a Service port.
    Address {
        service: S,
        kind: AddressKind,
        address: Option<IpNet>,
        protocol: Option<S>,
        port: Option<u16>,
    },
    /// filter rejects a Service port for having no endpoints.
    NoEndpointsReject { service: S },
    /// A Service port's chain sends traffic to an endpoint. Value: session affinity.
    Endpoint {
        service: S,
        chain: S,
        destination: S,
    },
    /// The share of new connections an endpoint gets. Value: the weight in millionths.
    Weight { service: S, destination: S },
    /// A Local-policy Service port has an endpoint on this node.
    LocalEndpoint { service: S, destination: S },
    /// A Local-policy Service port drops external traffic: no endpoint on this node.
    NoLocalEndpointsDrop { service: S },
    /// A built-in chain jumps to a chain.
    HookJump {
        table: S,
        hook: S,
        target: S,
        scope: Scope,
    },
    /// A chain exists (per-Service chains are facts of their Service instead).
    Chain { table: S, chain: S, scope: Scope },
    /// A chain's policy. Value: the policy.
    Policy { table: S, chain: S, scope: Scope },
    /// A chain's rules, compared as a whole. Value: a digest of them. Only for groups of nodes,
    /// where no rule-level diff is printed.
    ChainRules { table: S, chain: S, scope: Scope },
}

/// Which nodes a chain-level fact is compared among: chains are compared only between nodes
/// of one backend (and, for nftables, of one layout generation), since the same Services are
/// written as different chains by each. Last in its subjects, so it never changes the order
/// of an iptables-only report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// iptables-save chains.
    Iptables,
    /// nftables chains of a kube-proxy layout generation ([`NftGeneration::name`]).
    ///
    /// [`NftGeneration::name`]: crate::nft::kube::NftGeneration::name
    Nft {
        /// The generation's kebab-case name.
        generation: &'static str,
    },
    /// iptables-save chains of a node in kube-proxy's IPVS mode, which writes other chains than
    /// iptables mode.
    Ipvs,
}

/// A Service port's status: something jumps to its chains.
pub const STATUS_DISPATCHED: &str = "dispatched";
/// A Service port's status: it has chains, but nothing jumps to them.
pub const STATUS_ORPHANED: &str = "orphaned";
/// A Service port's status: it has no chains, only filter's "has no endpoints" REJECT.
pub const STATUS_REJECTED: &str = "rejected";

/// The value a node holds a subject with, its text borrowed.
pub type Value<'r> = ValueOf<&'r str>;

/// The value a node holds a subject with; `S` is text or an id into a table of names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueOf<S> {
    /// The subject is there; nothing more to compare.
    Present,
    /// A yes/no property: an endpoint's session affinity.
    Flag(bool),
    /// A weight in millionths.
    Weight(u32),
    /// A policy, a Service port's status.
    Text(S),
    /// A digest of rules.
    Digest {
        /// Of the rules as written.
        exact: u64,
        /// Of the rules with every address blanked out.
        masked: u64,
    },
}

/// One fact of one node.
#[derive(Clone, Copy, Debug)]
pub struct Fact<'r> {
    /// What.
    pub subject: Subject<'r>,
    /// How.
    pub value: Value<'r>,
    /// The node, an index into the compared nodes.
    pub node: u32,
    /// The rule that shows it, for line numbers.
    pub rule: Option<RuleId>,
    /// The chain that shows it, when no single rule does.
    pub chain: Option<ChainId>,
    /// The line that shows it, when it was read without a rule or chain of the iptables dump
    /// (the Service catalogue, an nftables section), as a line of the node's file.
    pub line: Option<u32>,
    /// Set when a difference in this fact is expected between healthy nodes.
    pub expected: Option<Expected>,
}

impl<S> SubjectOf<S> {
    /// The Service port a Service-level subject is about; `None` for chain-level subjects.
    pub fn service_mut(&mut self) -> Option<&mut S> {
        match self {
            SubjectOf::Service { service }
            | SubjectOf::ServiceChain { service, .. }
            | SubjectOf::Address { service, .. }
            | SubjectOf::NoEndpointsReject { service }
            | SubjectOf::Endpoint { service, .. }
            | SubjectOf::Weight { service, .. }
            | SubjectOf::LocalEndpoint { service, .. }
            | SubjectOf::NoLocalEndpointsDrop { service } => Some(service),
            SubjectOf::HookJump { .. }
            | SubjectOf::Chain { .. }
            | SubjectOf::Policy { .. }
            | SubjectOf::ChainRules { .. } => None,
        }
    }

    /// The same subject with each name replaced by `f(name)`: to ids into a table and back.
    pub fn map<T>(self, mut f: impl FnMut(S) -> T) -> SubjectOf<T> {
        match self {
            SubjectOf::Service { service } => SubjectOf::Service {
                service: f(service),
            },
            SubjectOf::ServiceChain { service, chain } => SubjectOf::ServiceChain {
                service: f(service),
                chain: f(chain),
            },
            SubjectOf::Address {
                service,
                kind,
                address,
                protocol,
                port,
            } => SubjectOf::Address {
                service: f(service),
                kind,
                address,
                protocol: protocol.map(&mut f),
                port,
            },
            SubjectOf::NoEndpointsReject { service } => SubjectOf::NoEndpointsReject {
                service: f(service),
            },
            SubjectOf::Endpoint {
                service,
                chain,
                destination,
            } => SubjectOf::Endpoint {
                service: f(service),
                chain: f(chain),
                destination: f(destination),
            },
            SubjectOf::Weight {
                service,
                destination,
            } => SubjectOf::Weight {
                service: f(service),
                destination: f(destination),
            },
            SubjectOf::LocalEndpoint {
                service,
                destination,
            } => SubjectOf::LocalEndpoint {
                service: f(service),
                destination: f(destination),
            },
            SubjectOf::NoLocalEndpointsDrop { service } => SubjectOf::NoLocalEndpointsDrop {
                service: f(service),
            },
            SubjectOf::HookJump {
                table,
                hook,
                target,
                scope,
            } => SubjectOf::HookJump {
                table: f(table),
                hook: f(hook),
                target: f(target),
                scope,
            },
            SubjectOf::Chain {
                table,
                chain,
                scope,
            } => SubjectOf::Chain {
                table: f(table),
                chain: f(chain),
                scope,
            },
            SubjectOf::Policy {
                table,
                chain,
                scope,
            } => SubjectOf::Policy {
                table: f(table),
                chain: f(chain),
                scope,
            },
            SubjectOf::ChainRules {
                table,
                chain,
                scope,
            } => SubjectOf::ChainRules {
                table: f(table),
                chain: f(chain),
                scope,
            },
        }
    }
}

impl<S> ValueOf<S> {
    /// The same value with its text replaced by `f(text)`.
    pub fn map<T>(self, f: impl FnOnce(S) -> T) -> ValueOf<T> {
        match self {
            ValueOf::Present => ValueOf::Present,
            ValueOf::Flag(b) => ValueOf::Flag(b),
            ValueOf::Weight(w) => ValueOf::Weight(w),
            ValueOf::Text(t) => ValueOf::Text(f(t)),
            ValueOf::Digest { exact, masked } => ValueOf::Digest { exact, masked },
        }
    }
}

impl<S: Copy> SubjectOf<S> {
    /// Whether a node without the subject disagrees with one that has it. Values of a subject
    /// that only exists with something else (an endpoint's weight, a chain's policy) are
    /// compared only among the nodes that hold it; its absence is that other fact's difference.
    pub fn absence_counts(&self) -> bool {
        !matches!(
            self,
            SubjectOf::Weight { .. } | SubjectOf::Policy { .. } | SubjectOf::ChainRules { .. }
        )
    }

    /// The nodes a chain-level subject is compared among; `None` for Service-level subjects,
    /// which every node is compared on.
    pub fn scope(&self) -> Option<Scope> {
        match *self {
            SubjectOf::HookJump { scope, .. }
            | SubjectOf::Chain { scope, .. }
            | SubjectOf::Policy { scope, .. }
            | SubjectOf::ChainRules { scope, .. } => Some(scope),
            _ => None,
        }
    }

    /// The Service port the subject belongs to.
    pub fn service(&self) -> Option<S> {
        match *self {
            SubjectOf::Service { service }
            | SubjectOf::ServiceChain { service, .. }
            | SubjectOf::Address { service, .. }
            | SubjectOf::NoEndpointsReject { service }
            | SubjectOf::Endpoint { service, .. }
            | SubjectOf::Weight { service, .. }
            | SubjectOf::LocalEndpoint { service, .. }
            | SubjectOf::NoLocalEndpointsDrop { service } => Some(service),
            _ => None,
        }
    }
}

/// The name a Service port is known by across nodes: its comment name, else its hash (the same
/// on every node, since kube-proxy derives it from the name).
pub fn service_key<'r>(service: &'r Service<'_>) -> &'r str {
    service
        .name
        .as_deref()
        .or(service.hash)
        .unwrap_or("an unnamed Service")
}

/// How the facts of the compared nodes are read.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    /// Chain digests (groups, where no rule-level diff is printed).
    pub rule_digests: bool,
    /// Service-level facts from the backend-neutral catalogue (some node has nftables), not
    /// from the iptables model.
    pub by_catalog: bool,
    /// Every node has the same backends, so Service chains (named per backend) compare.
    pub one_backend: bool,
}

/// Where collected facts go: a list, or (through [`EachFact`]) a function that takes each as it
/// is found, so that a million chain facts need not be held at once.
pub(super) trait FactSink<'r> {
    /// Takes one fact.
    fn push(&mut self, fact: Fact<'r>);
}

impl<'r> FactSink<'r> for Vec<Fact<'r>> {
    fn push(&mut self, fact: Fact<'r>) {
        Vec::push(self, fact);
    }
}

/// A [`FactSink`] that hands each fact to a function.
pub(super) struct EachFact<F>(pub F);

impl<'r, F: FnMut(Fact<'r>)> FactSink<'r> for EachFact<F> {
    fn push(&mut self, fact: Fact<'r>) {
        (self.0)(fact);
    }
}

/// Collects the facts of one node, in no particular order.
pub fn collect<'r>(node: &'r Node<'_>, index: u32, reading: Reading, out: &mut Vec<Fact<'r>>) {
    if reading.by_catalog {
        collect_catalog(node.catalog_services(), index, reading.one_backend, out);
    } else {
        collect_iptables_services(node, index, out);
    }
    if node.backend.has_iptables() {
        collect_iptables_chains(node, index, reading.rule_digests, out);
    }
    if let Some(generation) = node.nft_generation {
        collect_nft_chains(node, index, generation, out);
    }
}

/// The Service-level facts of the iptables model: the report of iptables-only comparisons.
pub(super) fn collect_iptables_services<'r>(
    node: &'r Node<'_>,
    index: u32,
    out: &mut impl FactSink<'r>,
) {
    let set = node.set;
    let model = &node.model;
    let fact = |subject, value, rule, chain, expected| Fact {
        subject,
        value,
        node: index,
        rule,
        chain,
        line: None,
        expected,
    };

    for service in &model.services {
        let key = service_key(service);
        let first_chain = service.chains.iter().next().map(|(_, c)| c);
        let status = if first_chain.is_none() {
            STATUS_REJECTED
        } else if service.is_live(&node.graph) {
            STATUS_DISPATCHED
        } else {
            STATUS_ORPHANED
        };
        // A rejected Service has no chain; its REJECT rule is the line that shows it.
        let reject_rule = if first_chain.is_none() {
            service.no_endpoints_rules.first().copied()
        } else {
            None
        };
        out.push(fact(
            Subject::Service { service: key },
            Value::Text(status),
            reject_rule,
            first_chain,
            None,
        ));
        for (kind, chain) in service.chains.iter() {
            // kube-proxy writes a KUBE-SVL chain only on nodes with a local endpoint.
            let local = kind == ServiceChainKind::Local;
            out.push(fact(
                Subject::ServiceChain {
                    service: key,
                    chain: set.chain(chain).name(),
                },
                Value::Present,
                None,
                Some(chain),
                local.then_some(Expected::LocalEndpoints),
            ));
        }
        for address in &service.addresses {
            out.push(fact(
                Subject::Address {
                    service: key,
                    kind: address.kind,
                    address: address.address,
                    protocol: address.protocol,
                    port: address.port.map(|p| p.first),
                },
                Value::Present,
                Some(address.rule),
                None,
                None,
            ));
        }
        if let Some(&rule) = service.no_endpoints_rules.first() {
            out.push(fact(
                Subject::NoEndpointsReject { service: key },
                Value::Present,
                Some(rule),
                None,
                None,
            ));
        }
        if let Some(&rule) = service.no_local_endpoints_rules.first() {
            out.push(fact(
                Subject::NoLocalEndpointsDrop { service: key },
                Value::Present,
                Some(rule),
                None,
                Some(Expected::LocalEndpoints),
            ));
        }
        let destination = |jump: &EndpointJump| -> &'r str {
            model
                .endpoint(jump)
                .and_then(|e| e.destination)
                .or_else(|| jump.chain.map(|c| set.chain(c).name()))
                .unwrap_or("?")
        };
        // Gathered once: asking every endpoint about every other is quadratic in a Service's
        // endpoints (40k of them took 15 s).
        let affine: std::collections::HashSet<Option<ChainId>> = service
            .endpoints
            .iter()
            .filter(|j| j.affinity)
            .map(|j| j.chain)
            .collect();
        let mut remaining = 1.0_f64;
        for jump in Service::balanced(&service.endpoints) {
            let destination = destination(jump);
            let probability = jump.probability.unwrap_or(1.0).clamp(0.0, 1.0);
            let weight = remaining * probability;
            remaining -= weight;
            let affinity = affine.contains(&jump.chain);
            let chain = set.chain(set.rule(jump.rule).get().chain).name();
            out.push(fact(
                Subject::Endpoint {
                    service: key,
                    chain,
                    destination,
                },
                Value::Flag(affinity),
                Some(jump.rule),
                None,
                None,
            ));
            out.push(fact(
                Subject::Weight {
                    service: key,
                    destination,
                },
                Value::Weight((weight * 1e6).round() as u32),
                Some(jump.rule),
                None,
                None,
            ));
        }
        for jump in Service::balanced(&service.local_endpoints) {
            out.push(fact(
                Subject::LocalEndpoint {
                    service: key,
                    destination: destination(jump),
                },
                Value::Present,
                Some(jump.rule),
                None,
                Some(Expected::LocalEndpoints),
            ));
        }
    }
}

/// Chains, policies, hook jumps (and for groups chain digests) of the iptables dump.
pub(super) fn collect_iptables_chains<'r>(
    node: &'r Node<'_>,
    index: u32,
    rule_digests: bool,
    out: &mut impl FactSink<'r>,
) {
    let set = node.set;
    let model = &node.model;
    let fact = |subject, value, rule, chain, expected| Fact {
        subject,
        value,
        node: index,
        rule,
        chain,
        line: None,
        expected,
    };
    for table in set.iter_tables().filter(|t| !t.get().superseded) {
        let table_name = table.name();
        for chain in table.chains() {
            let c = chain.get();
            let name = chain.name();
            let belongs_to_service = model.service_of_chain(chain.id).is_some()
                || (is_endpoint_chain(name) && node.graph.jumps_into(chain.id).next().is_some());
            if c.builtin {
                if let Some(policy) = chain.policy() {
                    out.push(fact(
                        Subject::Policy {
                            table: table_name,
                            chain: name,
                            scope: Scope::Iptables,
                        },
                        Value::Text(policy),
                        None,
                        Some(chain.id),
                        None,
                    ));
                }
                for (target, jump) in node.graph.jumps_from(set, chain.id) {
                    let target_name = set.chain(target).name();
                    out.push(fact(
                        Subject::HookJump {
                            table: table_name,
                            hook: name,
                            target: target_name,
                            scope: Scope::Iptables,
                        },
                        Value::Present,
                        Some(jump.rule),
                        None,
                        is_per_pod_chain(target_name).then_some(Expected::NodeLocalChain),
                    ));
                }
            } else if !belongs_to_service {
                out.push(fact(
                    Subject::Chain {
                        table: table_name,
                        chain: name,
                        scope: Scope::Iptables,
                    },
                    Value::Present,
                    None,
                    Some(chain.id),
                    is_per_pod_chain(name).then_some(Expected::NodeLocalChain),
                ));
            }
            let per_service = service_chain(name).is_some() || is_endpoint_chain(name);
            if rule_digests && !per_service {
                let (exact, masked) = super::rules::digest(node, chain.id);
                out.push(fact(
                    Subject::ChainRules {
                        table: table_name,
                        chain: name,
                        scope: Scope::Iptables,
                    },
                    Value::Digest { exact, masked },
                    None,
                    Some(chain.id),
                    has_node_local_rules(name).then_some(Expected::NodeLocalChain),
                ));
            }
        }
    }
}

/// The table kind of a table name, for sorting output the way dumps list tables.
pub fn table_order(name: &str) -> TableKind {
    TableKind::from_name(name)
}

/// The kind of a service chain, for messages.
pub fn chain_kind_words(chain: &str) -> &'static str {
    match service_chain(chain) {
        Some((ServiceChainKind::Cluster, _)) => "cluster",
        Some((ServiceChainKind::Local, _)) => "local-endpoint",
        Some((ServiceChainKind::External, _)) => "external",
        Some((ServiceChainKind::Firewall, _)) => "load-balancer firewall",
        None => "service",
    }
}

/// The Service-level facts of the backend-neutral catalogue, for comparisons where some node
/// is in nftables mode. Endpoints are keyed by Service port and destination only (the chain
/// names differ by backend), weights are the share of new connections (an iptables
/// probability ladder and an nftables `numgen mod N` agree when the shares do), and
/// load-balancer IPs read as external IPs (nftables writes both alike, and tells them apart only
/// by source ranges).
pub(super) fn collect_catalog<'r, 'a: 'r>(
    entries: impl Iterator<Item = &'r super::ServiceEntry<'a>>,
    index: u32,
    one_backend: bool,
    out: &mut impl FactSink<'r>,
) {
    let fact = |subject, value, line: u32, expected| Fact {
        subject,
        value,
        node: index,
        rule: None,
        chain: None,
        line: Some(line),
        expected,
    };
    for entry in entries {
        let service = &entry.service;
        let Some(key) = service.name.as_deref().or(service.hash) else {
            continue;
        };
        let first_line = service
            .endpoints
            .first()
            .map(|e| e.origin.line)
            .or_else(|| service.addresses.first().map(|a| a.origin.line))
            .or_else(|| service.rejects_without_endpoints.first().map(|o| o.line));
        out.push(Fact {
            line: first_line,
            ..fact(
                Subject::Service { service: key },
                Value::Text(entry.status),
                0,
                None,
            )
        });
        if one_backend {
            let chains = &service.chains;
            for (chain, local) in [
                (chains.cluster, false),
                (chains.local, true),
                (chains.external, false),
                (chains.firewall, false),
            ] {
                let Some(chain) = chain else { continue };
                out.push(Fact {
                    line: None,
                    ..fact(
                        Subject::ServiceChain {
                            service: key,
                            chain,
                        },
                        Value::Present,
                        0,
                        local.then_some(Expected::LocalEndpoints),
                    )
                });
            }
        }
        for address in &service.addresses {
            let kind = if one_backend || address.kind != AddressKind::LoadBalancerIp {
                address.kind
            } else {
                AddressKind::ExternalIp
            };
            out.push(fact(
                Subject::Address {
                    service: key,
                    kind,
                    address: address.address,
                    protocol: address.protocol,
                    port: address.port,
                },
                Value::Present,
                address.origin.line,
                None,
            ));
        }
        if let Some(origin) = service.rejects_without_endpoints.first() {
            out.push(fact(
                Subject::NoEndpointsReject { service: key },
                Value::Present,
                origin.line,
                None,
            ));
        }
        if let Some(origin) = service.drops_without_local_endpoints.first() {
            out.push(fact(
                Subject::NoLocalEndpointsDrop { service: key },
                Value::Present,
                origin.line,
                Some(Expected::LocalEndpoints),
            ));
        }
        let destination = |e: &'r CatalogEndpoint<'_>| -> &'r str {
            e.destination.as_deref().or(e.chain).unwrap_or("?")
        };
        // Gathered once, as for an iptables node (quadratic otherwise).
        let affine: std::collections::HashSet<&str> = service
            .endpoints
            .iter()
            .filter(|e| e.affinity_check)
            .map(destination)
            .collect();
        for endpoint in service.endpoints.iter().filter(|e| !e.affinity_check) {
            let to = destination(endpoint);
            let affinity = affine.contains(to);
            out.push(fact(
                Subject::Endpoint {
                    service: key,
                    chain: "",
                    destination: to,
                },
                Value::Flag(affinity),
                endpoint.origin.line,
                None,
            ));
            if let Some(share) = endpoint.share {
                out.push(fact(
                    Subject::Weight {
                        service: key,
                        destination: to,
                    },
                    Value::Weight((share.clamp(0.0, 1.0) * 1e6).round() as u32),
                    endpoint.origin.line,
                    None,
                ));
            }
        }
        for endpoint in service.local_endpoints.iter().filter(|e| !e.affinity_check) {
            out.push(fact(
                Subject::LocalEndpoint {
                    service: key,
                    destination: destination(endpoint),
                },
                Value::Present,
                endpoint.origin.line,
                Some(Expected::LocalEndpoints),
            ));
        }
    }
}

/// How many facts [`collect_catalog`] finds in `entries` with `one_backend`, counted without
/// making them: a list of them is sized once (a doubled list of 200k facts held 15 MB unused).
pub(super) fn catalog_fact_count<'r, 'a: 'r>(
    entries: impl Iterator<Item = &'r super::ServiceEntry<'a>>,
    one_backend: bool,
) -> usize {
    entries
        .filter(|entry| entry.service.name.is_some() || entry.service.hash.is_some())
        .map(|entry| {
            let service = &entry.service;
            let chains = &service.chains;
            let service_chains = if one_backend {
                [
                    chains.cluster,
                    chains.local,
                    chains.external,
                    chains.firewall,
                ]
                .iter()
                .flatten()
                .count()
            } else {
                0
            };
            let endpoints: usize = service
                .endpoints
                .iter()
                .filter(|e| !e.affinity_check)
                .map(|e| 1 + usize::from(e.share.is_some()))
                .sum();
            let local_endpoints = service
                .local_endpoints
                .iter()
                .filter(|e| !e.affinity_check)
                .count();
            1 + service_chains
                + service.addresses.len()
                + usize::from(!service.rejects_without_endpoints.is_empty())
                + usize::from(!service.drops_without_local_endpoints.is_empty())
                + endpoints
                + local_endpoints
        })
        .sum()
}

/// The chains and base-chain policies of the nftables sections, compared only among nodes of
/// the same layout generation (a newer layout renames and moves chains by design).
pub(super) fn collect_nft_chains<'r>(
    node: &'r Node<'_>,
    index: u32,
    generation: &'static str,
    out: &mut impl FactSink<'r>,
) {
    let scope = Scope::Nft { generation };
    for chain in node.nft_chains.iter() {
        let fact = |subject, value| Fact {
            subject,
            value,
            node: index,
            rule: None,
            chain: None,
            line: Some(chain.line),
            expected: None,
        };
        if !chain.per_service {
            out.push(fact(
                Subject::Chain {
                    table: &chain.table,
                    chain: chain.name,
                    scope,
                },
                Value::Present,
            ));
        }
        if let Some(policy) = chain.policy {
            out.push(fact(
                Subject::Policy {
                    table: &chain.table,
                    chain: chain.name,
                    scope,
                },
                Value::Text(policy),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{catalog_fact_count, collect_catalog};
    use crate::diff::{Node, NodeInput};
    use rulelint_dumpgen::{NftForm, Shape, generate, generate_ipvs, generate_nft};

    /// The count that sizes a list of catalogue facts is the number `collect_catalog` finds,
    /// read either way, on every diff corpus node and on generated nodes of each backend.
    #[test]
    fn catalog_fact_count_is_what_collect_catalog_finds() {
        let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/diff");
        let mut texts: Vec<String> = Vec::new();
        for case in std::fs::read_dir(corpus).expect("corpus/diff") {
            let case = case.expect("a case").path();
            let Ok(files) = std::fs::read_dir(&case) else {
                continue;
            };
            for file in files {
                let path = file.expect("a file").path();
                if path.extension().is_some_and(|e| e == "txt" || e == "nft") {
                    texts.push(std::fs::read_to_string(&path).expect("a node"));
                }
            }
        }
        let shape = Shape::with_services(40);
        texts.push(generate(&shape));
        texts.push(generate_ipvs(&shape));
        texts.push(generate_nft(&shape, NftForm::List));
        let mut total = 0;
        for text in &texts {
            let input = NodeInput::read(text);
            let node = Node::from_input("node", &input).with_catalog();
            for one_backend in [true, false] {
                let mut facts = Vec::new();
                collect_catalog(node.catalog_services(), 0, one_backend, &mut facts);
                let counted = catalog_fact_count(node.catalog_services(), one_backend);
                assert_eq!(counted, facts.len());
                total += counted;
            }
        }
        assert!(total > 1000, "the nodes hold catalogue facts: {total}");
    }
}
