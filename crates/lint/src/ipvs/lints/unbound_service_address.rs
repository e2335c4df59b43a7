//! RL475 unbound-service-address: a cluster IP virtual server whose address is not on
//! `kube-ipvs0`, so the kernel does not deliver its packets to IPVS.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::sets::KubeSet;
use crate::ipvs::{IpvsLint, Needs};
use crate::registry::Category;
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL475",
        name: "unbound-service-address",
        severity: Severity::Warning,
        summary: "a cluster IP virtual server's address is not bound to kube-ipvs0: IPVS never sees its packets",
        docs: "## What it flags
A virtual server whose `address,proto:port` is in `KUBE-CLUSTER-IP` (or `KUBE-6-CLUSTER-IP`),
while `ip addr show kube-ipvs0` does not list its address.

## Why it matters
IPVS handles packets to local addresses only: kube-proxy binds every cluster IP to the dummy
interface `kube-ipvs0` for that. Without the address, packets to the cluster IP from pods are
routed on towards the default gateway instead of being balanced; the Service does not answer
on this node.

## Example
```text
add KUBE-CLUSTER-IP 10.96.0.10,udp:53
UDP  10.96.0.10:53 rr
  -> 10.244.1.5:53                Masq    1      0          0
2: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default
    inet 10.96.0.1/32 scope global kube-ipvs0
```

## Instead
Restart kube-proxy (it binds the addresses on its next sync) and look in its log for netlink
errors; check that nothing else (a network manager, a cleanup script) removes addresses from
`kube-ipvs0`.

## Exceptions
External and load-balancer IPs are not checked: kube-proxy does not bind an external IP that is
already on another interface of the node.",
    },
    category: Category::Correctness,
    needs: Needs {
        ipvsadm: true,
        ipset: true,
        kube_ipvs0: true,
        pod_network: false,
        iptables: false,
    },
    check,
};

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    let Some(bound) = &cx.kube_ipvs0 else { return };
    for vs in &cx.ipvs().virtual_servers {
        let Some(key) = vs.key() else { continue };
        if cx.in_set(KubeSet::ClusterIp, key) == Some(true) && !bound.contains(&key.0) {
            out.push(finding(
                &LINT.info,
                vs.span,
                format!(
                    "cluster IP {} is not bound to kube-ipvs0: IPVS does not see packets to {}",
                    key.0, vs.target.text
                ),
                "cluster IP virtual server",
                "restart kube-proxy (it binds Service addresses on its next sync) and check what removes addresses from kube-ipvs0",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases, without};

    #[test]
    fn cases() {
        let unbound = without("    inet 10.96.0.10/32 scope global kube-ipvs0");
        let no_ip_addr = HEALTHY[..HEALTHY.find("1: lo:").unwrap()].to_string();
        let unbound_lb = without("    inet 203.0.113.10/32 scope global kube-ipvs0");
        assert_cases(
            &LINT,
            &[HEALTHY, &no_ip_addr, &unbound_lb],
            // 10.96.0.10 serves three ports: tcp/53, tcp/9153, udp/53.
            &[(&unbound, 3)],
        );
    }
}
