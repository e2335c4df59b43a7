//! The Service catalogue of a node in IPVS mode ([`Catalog::from_ipvs`]): one Service port per
//! cluster-IP virtual server, joined by the node ports, external and load-balancer IPs that
//! share its protocol and real servers (when no other cluster IP shares them), each address's
//! kind from kube-proxy's ipsets,
//! endpoints from the real servers with their share of the weight. IPVS keeps no Service names:
//! the ports are unnamed.

use super::catalog::{
    Affinity, Backend, Catalog, CatalogAddress, CatalogEndpoint, CatalogService, NodeFacts,
    NodePortAddresses, Origin,
};
use super::{AddressKind, Layout};
use crate::ipvs::context::IpvsContext;
use crate::ipvs::sets::KubeSet;
use ipnet::IpNet;
use rulelint_ipvs::{Ipvs, Protocol, VirtualServer};
use rulelint_parser::LineIndex;
use rustc_hash::{FxHashMap, FxHashSet};
use std::borrow::Cow;
use std::net::IpAddr;

impl<'a> Catalog<'a> {
    /// The catalogue of a node's IPVS state (spans into `text`), with the layout of its
    /// iptables part when the file has one.
    pub fn from_ipvs(text: &str, ipvs: &Ipvs<'a>, layout: Option<Layout>) -> Catalog<'a> {
        let cx = IpvsContext::new(text, ipvs, None);
        let lines = LineIndex::new(text);
        let kind = |vs: &VirtualServer<'_>| -> AddressKind {
            let Some(key) = vs.key() else {
                return AddressKind::ClusterIp;
            };
            let in_any = |kinds: &[KubeSet]| kinds.iter().any(|&k| cx.in_set(k, key) == Some(true));
            if in_any(&[KubeSet::ClusterIp]) {
                AddressKind::ClusterIp
            } else if in_any(&[
                KubeSet::LoadBalancer,
                KubeSet::LoadBalancerLocal,
                KubeSet::LoadBalancerFw,
            ]) {
                AddressKind::LoadBalancerIp
            } else if in_any(&[KubeSet::ExternalIp, KubeSet::ExternalIpLocal]) {
                AddressKind::ExternalIp
            } else if cx.is_node_port(vs) {
                AddressKind::NodePort
            } else if let Some(bound) = &cx.kube_ipvs0 {
                // What kube-proxy binds to kube-ipvs0 is a Service address (a cluster IP is the
                // likeliest); node ports are served on the node's own addresses.
                if bound.contains(&key.0) {
                    AddressKind::ClusterIp
                } else {
                    AddressKind::NodePort
                }
            } else if (30000..=32767).contains(&key.2) {
                // No ipset, no kube-ipvs0: the default node-port range is the only hint.
                AddressKind::NodePort
            } else {
                AddressKind::ClusterIp
            }
        };
        // Service ports. Every cluster-IP virtual server is one (when the ipsets or kube-ipvs0
        // say which addresses are cluster IPs): two Services may share their
        // endpoints (the same pods and target port), so equal real servers do not make one
        // Service. Another virtual server (node port, external or load-balancer IP) joins the
        // cluster IP with its protocol and real servers when exactly one has them; with none,
        // it joins the first such virtual server without a cluster IP; with several it is
        // ambiguous and stays a Service port of its own.
        let kinds: Vec<AddressKind> = ipvs.virtual_servers.iter().map(&kind).collect();
        let reals: Vec<Vec<&str>> = ipvs
            .virtual_servers
            .iter()
            .map(|vs| {
                let mut real: Vec<&str> = vs.real_servers.iter().map(|r| r.target.text).collect();
                real.sort_unstable();
                real
            })
            .collect();
        let protocol_of = |i: usize| ipvs.virtual_servers[i].protocol.map(|p| p.as_str());
        // Without ipsets or kube-ipvs0 an address's kind is a guess from the node-port range
        // (a load-balancer IP on port 443 reads as a cluster IP): group by real servers alone.
        let kinds_read = ipvs.outputs.ipset.is_some() || cx.kube_ipvs0.is_some();
        let mut cluster_ips: FxHashMap<(Option<&str>, &[&str]), Vec<usize>> = FxHashMap::default();
        for (i, real) in reals.iter().enumerate() {
            if kinds_read && kinds[i] == AddressKind::ClusterIp && !real.is_empty() {
                cluster_ips
                    .entry((protocol_of(i), real))
                    .or_default()
                    .push(i);
            }
        }
        let mut others: FxHashMap<(Option<&str>, &[&str]), usize> = FxHashMap::default();
        // An `externalTrafficPolicy: Local` virtual server (by the `-LOCAL` sets) holds only
        // this node's endpoints: equal real servers say nothing about its Service (another
        // Service's endpoints may be exactly this node's share), so it joins only the virtual
        // servers of its own address (a node port on each node address); see
        // `join_local_groups` for the cluster IP it may still join.
        let local_vs: Vec<bool> = ipvs
            .virtual_servers
            .iter()
            .zip(&kinds)
            .map(|(vs, &kind)| {
                kinds_read
                    && kind != AddressKind::ClusterIp
                    && vs
                        .key()
                        .and_then(|k| cx.local_policy(k, kind == AddressKind::NodePort))
                        == Some(true)
            })
            .collect();
        // (protocol, address (none for a node port: one per node address), port).
        type AddressKey<'s> = (Option<&'s str>, Option<IpAddr>, Option<u16>);
        let mut local_addresses: FxHashMap<AddressKey<'_>, usize> = FxHashMap::default();
        // The virtual server whose Service port each one is part of.
        let leader: Vec<usize> = (0..reals.len())
            .map(|i| {
                if local_vs[i] {
                    let vs = &ipvs.virtual_servers[i];
                    let address = (kinds[i] != AddressKind::NodePort)
                        .then_some(vs.target.address)
                        .flatten();
                    return *local_addresses
                        .entry((protocol_of(i), address, vs.target.port))
                        .or_insert(i);
                }
                if reals[i].is_empty() || (kinds[i] == AddressKind::ClusterIp && kinds_read) {
                    return i;
                }
                let key = (protocol_of(i), reals[i].as_slice());
                match cluster_ips.get(&key).map(Vec::as_slice) {
                    Some([only]) => *only,
                    Some(_) => i,
                    None => *others.entry(key).or_insert(i),
                }
            })
            .collect();
        drop(cluster_ips);
        drop(others);
        drop(local_addresses);
        // A list per virtual server: freed before the Service ports are built beside the state.
        drop(reals);
        let mut service_of: Vec<Option<usize>> = vec![None; kinds.len()];
        // At most one a virtual server, sized once (doubling left a third of it unused).
        let mut services: Vec<CatalogService<'a>> = Vec::with_capacity(ipvs.virtual_servers.len());
        let mut node_port_addresses: Vec<IpNet> = Vec::new();
        for (i, vs) in ipvs.virtual_servers.iter().enumerate() {
            let protocol = vs.protocol.map(|p| p.as_str());
            let address_kind = kinds[i];
            let address = CatalogAddress {
                kind: address_kind,
                address: vs.target.address.map(IpNet::from),
                protocol,
                port: vs.target.port,
                origin: Origin::new(&lines, vs.span),
            };
            if address_kind == AddressKind::NodePort
                && let Some(a) = vs.target.address
                && !node_port_addresses.contains(&IpNet::from(a))
            {
                node_port_addresses.push(IpNet::from(a));
            }
            let index = service_of[leader[i]];
            match index {
                Some(i) => services[i].addresses.push(address),
                None => {
                    let total: i64 = vs.real_servers.iter().filter_map(|r| r.weight).sum();
                    let endpoints = vs
                        .real_servers
                        .iter()
                        .map(|r| CatalogEndpoint {
                            chain: None,
                            destination: Some(Cow::Borrowed(r.target.text)),
                            probability: None,
                            // All at weight 0: none takes new connections.
                            share: r.weight.map(|w| {
                                if total > 0 {
                                    w as f64 / total as f64
                                } else {
                                    0.0
                                }
                            }),
                            affinity_check: false,
                            hairpin_masquerade: match (r.target.address, vs.protocol, r.target.port)
                            {
                                (Some(a), Some(p), Some(port)) => cx
                                    .complete_set(KubeSet::LoopBack, a.is_ipv6())
                                    .is_some_and(|s| s.loopback.contains(&((a, p, port), a))),
                                _ => false,
                            },
                            origin: Origin::new(&lines, r.span),
                        })
                        .collect();
                    service_of[leader[i]] = Some(services.len());
                    services.push(CatalogService {
                        protocol,
                        addresses: vec![address],
                        endpoints,
                        affinity: vs.persistent_seconds.map(|t| Affinity {
                            timeout_seconds: Some(u64::from(t)),
                            origin: Origin::new(&lines, vs.span),
                        }),
                        ..CatalogService::default()
                    });
                }
            }
        }
        if kinds_read {
            let local: Vec<Option<bool>> = services.iter().map(|s| local_policy(&cx, s)).collect();
            join_local_groups(&mut services, &local);
        }
        services.shrink_to_fit();
        let generation = layout.map_or("none", |l| match l.generation {
            super::Generation::None => "none",
            super::Generation::Legacy => "legacy",
            super::Generation::Modern => "modern",
        });
        Catalog {
            node: NodeFacts {
                backend: Backend::Ipvs,
                proxy_mode: "ipvs",
                generation,
                description: if ipvs.outputs.ipset.is_some() || cx.kube_ipvs0.is_some() {
                    "kube-proxy IPVS mode (ipvsadm virtual servers)"
                } else {
                    "kube-proxy IPVS mode (ipvsadm virtual servers; without ipset or kube-ipvs0 output, node ports are told by the default range 30000-32767)"
                },
                masquerade_mark: layout.and_then(|l| l.masquerade_mark),
                node_port_addresses: if node_port_addresses.is_empty() {
                    NodePortAddresses::Unknown
                } else {
                    NodePortAddresses::Listed(node_port_addresses)
                },
                large_cluster: false,
                iptables: layout,
            },
            services,
            unused_endpoint_chains: Vec::new(),
            stale_chains: Vec::new(),
        }
    }
}

