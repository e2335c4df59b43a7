//! RL474 stale-ipvs-address: an address bound to `kube-ipvs0` that no virtual server uses.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::{IpvsLint, Needs};
use crate::registry::Category;
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL474",
        name: "stale-ipvs-address",
        severity: Severity::Warning,
        summary: "an address on kube-ipvs0 has no IPVS virtual server: the node answers on a Service address nothing serves",
        docs: "## What it flags
An `inet`/`inet6` address of `kube-ipvs0` (`ip addr show kube-ipvs0`) that is the address of no
virtual server of `ipvsadm -Ln`.

## Why it matters
kube-proxy binds every cluster IP, external IP and load-balancer IP to the dummy interface
`kube-ipvs0` so that the kernel treats them as local and IPVS sees the packets, and unbinds
those of deleted Services at the end of each sync. An address left behind is still local: the
node answers on it itself (a host process listening on `0.0.0.0` gets the traffic), and a new
Service that gets the address later may reach the wrong place until the next sync.
kube-router#411 saw 1,059 stale addresses break a host service; `kube-ipvs0` left over after a
switch away from IPVS mode holds them all.

## Example
```text
2: kube-ipvs0: <BROADCAST,NOARP> mtu 1500 qdisc noop state DOWN group default
    inet 10.96.77.7/32 scope global kube-ipvs0
```
with no `TCP  10.96.77.7:...` in `ipvsadm -Ln`.

## Instead
Restart kube-proxy (it unbinds what no Service uses on its next sync). After a switch away from
IPVS mode, delete the interface: `ip link delete kube-ipvs0`.

## Known problems
A cut `ipvsadm -Ln` paste hides virtual servers that exist: their addresses are reported.",
    },
    category: Category::Suspicious,
    needs: Needs {
        ipvsadm: true,
        ipset: false,
        kube_ipvs0: true,
        pod_network: false,
        iptables: false,
    },
    check,
};

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    if !cx.ipvsadm_whole() {
        return;
    }
    let Some(interface) = cx.ipvs().interface("kube-ipvs0") else {
        return;
    };
    for (net, span) in &interface.addresses {
        if !cx.vs_addresses.contains(&net.addr()) {
            out.push(finding(
                &LINT.info,
                *span,
                format!("{} is bound to kube-ipvs0 but no virtual server uses it", net.addr()),
                "address of kube-ipvs0",
                "restart kube-proxy (it unbinds unused addresses on its next sync); after leaving IPVS mode, `ip link delete kube-ipvs0`",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases, part};

    #[test]
    fn cases() {
        let no_vs = HEALTHY.replace("TCP  10.96.50.5:80 rr\n", "");
        let only_ip_addr = part("1: lo:", None);
        let resolved = no_vs.replace("TCP  10.96.0.1:443 rr", "TCP  kubernetes.default:https rr");
        assert_cases(&LINT, &[HEALTHY, &only_ip_addr, &resolved], &[(&no_vs, 1)]);
    }
}
