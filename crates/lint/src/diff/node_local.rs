//! What differs between healthy nodes of one cluster by design: chains that hold one node's
//! pods or local endpoints, and addresses that belong to one node (its IP, its pod CIDR).

use crate::kube::names::{ServiceChainKind, service_chain};
use rulelint_parser::views::{NatAddress, PortRange, parse_address};
use std::net::IpAddr;

/// Why a difference is expected between healthy nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expected {
    /// `externalTrafficPolicy: Local`: each node sends external traffic only to its own pods.
    LocalEndpoints,
    /// A chain whose rules name the pods of this node (CNI per-pod chains, Calico workload
    /// chains and their dispatch chains).
    NodeLocalChain,
    /// Rules that differ only in addresses that are not Service or endpoint addresses: node
    /// IPs, the node's pod CIDR.
    NodeAddress,
}

impl Expected {
    /// Words for people.
    pub fn describe(self) -> &'static str {
        match self {
            Expected::LocalEndpoints => "local endpoints differ per node (Local traffic policy)",
            Expected::NodeLocalChain => "the chain holds this node's pods",
            Expected::NodeAddress => "only node addresses differ (node IP, pod CIDR)",
        }
    }
}

/// Whether a chain's very existence depends on the pods of the node: a CNI per-pod chain
/// (`CNI-<hash>`, `CNI-DN-<hash>`, `CNI-SN-<hash>`) or a Calico per-workload chain
/// (`cali-tw-*`, `cali-fw-*`, `cali-sm-*`).
pub fn is_per_pod_chain(chain: &str) -> bool {
    const PREFIXES: &[&str] = &["cali-tw-", "cali-fw-", "cali-sm-", "CNI-DN-", "CNI-SN-"];
    if PREFIXES.iter().any(|p| chain.starts_with(p)) {
        return true;
    }
    // The bridge plugin's per-container chains: `CNI-` and 24 hex digits.
    chain
        .strip_prefix("CNI-")
        .is_some_and(|h| h.len() == 24 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether a chain's rules depend on the pods or local endpoints of the node: per-pod chains,
/// the dispatch chains that lead to them, and the local-endpoint chains of Local-policy
/// Services.
pub fn has_node_local_rules(chain: &str) -> bool {
    const DISPATCH: &[&str] = &[
        "cali-from-wl-dispatch",
        "cali-to-wl-dispatch",
        "cali-set-endpoint-mark",
        "cali-from-host-endpoint",
        "cali-to-host-endpoint",
        "CNI-HOSTPORT-DNAT",
    ];
    is_per_pod_chain(chain)
        || DISPATCH.iter().any(|p| chain.starts_with(p))
        || matches!(service_chain(chain), Some((ServiceChainKind::Local, _)))
}

/// The address an argument names, if it is one: `10.0.0.1`, `10.244.1.0/24`,
/// `10.244.1.5:8080` (a NAT target), `fd00::1/128`.
pub fn address_in(arg: &str) -> Option<IpAddr> {
    let first = arg.as_bytes().first()?;
    if !(first.is_ascii_hexdigit() || *first == b':' || *first == b'[') {
        return None;
    }
    // The usual DNAT destination, `a.b.c.d:port`, read at once, as the readers below would
    // read it: they try it as a network, then as IPv6, and parse the address twice (a tenth
    // of a pair diff's instructions went there).
    if let Some((address, port)) = arg.split_once(':')
        && !port.contains(':')
        && let Ok(ip) = address.parse::<std::net::Ipv4Addr>()
    {
        return PortRange::parse(port)
            .filter(|r| r.first > 0)
            .map(|_| IpAddr::V4(ip));
    }
    address_in_general(arg)
}

/// [`address_in`] without its shortcut.
fn address_in_general(arg: &str) -> Option<IpAddr> {
    let first = arg.as_bytes().first()?;
    if !(first.is_ascii_hexdigit() || *first == b':' || *first == b'[') {
        return None;
    }
    if let Ok(net) = parse_address(arg) {
        return Some(net.addr());
    }
    NatAddress::parse(arg).ok().and_then(|n| n.first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut for `a.b.c.d:port` reads what the general readers read, or leaves it to
    /// them.
    #[test]
    fn addresses_with_a_port_read_as_the_general_readers_read_them() {
        for arg in [
            "10.1.2.3:8080",
            "10.1.2.3:0",
            "10.1.2.3:",
            "10.1.2.3:80-90",
            "10.1.2.3:90-80",
            "10.1.2.3:99999",
            "10.1.2.3:x",
            "10.1.2.3/24:80",
            "010.1.2.3:80",
            "10.1.2.3-10.1.2.9:80",
            "10.1.2.3:80:90",
            "10.1.2.3",
            "10.1.2.3/32",
            "[fd00::1]:80",
            "fd00::1",
            "a.b.c.d:80",
            "256.1.2.3:80",
            ":80",
            "",
        ] {
            assert_eq!(address_in(arg), address_in_general(arg), "{arg}");
        }
        assert_eq!(address_in("10.1.2.3:8080"), Some([10, 1, 2, 3].into()));
    }

    #[test]
    fn per_pod_chains() {
        assert!(is_per_pod_chain("CNI-0c3a2f1b9d8e7f6a5b4c3d2e"));
        assert!(is_per_pod_chain("CNI-DN-0c3a2f1b9d8e7f6a5b4c3"));
        assert!(is_per_pod_chain("cali-tw-cali12345abcdef"));
        assert!(!is_per_pod_chain("CNI-HOSTPORT-DNAT"));
        assert!(!is_per_pod_chain("cali-INPUT"));
        assert!(has_node_local_rules("CNI-HOSTPORT-DNAT"));
        assert!(has_node_local_rules("cali-from-wl-dispatch-5"));
        assert!(has_node_local_rules("KUBE-SVL-AAAAAAAAAAAAAAAA"));
        assert!(has_node_local_rules("KUBE-XLB-AAAAAAAAAAAAAAAA"));
        assert!(!has_node_local_rules("KUBE-SVC-AAAAAAAAAAAAAAAA"));
    }

    #[test]
    fn addresses_in_arguments() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(address_in("10.244.1.0/24"), Some(ip("10.244.1.0")));
        assert_eq!(address_in("10.244.1.5:8080"), Some(ip("10.244.1.5")));
        assert_eq!(address_in("[fd00::5]:80"), Some(ip("fd00::5")));
        assert_eq!(address_in("fd00::/64"), Some(ip("fd00::")));
        assert_eq!(address_in("8080"), None);
        assert_eq!(address_in("ACCEPT"), None);
        assert_eq!(address_in("0x4000/0x4000"), None);
    }
}