/// Whether a group's addresses (other than cluster IPs) have `externalTrafficPolicy: Local`
/// by kube-proxy's `-LOCAL` sets; `None` when the sets were not read.
fn local_policy(cx: &IpvsContext<'_, '_>, service: &CatalogService<'_>) -> Option<bool> {
    let mut all_known = true;
    for a in service
        .addresses
        .iter()
        .filter(|a| a.kind != AddressKind::ClusterIp)
    {
        let protocol = a.protocol.and_then(Protocol::from_lowercase);
        let (Some(net), Some(protocol), Some(port)) = (a.address, protocol, a.port) else {
            all_known = false;
            continue;
        };
        match cx.local_policy(
            (net.addr(), protocol, port),
            a.kind == AddressKind::NodePort,
        ) {
            Some(true) => return Some(true),
            Some(false) => {}
            None => all_known = false,
        }
    }
    all_known.then_some(false)
}

/// A Service port with `externalTrafficPolicy: Local` is two groups of virtual servers in
/// IPVS: its cluster IP with every endpoint, its node ports (and external addresses) with the
/// node's own. Such a group without a cluster IP whose real servers are a subset of exactly
/// one cluster-IP group's of its protocol joins it, its real servers as local endpoints (as
/// iptables' `KUBE-SVL-*` chain shows them). Ambiguous groups stay apart, and so do groups
/// the `-LOCAL` sets say are not Local (a real server missing there is drift); an ambiguous
/// group the `-LOCAL` sets say is Local keeps its real servers as local endpoints.
fn join_local_groups(services: &mut Vec<CatalogService<'_>>, local: &[Option<bool>]) {
    let has_cluster_ip =
        |s: &CatalogService<'_>| s.addresses.iter().any(|a| a.kind == AddressKind::ClusterIp);
    // Cluster-IP groups by (protocol, real server), so each group looks up its candidates.
    let mut by_endpoint: FxHashMap<(Option<&str>, &str), Vec<usize>> = FxHashMap::default();
    for (j, c) in services
        .iter()
        .enumerate()
        .filter(|(_, c)| has_cluster_ip(c))
    {
        for d in c.endpoints.iter().filter_map(|e| e.destination.as_deref()) {
            by_endpoint.entry((c.protocol, d)).or_default().push(j);
        }
    }
    let mut moves: Vec<(usize, usize)> = Vec::new();
    for (i, s) in services.iter().enumerate() {
        if has_cluster_ip(s) || local.get(i) == Some(&Some(false)) {
            continue;
        }
        let mut local = s.endpoints.iter().filter_map(|e| e.destination.as_deref());
        let Some(first) = local.next() else { continue };
        let Some(candidates) = by_endpoint.get(&(s.protocol, first)) else {
            continue;
        };
        let mut fitting = candidates.iter().copied().filter(|&j| {
            local.clone().all(|d| {
                by_endpoint
                    .get(&(s.protocol, d))
                    .is_some_and(|js| js.contains(&j))
            })
        });
        if let (Some(j), None) = (fitting.next(), fitting.next()) {
            moves.push((i, j));
        }
    }
    drop(by_endpoint);
    // A Local group that stays apart (its real servers fit several cluster IPs: Services that
    // share pods) still holds this node's own endpoints only, which differ between healthy
    // nodes: say so, as for a group that joined.
    let moved: FxHashSet<usize> = moves.iter().map(|&(from, _)| from).collect();
    for (i, s) in services.iter_mut().enumerate() {
        if local.get(i) == Some(&Some(true)) && !moved.contains(&i) && !has_cluster_ip(s) {
            let endpoints = std::mem::take(&mut s.endpoints);
            s.local_endpoints.extend(endpoints);
            s.external_local = true;
        }
    }
    // Indexes stay put until every group has moved (removing one at a time shifted the
    // targets after it: a group joined the Service port next to its own); later groups
    // first, as before.
    for &(from, into) in moves.iter().rev() {
        let group = std::mem::take(&mut services[from]);
        let target = &mut services[into];
        target.addresses.extend(group.addresses);
        target.local_endpoints.extend(group.endpoints);
        target.external_local = true;
    }
    let mut index = 0;
    services.retain(|_| {
        index += 1;
        !moved.contains(&(index - 1))
    });
}
