//! Nodes in kube-proxy's IPVS mode in the node diff: their Service-level facts come from the
//! IPVS state (virtual servers as Service addresses, real servers as endpoints with their
//! weights as shares, persistence as ClientIP affinity), in the backend-neutral form iptables
//! and nftables nodes give, so a stale or weight-0 real server, or a missing virtual server,
//! shows as it would between two iptables nodes.
//!
//! IPVS keeps no Service names: a Service port is known by its cluster IP, port and protocol
//! (`10.96.0.10:53/udp`). Where IPVS nodes are compared with nodes that name their Services,
//! `ServiceKeys` gives the IPVS Service ports those names, found from the other nodes'
//! cluster-IP address facts. The iptables part of an IPVS node is another mode's: its chains are compared with
//! other IPVS nodes' only ([`Scope::Ipvs`]).

use super::facts::{Fact, STATUS_DISPATCHED, STATUS_REJECTED, Scope, SubjectOf};
use super::{
    IpvsRead, Node, NodeBackend, NodeInput, ServiceEntry, declared_name, declared_name_in_text,
};
use crate::kube::AddressKind;
use crate::kube::catalog::{Catalog, CatalogAddress, CatalogService};
use rulelint_ipvs::Ipvs;
use rulelint_parser::Severity;
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Adds a file's IPVS state to its node: the backend, the Service ports of its virtual
/// servers, the readers' errors and a `# node:` name written beside them.
pub(super) fn add_ipvs<'a>(node: &mut Node<'a>, input: &'a NodeInput<'a>, ipvs: &'a IpvsRead<'a>) {
    let iptables = !input.iptables.has_no_content();
    node.backend = if iptables {
        NodeBackend::IptablesIpvs
    } else {
        NodeBackend::Ipvs
    };
    if !iptables {
        // "No iptables content" is no error in a file of IPVS outputs.
        node.parse_errors = node.parse_errors.saturating_sub(
            input
                .iptables
                .diagnostics
                .iter()
                .filter(|d| {
                    d.severity == Severity::Error
                        && d.code == rulelint_parser::codes::NO_CONTENT.code
                })
                .count(),
        );
    }
    node.parse_errors += ipvs.errors;
    if declared_name(node.set).is_none()
        && let Some(name) = declared_name_in_text(input.text)
    {
        node.name = name.to_string();
    }
    match &ipvs.services {
        Some(services) => node.ipvs_services = services,
        // `ipvsadm -L` prints names where it resolves them and `*:?` where they do not fit:
        // its virtual servers are no Service addresses to compare.
        None => node.services_unknown = true,
    }
}

/// The per-node note of a node whose ipvsadm listing was read without `-n`.
pub(crate) const NAMES_RESOLVED: &str = "IPVS listing without -n (`ipvsadm -L`): addresses unknown, Service comparison skipped for this node (collect `ipvsadm -Ln`)";

/// The Service ports of an IPVS state as the diff compares them: keyed by cluster IP, port
/// and protocol; endpoints by `address:port`; persistence as affinity on every endpoint.
pub fn service_entries<'a>(text: &str, ipvs: Ipvs<'a>) -> Vec<ServiceEntry<'a>> {
    let mut services = Catalog::from_ipvs(text, &ipvs, None).services;
    // The state is read: freed before the entries are made (its text is all they borrow).
    drop(ipvs);
    let mut entries = Vec::with_capacity(services.len());
    let mut spelled = String::new();
    // Taken from the back, the catalogue's list given back as it empties (halving): both
    // lists whole side by side were the peak of a large IPVS node's diff.
    while let Some(service) = services.pop() {
        entries.push(service_entry(service, &mut spelled));
        if services.len() <= services.capacity() / 2 {
            services.shrink_to_fit();
        }
    }
    entries.reverse();
    entries
}

