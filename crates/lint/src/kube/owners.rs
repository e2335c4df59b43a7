//! Who writes a `KUBE-*` chain: the exact chain names and name patterns that kube-proxy (every
//! mode), kubelet and kube-router write, each read in the source file named beside it.
//!
//! The `KUBE-` prefix alone proves nothing: managed distributions and add-ons (a cloud's
//! metadata concealment, a vendor's policy agent) write chains under the same prefix, and some
//! of them drop by design. A `KUBE-*` chain that is not listed here is not assumed to be
//! Kubernetes': lints that know what kube-proxy or kubelet always write leave it alone.
//!
//! Sources are paths in `kubernetes/kubernetes` unless they name another repository
//! (`cloudnativelabs/kube-router`).

/// The program that writes a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Writer {
    /// kube-proxy in iptables mode.
    ProxyIptables,
    /// kube-proxy in IPVS mode.
    ProxyIpvs,
    /// kube-proxy in both iptables and IPVS mode (the same name and role in each).
    ProxyIptablesOrIpvs,
    /// kube-proxy's userspace mode (removed in 1.26).
    ProxyUserspace,
    /// kubelet (and, for the chains kubelet stopped writing in 1.28, kube-proxy after it).
    Kubelet,
    /// kubelet's (dockershim) and CRI-O's host-port manager.
    HostPort,
    /// kube-router's network-policy controller.
    KubeRouterPolicy,
    /// kube-router's service proxy (IPVS).
    KubeRouterProxy,
}

impl Writer {
    /// The writer's name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Writer::ProxyIptables => "kube-proxy (iptables mode)",
            Writer::ProxyIpvs => "kube-proxy (IPVS mode)",
            Writer::ProxyIptablesOrIpvs => "kube-proxy",
            Writer::ProxyUserspace => "kube-proxy (userspace mode)",
            Writer::Kubelet => "kubelet",
            Writer::HostPort => "kubelet's host-port manager",
            Writer::KubeRouterPolicy => "kube-router (network policy)",
            Writer::KubeRouterProxy => "kube-router (service proxy)",
        }
    }
}

