//! What an IPVS-mode lint sees: the IPVS state of one file (virtual servers, ipsets, interfaces,
//! spans into the file), its iptables part when it has one, and indices built once: the virtual
//! servers by key and address, each kube-proxy set's members, the `kube-ipvs0` addresses and
//! the node's pod networks.

use super::Needs;
use super::sets::{KubeSet, SERVICE_ADDRESS_SETS, kube_set};
use ipnet::IpNet;
use rulelint_ipvs::{IpSet, Ipvs, Protocol, VirtualServer};
use rulelint_parser::{Diagnostic, LineIndex, Parsed, TableKind};
use rustc_hash::{FxHashMap, FxHashSet};
use std::net::IpAddr;

/// The interfaces whose network is the node's pod network (the CNI bridge): endpoints in it are
/// on this node.
const POD_BRIDGES: &[&str] = &["cni0", "cbr0"];

/// `(address, protocol, port)`.
pub type Key = (IpAddr, Protocol, u16);

/// One kube-proxy set, indexed.
#[derive(Debug)]
pub struct IndexedSet<'r, 'a> {
    /// The set.
    pub set: &'r IpSet<'a>,
    /// Its kind.
    pub kind: KubeSet,
    /// The IPv6 one (`KUBE-6-`).
    pub ipv6: bool,
    /// For node-port sets, the protocol of its ports.
    pub protocol: Option<Protocol>,
    /// Its `ip,proto:port` members.
    pub keys: FxHashSet<Key>,
    /// Its addresses (first part of each member).
    pub addresses: FxHashSet<IpAddr>,
    /// Its bare ports (`bitmap:port`) and the ports of its `ip,proto:port` members.
    pub ports: FxHashSet<u16>,
    /// `ip,proto:port,ip` members as `(key, second address)`.
    pub loopback: FxHashSet<(Key, IpAddr)>,
}

/// A read-only view of a file's IPVS state for the lints.
pub struct IpvsContext<'r, 'a> {
    ipvs: &'r Ipvs<'a>,
    iptables: Option<&'r Parsed<'a>>,
    lines: LineIndex,
    /// Virtual servers by key.
    pub virtual_servers: FxHashMap<Key, usize>,
    /// Addresses of virtual servers.
    pub vs_addresses: FxHashSet<IpAddr>,
    /// Every real server `(address, protocol, port)`.
    pub real_servers: FxHashSet<Key>,
    /// kube-proxy's sets.
    pub sets: Vec<IndexedSet<'r, 'a>>,
    /// The addresses of `kube-ipvs0`, when `ip addr` showed it whole.
    pub kube_ipvs0: Option<FxHashSet<IpAddr>>,
    /// The pod networks of this node (`cni0`, `cbr0`), when `ip addr` showed them.
    pub pod_networks: Vec<IpNet>,
}

