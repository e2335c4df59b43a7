//! RL473 ipset-entry-without-virtual-server: an entry of one of kube-proxy's sets that no
//! virtual server (or real server) of `ipvsadm -Ln` backs: what a deleted Service leaves when a
//! sync fails.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::sets::{KubeSet, SERVICE_ADDRESS_SETS};
use crate::ipvs::{IpvsLint, Needs};
use crate::registry::Category;
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL473",
        name: "ipset-entry-without-virtual-server",
        severity: Severity::Warning,
        summary: "an entry of a kube-proxy ipset matches no IPVS virtual or real server: a leftover of a deleted Service",
        docs: "## What it flags
With `ipvsadm -Ln` and `ipset` output of one node:

* an `address,proto:port` entry of `KUBE-CLUSTER-IP`, `KUBE-EXTERNAL-IP(-LOCAL)` or
  `KUBE-LOAD-BALANCER(-LOCAL, -FW)` with no virtual server of that address, protocol and port;
* an address of `KUBE-IPVS-IPS` with no virtual server on it;
* a port of `KUBE-NODE-PORT-TCP`/`-UDP`/`-SCTP-HASH` (and `-LOCAL-`) with no virtual server of
  that protocol and port;
* an `ip,proto:port,ip` entry of `KUBE-LOOP-BACK` with no real server of that address,
  protocol and port.

## Why it matters
kube-proxy removes a Service's entries in the same sync that deletes its virtual servers; an
entry left behind means a failed sync or a hand edit. The iptables rules keyed on the sets
still act on the address: traffic to a stale cluster IP is marked for masquerading and
accepted, `KUBE-IPVS-FILTER` lets it through, and nothing answers; a stale node port is
accepted on every node address.

## Example
```text
add KUBE-CLUSTER-IP 10.96.77.7,tcp:80
TCP  10.96.0.1:443 rr
  -> 192.168.56.10:6443           Masq    1      0          0
```

## Instead
Restart kube-proxy: it rewrites every set on its first sync. Look in its log for failed ipset
or IPVS calls.

## Known problems
A cut `ipvsadm -Ln` paste hides virtual servers that exist: the entries of the missing part are
reported. Paste the whole listing (`ipvsadm -Ln > node.ipvs`).",
    },
    category: Category::Suspicious,
    needs: Needs {
        ipvsadm: true,
        ipset: true,
        kube_ipvs0: false,
        pod_network: false,
        iptables: false,
    },
    check,
};

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    if !cx.ipvsadm_whole() {
        return;
    }
    let vs_ports: rustc_hash::FxHashSet<(rulelint_ipvs::Protocol, u16)> = cx
        .virtual_servers
        .keys()
        .map(|&(_, p, port)| (p, port))
        .collect();
    let help = "restart kube-proxy (it rewrites every set on its first sync) and look in its log for failed ipset or IPVS calls";
    for s in &cx.sets {
        let name = s.set.name;
        for m in &s.set.members {
            let stale = match s.kind {
                k if SERVICE_ADDRESS_SETS.contains(&k) => match (m.address, m.protocol, m.port) {
                    (Some(a), Some(p), Some(port)) => {
                        (!cx.virtual_servers.contains_key(&(a.addr(), p, port)))
                            .then_some("no virtual server has this address, protocol and port")
                    }
                    _ => None,
                },
                KubeSet::IpvsIps => m.address.and_then(|a| {
                    (!cx.vs_addresses.contains(&a.addr()))
                        .then_some("no virtual server is on this address")
                }),
                KubeSet::NodePort | KubeSet::NodePortLocal => match (s.protocol, m.port) {
                    (Some(p), Some(port)) => (!vs_ports.contains(&(p, port)))
                        .then_some("no virtual server has this protocol and port"),
                    _ => None,
                },
                KubeSet::LoopBack => match (m.address, m.protocol, m.port) {
                    (Some(a), Some(p), Some(port)) => {
                        (!cx.real_servers.contains(&(a.addr(), p, port)))
                            .then_some("no real server has this address, protocol and port")
                    }
                    _ => None,
                },
                _ => None,
            };
            if let Some(why) = stale {
                out.push(finding(
                    &LINT.info,
                    m.span,
                    format!(
                        "{name} entry {} matches no IPVS server: a leftover of a deleted Service",
                        m.text
                    ),
                    format!("{why} in the ipvsadm listing"),
                    help,
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases, part, without};

    #[test]
    fn cases() {
        let no_vs = HEALTHY.replace("TCP  10.96.50.5:80 rr\n", "");
        let stale_loopback = HEALTHY.replace(
            "add KUBE-LOOP-BACK 10.244.1.8,tcp:8080,10.244.1.8\n",
            "add KUBE-LOOP-BACK 10.244.1.8,tcp:8080,10.244.1.8\nadd KUBE-LOOP-BACK 10.244.1.9,tcp:8080,10.244.1.9\n",
        );
        let stale_node_port = HEALTHY.replace(
            "add KUBE-NODE-PORT-TCP 30080\n",
            "add KUBE-NODE-PORT-TCP 30080\nadd KUBE-NODE-PORT-TCP 30999\n",
        );
        let only_ipset = part("create KUBE-LOOP-BACK", Some("IP Virtual Server"));
        let resolved = HEALTHY.replace("TCP  10.96.0.1:443 rr", "TCP  kubernetes.default:https rr");
        assert_cases(
            &LINT,
            &[
                HEALTHY,
                &only_ipset,
                &resolved,
                &without("add KUBE-CLUSTER-IP 10.96.0.1,tcp:443"),
            ],
            &[(&no_vs, 2), (&stale_loopback, 1), (&stale_node_port, 1)],
        );
    }
}