/// A Service port of the catalogue as the diff compares it; `spelled` is a buffer.
fn service_entry<'a>(mut service: CatalogService<'a>, spelled: &mut String) -> ServiceEntry<'a> {
    service.name = Some(Cow::Owned(service_key(&service)));
    for e in service
        .endpoints
        .iter_mut()
        .chain(service.local_endpoints.iter_mut())
    {
        // One spelling on every backend (`[fd00::1]:80`), whatever ipvsadm printed;
        // a copy only where it differs (ipvsadm -n prints IPv4 that way already).
        if let Some(d) = e.destination.as_deref()
            && let Ok(socket) = d.parse::<SocketAddr>()
        {
            spelled.clear();
            push_socket(spelled, socket);
            if spelled != d {
                e.destination = Some(Cow::Owned(spelled.clone()));
            }
        }
    }
    if service.affinity.is_some() {
        // iptables shows ClientIP affinity as a check per endpoint: say the same.
        let checks: Vec<_> = service
            .endpoints
            .iter()
            .map(|e| {
                let mut check = e.clone();
                check.affinity_check = true;
                check.share = None;
                check
            })
            .collect();
        service.endpoints.extend(checks);
    }
    // A virtual server whose real servers all have weight 0 takes no new connections;
    // a Local group apart from its cluster IP serves only this node's endpoints (none
    // on a node without one, by design), and its Service is dispatched by the cluster IP.
    let apart_local = service.external_local
        && !service
            .addresses
            .iter()
            .any(|a| a.kind == AddressKind::ClusterIp);
    let serving = apart_local
        || service
            .endpoints
            .iter()
            .chain(&service.local_endpoints)
            .any(|e| !e.affinity_check && e.share.is_none_or(|s| s > 0.0));
    ServiceEntry {
        status: if serving {
            STATUS_DISPATCHED
        } else {
            STATUS_REJECTED
        },
        service,
    }
}

/// The key of an IPVS Service port: its cluster IP, port and protocol; without a cluster IP,
/// its first address (node ports as `*:PORT/PROTO`, the same on every node).
fn service_key(service: &CatalogService<'_>) -> String {
    let address = service
        .addresses
        .iter()
        .find(|a| a.kind == AddressKind::ClusterIp)
        .or_else(|| service.addresses.first());
    match address {
        Some(a) => address_key(a),
        None => "an unnamed Service".to_string(),
    }
}

fn address_key(a: &CatalogAddress<'_>) -> String {
    key_text(
        a.kind,
        a.address.map(|n| n.addr()),
        a.protocol.unwrap_or("?"),
        a.port,
    )
}

/// `10.96.0.10:53/udp`, `[fd00::a]:53/udp`; a node port `*:30080/tcp` (each node serves it on
/// its own addresses).
fn key_text(
    kind: AddressKind,
    address: Option<IpAddr>,
    protocol: &str,
    port: Option<u16>,
) -> String {
    let mut key = String::with_capacity(24);
    match address {
        Some(IpAddr::V4(v4)) if kind != AddressKind::NodePort => {
            push_ipv4(&mut key, v4);
            key.push(':');
        }
        Some(IpAddr::V6(v6)) if kind != AddressKind::NodePort => {
            let _ = write!(key, "[{v6}]:");
        }
        _ => key.push_str("*:"),
    }
    match port {
        Some(p) => key.push_str(itoa::Buffer::new().format(p)),
        None => key.push('?'),
    }
    key.push('/');
    key.push_str(protocol);
    key
}

/// Appends an IPv4 address as `Display` writes it (`10.96.0.1`), without `fmt`'s padding
/// machinery: a key or summary line per virtual server made formatting a fifth of the work.
pub(crate) fn push_ipv4(out: &mut String, address: Ipv4Addr) {
    let mut digits = itoa::Buffer::new();
    for (i, octet) in address.octets().into_iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(digits.format(octet));
    }
}

/// Appends a socket address as `Display` writes it (`10.244.0.4:80`, `[fd00::4]:80`).
fn push_socket(out: &mut String, socket: SocketAddr) {
    match socket {
        SocketAddr::V4(v4) => {
            push_ipv4(out, *v4.ip());
            out.push(':');
            out.push_str(itoa::Buffer::new().format(v4.port()));
        }
        SocketAddr::V6(v6) => {
            let _ = write!(out, "{v6}");
        }
    }
}

/// Whether a Service port's key is an IPVS one ([`key_text`]): no other node named it.
pub(super) fn is_ipvs_key(key: &str) -> bool {
    let Some((address, protocol)) = key.rsplit_once('/') else {
        return false;
    };
    matches!(protocol, "tcp" | "udp" | "sctp" | "?")
        && (address.parse::<SocketAddr>().is_ok() || address.starts_with("*:"))
}