impl<'r, 'a> IpvsContext<'r, 'a> {
    /// A context over the IPVS state of a file (spans into `text`) and its iptables part.
    pub fn new(
        text: &'r str,
        ipvs: &'r Ipvs<'a>,
        iptables: Option<&'r Parsed<'a>>,
    ) -> IpvsContext<'r, 'a> {
        let mut virtual_servers = FxHashMap::default();
        let mut vs_addresses = FxHashSet::default();
        let mut real_servers = FxHashSet::default();
        for (i, vs) in ipvs.virtual_servers.iter().enumerate() {
            if let Some(key) = vs.key() {
                virtual_servers.entry(key).or_insert(i);
            }
            if let Some(a) = vs.target.address {
                vs_addresses.insert(a);
            }
            for rs in &vs.real_servers {
                if let (Some(a), Some(p), Some(port)) =
                    (rs.target.address, vs.protocol, rs.target.port)
                {
                    real_servers.insert((a, p, port));
                }
            }
        }
        let sets = ipvs
            .sets
            .iter()
            .filter_map(|set| {
                let (kind, ipv6, protocol) = kube_set(set.name)?;
                let mut s = IndexedSet {
                    set,
                    kind,
                    ipv6,
                    protocol: protocol.and_then(Protocol::from_lowercase),
                    keys: FxHashSet::default(),
                    addresses: FxHashSet::default(),
                    ports: FxHashSet::default(),
                    loopback: FxHashSet::default(),
                };
                for m in &set.members {
                    if let Some(port) = m.port {
                        s.ports.insert(port);
                    }
                    let Some(address) = m.address else { continue };
                    s.addresses.insert(address.addr());
                    if let (Some(p), Some(port)) = (m.protocol, m.port) {
                        s.keys.insert((address.addr(), p, port));
                        if let Some(other) = m.other {
                            s.loopback.insert(((address.addr(), p, port), other.addr()));
                        }
                    }
                }
                Some(s)
            })
            .collect();
        let kube_ipvs0 = ipvs
            .interface("kube-ipvs0")
            .filter(|i| i.complete)
            .map(|i| i.addresses.iter().map(|(n, _)| n.addr()).collect());
        let pod_networks = ipvs
            .interfaces
            .iter()
            .filter(|i| POD_BRIDGES.contains(&i.name))
            .flat_map(|i| i.addresses.iter().map(|(n, _)| n.trunc()))
            .filter(|n| n.prefix_len() < n.max_prefix_len())
            .collect();
        IpvsContext {
            ipvs,
            iptables,
            lines: LineIndex::new(text),
            virtual_servers,
            vs_addresses,
            real_servers,
            sets,
            kube_ipvs0,
            pod_networks,
        }
    }

    /// The IPVS state.
    pub fn ipvs(&self) -> &'r Ipvs<'a> {
        self.ipvs
    }

    /// The file's iptables part, when it has a table.
    pub fn iptables(&self) -> Option<&'r Parsed<'a>> {
        self.iptables
    }

    /// The 1-based line of a byte offset.
    pub fn line(&self, offset: u32) -> u32 {
        self.lines.line(offset)
    }

