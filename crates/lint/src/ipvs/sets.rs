//! kube-proxy's IPVS-mode ipsets (`pkg/proxy/ipvs/proxier.go`, `ipsetInfo`; names in
//! `pkg/proxy/ipvs/ipset.go`). IPv6 sets replace `KUBE-` with `KUBE-6-` and are cut to 31
//! characters (`KUBE-6-LOAD-BALANCER-SOURCE-CID`).

/// One of kube-proxy's ipsets, whatever its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KubeSet {
    /// `KUBE-LOOP-BACK` (hash:ip,port,ip): local endpoints, for hairpin masquerade.
    LoopBack,
    /// `KUBE-CLUSTER-IP` (hash:ip,port): every cluster IP and port.
    ClusterIp,
    /// `KUBE-EXTERNAL-IP` (hash:ip,port).
    ExternalIp,
    /// `KUBE-EXTERNAL-IP-LOCAL` (hash:ip,port): external IPs with a Local traffic policy.
    ExternalIpLocal,
    /// `KUBE-LOAD-BALANCER` (hash:ip,port).
    LoadBalancer,
    /// `KUBE-LOAD-BALANCER-FW` (hash:ip,port): load balancers with source ranges.
    LoadBalancerFw,
    /// `KUBE-LOAD-BALANCER-LOCAL` (hash:ip,port).
    LoadBalancerLocal,
    /// `KUBE-LOAD-BALANCER-SOURCE-IP` (hash:ip,port,ip).
    LoadBalancerSourceIp,
    /// `KUBE-LOAD-BALANCER-SOURCE-CIDR` (hash:ip,port,net).
    LoadBalancerSourceCidr,
    /// `KUBE-NODE-PORT-TCP`, `-UDP` (bitmap:port), `KUBE-NODE-PORT-SCTP-HASH` (hash:ip,port).
    NodePort,
    /// `KUBE-NODE-PORT-LOCAL-TCP`, `-UDP`, `-SCTP-HASH`.
    NodePortLocal,
    /// `KUBE-HEALTH-CHECK-NODE-PORT` (bitmap:port).
    HealthCheckNodePort,
    /// `KUBE-IPVS-IPS` (hash:ip): the addresses on `kube-ipvs0`.
    IpvsIps,
}

/// kube-proxy's set of this name: its kind, whether it is the IPv6 one, and for the node-port
/// sets the protocol (`tcp`, `udp`, `sctp`).
pub fn kube_set(name: &str) -> Option<(KubeSet, bool, Option<&'static str>)> {
    let (rest, v6) = match name.strip_prefix("KUBE-6-") {
        Some(rest) => (rest, true),
        None => (name.strip_prefix("KUBE-")?, false),
    };
    // IPv6 names are cut to 31 characters: compare with the full name cut the same way.
    let full = |full: &str| {
        if v6 {
            let cut = 31 - "KUBE-6-".len();
            rest == &full[..full.len().min(cut)]
        } else {
            rest == full
        }
    };
    let table: &[(&str, KubeSet, Option<&'static str>)] = &[
        ("LOOP-BACK", KubeSet::LoopBack, None),
        ("CLUSTER-IP", KubeSet::ClusterIp, None),
        ("EXTERNAL-IP", KubeSet::ExternalIp, None),
        ("EXTERNAL-IP-LOCAL", KubeSet::ExternalIpLocal, None),
        ("LOAD-BALANCER", KubeSet::LoadBalancer, None),
        ("LOAD-BALANCER-FW", KubeSet::LoadBalancerFw, None),
        ("LOAD-BALANCER-LOCAL", KubeSet::LoadBalancerLocal, None),
        (
            "LOAD-BALANCER-SOURCE-IP",
            KubeSet::LoadBalancerSourceIp,
            None,
        ),
        (
            "LOAD-BALANCER-SOURCE-CIDR",
            KubeSet::LoadBalancerSourceCidr,
            None,
        ),
        ("NODE-PORT-TCP", KubeSet::NodePort, Some("tcp")),
        ("NODE-PORT-UDP", KubeSet::NodePort, Some("udp")),
        ("NODE-PORT-SCTP-HASH", KubeSet::NodePort, Some("sctp")),
        ("NODE-PORT-LOCAL-TCP", KubeSet::NodePortLocal, Some("tcp")),
        ("NODE-PORT-LOCAL-UDP", KubeSet::NodePortLocal, Some("udp")),
        (
            "NODE-PORT-LOCAL-SCTP-HASH",
            KubeSet::NodePortLocal,
            Some("sctp"),
        ),
        ("HEALTH-CHECK-NODE-PORT", KubeSet::HealthCheckNodePort, None),
        ("IPVS-IPS", KubeSet::IpvsIps, None),
    ];
    table
        .iter()
        .find(|(n, _, _)| full(n))
        .map(|&(_, kind, proto)| (kind, v6, proto))
}

/// The sets whose `ip,proto:port` entries are Service addresses: `KUBE-IPVS-FILTER` lets new
/// connections to a `KUBE-IPVS-IPS` address through only when it is in one of them.
pub const SERVICE_ADDRESS_SETS: &[KubeSet] = &[
    KubeSet::ClusterIp,
    KubeSet::ExternalIp,
    KubeSet::ExternalIpLocal,
    KubeSet::LoadBalancer,
    KubeSet::LoadBalancerLocal,
    KubeSet::LoadBalancerFw,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            kube_set("KUBE-CLUSTER-IP"),
            Some((KubeSet::ClusterIp, false, None))
        );
        assert_eq!(
            kube_set("KUBE-6-CLUSTER-IP"),
            Some((KubeSet::ClusterIp, true, None))
        );
        assert_eq!(
            kube_set("KUBE-6-LOAD-BALANCER-SOURCE-CID"),
            Some((KubeSet::LoadBalancerSourceCidr, true, None))
        );
        assert_eq!(
            kube_set("KUBE-NODE-PORT-SCTP-HASH"),
            Some((KubeSet::NodePort, false, Some("sctp")))
        );
        assert_eq!(kube_set("KUBE-NODE-PORT-SCTP"), None);
        assert_eq!(kube_set("KUBE-LOAD-BALANCER-SOURCE-CID"), None);
        assert_eq!(kube_set("kube-router-svip"), None);
    }
}