/// How an entry matches a chain name.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    /// The whole name.
    Exact(&'static str),
    /// A prefix followed by at least one character (a hash, a pod or policy name).
    Prefix(&'static str),
}

/// One chain name or name pattern, who writes it, and where that was read.
#[derive(Clone, Copy, Debug)]
pub struct KnownChain {
    pattern: Pattern,
    /// Who writes it.
    pub writer: Writer,
    /// The writer ends the chain with an unconditional DROP or REJECT on purpose (or did in
    /// some version): `bare-drop` must not report it.
    pub drops_by_design: bool,
    /// The source file the name was read in.
    pub source: &'static str,
}

const IPTABLES_PROXIER: &str = "pkg/proxy/iptables/proxier.go";
const IPVS_PROXIER: &str = "pkg/proxy/ipvs/proxier.go";
const USERSPACE_PROXIER: &str = "pkg/proxy/userspace/proxier.go";
const KUBELET_NETWORK: &str = "pkg/kubelet/kubelet_network_linux.go";
const HOSTPORT: &str = "pkg/kubelet/dockershim/network/hostport/hostport_manager.go";
const KUBE_ROUTER_NETPOL: &str =
    "cloudnativelabs/kube-router pkg/controllers/netpol/network_policy_controller.go";
const KUBE_ROUTER_PROXY: &str =
    "cloudnativelabs/kube-router pkg/controllers/proxy/network_services_controller.go";

const fn exact(name: &'static str, writer: Writer, source: &'static str) -> KnownChain {
    KnownChain {
        pattern: Pattern::Exact(name),
        writer,
        drops_by_design: false,
        source,
    }
}

const fn prefix(prefix: &'static str, writer: Writer, source: &'static str) -> KnownChain {
    KnownChain {
        pattern: Pattern::Prefix(prefix),
        writer,
        drops_by_design: false,
        source,
    }
}

/// Every `KUBE-*` chain name that kube-proxy, kubelet and kube-router write. A name that two
/// programs write (`KUBE-MARK-MASQ`: kubelet and kube-proxy) is listed once, under the one that
/// creates it first.
pub static KNOWN_CHAINS: &[KnownChain] = &[
    // kubelet: `syncIPTablesRules` / `syncNetworkUtil`. kube-proxy ensures the same chains
    // (`KUBE-MARK-MASQ`, `KUBE-POSTROUTING`; `KUBE-FIREWALL` from 1.28, `KUBE-MARK-DROP` up to
    // 1.23) in iptables and IPVS mode.
    exact("KUBE-MARK-DROP", Writer::Kubelet, KUBELET_NETWORK),
    exact("KUBE-MARK-MASQ", Writer::Kubelet, KUBELET_NETWORK),
    exact("KUBE-POSTROUTING", Writer::Kubelet, KUBELET_NETWORK),
    exact("KUBE-FIREWALL", Writer::Kubelet, KUBELET_NETWORK),
    exact("KUBE-IPTABLES-HINT", Writer::Kubelet, KUBELET_NETWORK),
    exact("KUBE-KUBELET-CANARY", Writer::Kubelet, KUBELET_NETWORK),
    // kube-proxy, iptables mode: the fixed chains and the per-Service-port chains.
    exact(
        "KUBE-SERVICES",
        Writer::ProxyIptablesOrIpvs,
        IPTABLES_PROXIER,
    ),
    exact(
        "KUBE-EXTERNAL-SERVICES",
        Writer::ProxyIptables,
        IPTABLES_PROXIER,
    ),
    exact("KUBE-NODEPORTS", Writer::ProxyIptables, IPTABLES_PROXIER),
    exact(
        "KUBE-FORWARD",
        Writer::ProxyIptablesOrIpvs,
        IPTABLES_PROXIER,
    ),
    exact(
        "KUBE-PROXY-FIREWALL",
        Writer::ProxyIptablesOrIpvs,
        IPTABLES_PROXIER,
    ),
    exact(
        "KUBE-PROXY-CANARY",
        Writer::ProxyIptablesOrIpvs,
        IPTABLES_PROXIER,
    ),
    prefix("KUBE-SVC-", Writer::ProxyIptables, IPTABLES_PROXIER),
    prefix("KUBE-SVL-", Writer::ProxyIptables, IPTABLES_PROXIER),
    prefix("KUBE-EXT-", Writer::ProxyIptables, IPTABLES_PROXIER),
    prefix("KUBE-FW-", Writer::ProxyIptables, IPTABLES_PROXIER),
    prefix("KUBE-XLB-", Writer::ProxyIptables, IPTABLES_PROXIER),
    prefix("KUBE-SEP-", Writer::ProxyIptables, IPTABLES_PROXIER),
    // kube-proxy, IPVS mode (`KUBE-FIRE-WALL` was the nat load-balancer chain's name in 1.9
    // and 1.10; `KUBE-SOURCE-RANGES-FIREWALL` ends with a DROP after the allowed ranges'
    // RETURNs).
    exact("KUBE-NODE-PORT", Writer::ProxyIpvs, IPVS_PROXIER),
    exact("KUBE-LOAD-BALANCER", Writer::ProxyIpvs, IPVS_PROXIER),
    exact("KUBE-FIRE-WALL", Writer::ProxyIpvs, IPVS_PROXIER),
    exact("KUBE-IPVS-FILTER", Writer::ProxyIpvs, IPVS_PROXIER),
    exact("KUBE-IPVS-OUT-FILTER", Writer::ProxyIpvs, IPVS_PROXIER),
    KnownChain {
        drops_by_design: true,
        ..exact(
            "KUBE-SOURCE-RANGES-FIREWALL",
            Writer::ProxyIpvs,
            IPVS_PROXIER,
        )
    },
    // kube-proxy, userspace mode (`KUBE-PROXY` was its single chain before 1.0).
    exact(
        "KUBE-PORTALS-CONTAINER",
        Writer::ProxyUserspace,
        USERSPACE_PROXIER,
    ),
    exact(
        "KUBE-PORTALS-HOST",
        Writer::ProxyUserspace,
        USERSPACE_PROXIER,
    ),
    exact(
        "KUBE-NODEPORT-CONTAINER",
        Writer::ProxyUserspace,
        USERSPACE_PROXIER,
    ),
    exact(
        "KUBE-NODEPORT-HOST",
        Writer::ProxyUserspace,
        USERSPACE_PROXIER,
    ),
    exact(
        "KUBE-NODEPORT-NON-LOCAL",
        Writer::ProxyUserspace,
        USERSPACE_PROXIER,
    ),
    exact("KUBE-PROXY", Writer::ProxyUserspace, USERSPACE_PROXIER),
    // Host ports (kubenet and CNI portmap through dockershim; CRI-O's copy keeps the names).
    exact("KUBE-HOSTPORTS", Writer::HostPort, HOSTPORT),
    exact("KUBE-LOCALDEST", Writer::HostPort, HOSTPORT),
    prefix("KUBE-HP-", Writer::HostPort, HOSTPORT),
    // kube-router, network policy. Its pod and policy chains REJECT what no policy allows:
    // older releases ended the pod chain with an unconditional `-j REJECT`.
    exact(
        "KUBE-ROUTER-INPUT",
        Writer::KubeRouterPolicy,
        KUBE_ROUTER_NETPOL,
    ),
    exact(
        "KUBE-ROUTER-FORWARD",
        Writer::KubeRouterPolicy,
        KUBE_ROUTER_NETPOL,
    ),
    exact(
        "KUBE-ROUTER-OUTPUT",
        Writer::KubeRouterPolicy,
        KUBE_ROUTER_NETPOL,
    ),
    KnownChain {
        drops_by_design: true,
        ..prefix("KUBE-POD-FW-", Writer::KubeRouterPolicy, KUBE_ROUTER_NETPOL)
    },
    KnownChain {
        drops_by_design: true,
        ..prefix("KUBE-NWPLCY-", Writer::KubeRouterPolicy, KUBE_ROUTER_NETPOL)
    },
    // kube-router, service proxy.
    exact(
        "KUBE-ROUTER-SERVICES",
        Writer::KubeRouterProxy,
        KUBE_ROUTER_PROXY,
    ),
    exact(
        "KUBE-ROUTER-HAIRPIN",
        Writer::KubeRouterProxy,
        KUBE_ROUTER_PROXY,
    ),
];

/// The entry for a chain name, if kube-proxy, kubelet or kube-router writes it.
pub fn known_chain(name: &str) -> Option<&'static KnownChain> {
    if !name.starts_with("KUBE-") {
        return None;
    }
    KNOWN_CHAINS.iter().find(|k| match k.pattern {
        Pattern::Exact(exact) => name == exact,
        Pattern::Prefix(prefix) => name.len() > prefix.len() && name.starts_with(prefix),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_patterns() {
        assert_eq!(
            known_chain("KUBE-FIREWALL").map(|k| k.writer),
            Some(Writer::Kubelet)
        );
        assert_eq!(
            known_chain("KUBE-SVC-NPX46M4PTMTKRN6Y").map(|k| k.writer),
            Some(Writer::ProxyIptables)
        );
        assert_eq!(
            known_chain("KUBE-NODEPORT-NON-LOCAL").map(|k| k.writer),
            Some(Writer::ProxyUserspace)
        );
        assert!(known_chain("KUBE-POD-FW-4X2PQ7ZJ").is_some_and(|k| k.drops_by_design));
        // A prefix alone is not a chain of that kind.
        assert!(known_chain("KUBE-SVC-").is_none());
        // The prefix proves nothing.
        assert!(known_chain("KUBE-METADATA-SERVER").is_none());
        assert!(known_chain("KUBE-FIREWALL-EXTRA").is_none());
        assert!(known_chain("DOCKER").is_none());
    }

    #[test]
    fn every_entry_is_a_kube_name_with_a_source() {
        for k in KNOWN_CHAINS {
            let name = match k.pattern {
                Pattern::Exact(n) | Pattern::Prefix(n) => n,
            };
            assert!(name.starts_with("KUBE-"), "{name}");
            assert!(k.source.ends_with(".go"), "{name}: {}", k.source);
        }
    }
}