    /// Which of `needs` the file does not have, by name (`ipset save`, ...).
    pub fn missing(&self, needs: Needs) -> Vec<&'static str> {
        let o = &self.ipvs.outputs;
        let mut out = Vec::new();
        if needs.ipvsadm && (o.ipvsadm.is_none() || o.names_resolved.is_some()) {
            out.push(if o.ipvsadm.is_none() {
                "ipvsadm -Ln"
            } else {
                "ipvsadm -Ln (with -n)"
            });
        }
        if needs.ipset && o.ipset.is_none() {
            out.push("ipset save");
        }
        if needs.kube_ipvs0 && self.kube_ipvs0.is_none() {
            out.push("ip addr show kube-ipvs0");
        }
        if needs.pod_network && self.pod_networks.is_empty() {
            out.push("ip addr (the pod bridge cni0 or cbr0)");
        }
        if needs.iptables && self.nat_complete().is_none() {
            out.push("iptables-save (the nat table)");
        }
        out
    }

    /// The whole virtual server list is known by address: ipvsadm was read with `-n`.
    pub fn ipvsadm_numeric(&self) -> bool {
        self.ipvs.outputs.ipvsadm.is_some() && self.ipvs.outputs.names_resolved.is_none()
    }

    /// Every virtual and real server is known by address: ipvsadm was read with `-n` and its
    /// last line was not cut. Checks that conclude from a missing server need this.
    pub fn ipvsadm_whole(&self) -> bool {
        self.ipvsadm_numeric() && !self.ipvs.outputs.ipvsadm_cut
    }

    /// The complete kube-proxy set of this kind for an address's family.
    pub fn complete_set(&self, kind: KubeSet, ipv6: bool) -> Option<&IndexedSet<'r, 'a>> {
        self.sets
            .iter()
            .find(|s| s.kind == kind && s.ipv6 == ipv6 && s.set.complete)
    }

    /// Whether a key is in a kube-proxy set of this kind: `None` when no complete set of its
    /// family was read (a partial paste: unknown).
    pub fn in_set(&self, kind: KubeSet, key: Key) -> Option<bool> {
        let ipv6 = key.0.is_ipv6();
        let found = self
            .sets
            .iter()
            .filter(|s| s.kind == kind && s.ipv6 == ipv6)
            .any(|s| s.keys.contains(&key));
        if found {
            return Some(true);
        }
        self.complete_set(kind, ipv6).map(|_| false)
    }

    /// Whether a virtual server is a node port: its port is in a node-port set of its
    /// protocol (`KUBE-NODE-PORT-TCP`, `-LOCAL-`, `-SCTP-HASH`).
    pub fn is_node_port(&self, vs: &VirtualServer<'_>) -> bool {
        let (Some(p), Some(port)) = (vs.protocol, vs.target.port) else {
            return false;
        };
        self.sets.iter().any(|s| {
            matches!(s.kind, KubeSet::NodePort | KubeSet::NodePortLocal)
                && s.protocol == Some(p)
                && s.ports.contains(&port)
        })
    }

    /// Whether a Service address has `externalTrafficPolicy: Local` (its key in
    /// `KUBE-LOAD-BALANCER-LOCAL` or `KUBE-EXTERNAL-IP-LOCAL`, a node port's port in a
    /// `KUBE-NODE-PORT-LOCAL-*` set); `None` when the sets that would tell were not read.
    pub fn local_policy(&self, key: Key, node_port: bool) -> Option<bool> {
        if node_port {
            let local = self.sets.iter().any(|s| {
                s.kind == KubeSet::NodePortLocal
                    && s.protocol == Some(key.1)
                    && (s.ports.contains(&key.2) || s.keys.contains(&key))
            });
            return (local || self.ipvs.outputs.ipset.is_some()).then_some(local);
        }
        let lb = self.in_set(KubeSet::LoadBalancerLocal, key);
        let external = self.in_set(KubeSet::ExternalIpLocal, key);
        match (lb, external) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (None, None) => None,
            _ => Some(false),
        }
    }

    /// Whether a key is in any of the Service address sets.
    pub fn in_service_sets(&self, key: Key) -> bool {
        SERVICE_ADDRESS_SETS
            .iter()
            .any(|&k| self.in_set(k, key) == Some(true))
    }

    /// Whether a virtual server is kube-proxy's: its key is in a Service address set, its
    /// address in `KUBE-IPVS-IPS`, or it is a node port.
    pub fn is_kube_proxy_vs(&self, vs: &VirtualServer<'_>) -> bool {
        let Some(key) = vs.key() else { return false };
        self.in_service_sets(key)
            || self.is_node_port(vs)
            || self
                .sets
                .iter()
                .any(|s| s.kind == KubeSet::IpvsIps && s.addresses.contains(&key.0))
    }

    /// The `nat` table of the iptables part when it is complete (COMMIT, built-in chains).
    pub fn nat_complete(&self) -> Option<rulelint_parser::TableRef<'r, 'a>> {
        let set = &self.iptables?.ruleset;
        let table = set
            .iter_tables()
            .find(|t| t.kind() == TableKind::Nat && !t.get().superseded)?;
        let t = table.get();
        let complete = !t.implicit
            && t.commit.is_some()
            && TableKind::Nat.builtin_chains().iter().all(|name| {
                table
                    .chain(name)
                    .is_some_and(|c| c.get().declaration().is_some())
            });
        complete.then_some(table)
    }
}

/// A finding of a lint at a span.
pub fn finding(
    info: &'static rulelint_parser::CodeInfo,
    span: rulelint_parser::Span,
    message: impl Into<String>,
    label: impl Into<String>,
    help: impl Into<String>,
) -> Diagnostic {
    Diagnostic::new(info, span, message)
        .with_label(label)
        .with_help(help)
}
