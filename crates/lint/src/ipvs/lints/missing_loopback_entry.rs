//! RL476 missing-loopback-entry: a real server on this node's pod network without its
//! `KUBE-LOOP-BACK` entry, so a pod reaching itself through its Service is not masqueraded.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::sets::KubeSet;
use crate::ipvs::{IpvsLint, Needs};
use crate::registry::Category;
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL476",
        name: "missing-loopback-entry",
        severity: Severity::Warning,
        summary: "a real server on this node has no KUBE-LOOP-BACK entry: a pod that reaches itself through its Service gets no answer",
        docs: "## What it flags
A real server of one of kube-proxy's virtual servers whose address is in this node's pod network
(the network of the CNI bridge `cni0` or `cbr0` in `ip addr`), while `KUBE-LOOP-BACK` has no
`address,proto:port,address` entry for it.

## Why it matters
kube-proxy adds every endpoint on the node to `KUBE-LOOP-BACK`, and nat `KUBE-POSTROUTING`
masquerades `-m set --match-set KUBE-LOOP-BACK dst,dst,src`: the packets a pod sends to its own
Service and that IPVS sends back to the same pod (hairpin). Without the entry the pod sees a
reply from its own address to a connection it opened to the cluster IP, and drops it: the
connection hangs for the one endpoint in N that is the client itself.

## Example
```text
add KUBE-LOOP-BACK 10.244.1.5,tcp:53,10.244.1.5
TCP  10.96.120.7:80 rr
  -> 10.244.1.8:8080              Masq    1      0          0
5: cni0: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN group default qlen 1000
    inet 10.244.1.1/24 scope global cni0
```

## Instead
Restart kube-proxy (it rewrites every set on its first sync) and look in its log for failed
ipset commands.

## Exceptions
Only when `ip addr` shows the pod bridge: without it, which endpoints are on this node is not
known and nothing is reported. CNIs without a bridge (Calico, Cilium) are not checked; nor are
host-network endpoints.",
    },
    category: Category::Correctness,
    needs: Needs {
        ipvsadm: true,
        ipset: true,
        kube_ipvs0: false,
        pod_network: true,
        iptables: false,
    },
    check,
};

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    if cx.pod_networks.is_empty() {
        return;
    }
    for vs in &cx.ipvs().virtual_servers {
        let Some(protocol) = vs.protocol else {
            continue;
        };
        if !cx.is_kube_proxy_vs(vs) {
            continue;
        }
        for rs in &vs.real_servers {
            let (Some(address), Some(port)) = (rs.target.address, rs.target.port) else {
                continue;
            };
            if !cx.pod_networks.iter().any(|n| n.contains(&address)) {
                continue;
            }
            let Some(set) = cx.complete_set(KubeSet::LoopBack, address.is_ipv6()) else {
                continue;
            };
            if set.loopback.contains(&((address, protocol, port), address)) {
                continue;
            }
            let entry = format!("{address},{}:{port},{address}", protocol.as_str());
            out.push(finding(
                &LINT.info,
                rs.span,
                format!("real server {} of {} is on this node but {} has no `{entry}`: its hairpin traffic is not masqueraded", rs.target.text, vs.target.text, set.set.name),
                "real server on this node's pod network",
                "restart kube-proxy (it rewrites every set on its first sync) and look in its log for failed ipset commands",
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
        // 10.244.1.8:8080 backs the cluster IP and the node port.
        let missing = without("add KUBE-LOOP-BACK 10.244.1.8,tcp:8080,10.244.1.8");
        let no_bridge = missing.replace("cni0", "eth1");
        assert_cases(&LINT, &[HEALTHY, &no_bridge], &[(&missing, 2)]);
    }
}