/// Moves an IPVS node's iptables chain facts into their own scope: IPVS mode writes other
/// chains than iptables mode, by design.
pub(super) fn rescope(facts: &mut [Fact<'_>]) {
    for f in facts {
        match &mut f.subject {
            SubjectOf::HookJump { scope, .. }
            | SubjectOf::Chain { scope, .. }
            | SubjectOf::Policy { scope, .. }
            | SubjectOf::ChainRules { scope, .. }
                if *scope == Scope::Iptables =>
            {
                *scope = Scope::Ipvs;
            }
            _ => {}
        }
    }
}

/// How a comparison with IPVS nodes reads Service-level subjects (ids of a group's tables).
pub(super) struct ServiceKeys {
    /// An IPVS key's name on the other nodes, or the key of the Service port it joins.
    renamed: FxHashMap<u32, u32>,
    /// Keys of split-off groups that joined another Service port: that port's cluster IP
    /// tells its status and endpoints (a Local group on a node without a local endpoint has
    /// no real servers, yet its Service is dispatched; a cluster-IP virtual server that lost
    /// a real server must not be hidden by its node port's).
    joined: FxHashSet<u32>,
    /// Some compared node is not in IPVS mode.
    mixed: bool,
}

impl ServiceKeys {
    /// From the subjects of all nodes (the addresses among them are read). An IPVS Service port takes the name another node gives
    /// its cluster IP, port and protocol; a Service port that IPVS split off (the addresses of
    /// an `externalTrafficPolicy: Local` Service without a local endpoint have no real
    /// servers, so no group to join) joins the Service port another node lists that address
    /// under. A key that would go two ways keeps its own. `id_of` finds a name in the group's
    /// table.
    pub(super) fn new<'g>(
        subjects: &[SubjectOf<u32>],
        text: impl Fn(u32) -> &'g str,
        id_of: impl Fn(&str) -> Option<u32>,
        mixed: bool,
    ) -> ServiceKeys {
        let addresses = || {
            subjects.iter().filter_map(|s| match *s {
                SubjectOf::Address {
                    service,
                    kind,
                    address,
                    protocol: Some(protocol),
                    port,
                } => {
                    let key = key_text(kind, address.map(|n| n.addr()), text(protocol), port);
                    Some((service, kind, id_of(&key)?))
                }
                _ => None,
            })
        };
        let mut renamed: FxHashMap<u32, Option<u32>> = FxHashMap::default();
        // `None`: sent to two keys, so kept as it is.
        fn rename(renamed: &mut FxHashMap<u32, Option<u32>>, from: u32, to: u32) {
            if from != to {
                renamed
                    .entry(from)
                    .and_modify(|k| {
                        if *k != Some(to) {
                            *k = None;
                        }
                    })
                    .or_insert(Some(to));
            }
        }
        // An IPVS node's cluster-IP key takes the name other nodes give that address.
        for (service, kind, key) in addresses() {
            if kind == AddressKind::ClusterIp {
                rename(&mut renamed, key, service);
            }
        }
        let named: FxHashMap<u32, u32> = renamed
            .iter()
            .filter_map(|(&key, &name)| Some((key, name?)))
            .collect();
        // A group IPVS state leaves apart from its cluster IP (a Local group: its real servers
        // are this node's endpoints only, or none; a Cluster one whose real servers several
        // cluster IPs share) joins the Service port another node lists its address under:
        // which Service owns a node port or external address is one fact for the whole
        // cluster, so one node's knowledge serves all. Its local endpoints join too; its
        // status and endpoints are the cluster IP's (see `joined`).
        let mut split_off: FxHashSet<u32> = FxHashSet::default();
        for (service, kind, key) in addresses() {
            if kind != AddressKind::ClusterIp {
                let into = named.get(&service).copied().unwrap_or(service);
                if into != key && !named.contains_key(&key) {
                    split_off.insert(key);
                }
                rename(&mut renamed, key, into);
            }
        }
        let renamed: FxHashMap<u32, u32> = renamed
            .into_iter()
            .filter_map(|(name, key)| Some((name, key?)))
            .collect();
        split_off.retain(|key| renamed.contains_key(key));
        ServiceKeys {
            renamed,
            joined: split_off,
            mixed,
        }
    }

    /// The subject as compared; `None` for what IPVS has no counterpart of (the REJECT and
    /// DROP rules of Services without endpoints, when other modes are compared).
    pub(super) fn read(&self, mut s: SubjectOf<u32>) -> Option<SubjectOf<u32>> {
        if self.mixed
            && matches!(
                s,
                SubjectOf::NoEndpointsReject { .. } | SubjectOf::NoLocalEndpointsDrop { .. }
            )
        {
            return None;
        }
        if let SubjectOf::Service { service }
        | SubjectOf::Endpoint { service, .. }
        | SubjectOf::Weight { service, .. } = s
            && self.joined.contains(&service)
        {
            return None;
        }
        // Node ports are served on each node's own addresses in IPVS mode.
        if let SubjectOf::Address {
            kind: AddressKind::NodePort,
            address,
            ..
        } = &mut s
        {
            *address = None;
        }
        if let Some(service) = s.service_mut()
            && let Some(&key) = self.renamed.get(service)
        {
            *service = key;
        }
        Some(s)
    }
}
