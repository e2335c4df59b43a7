//! RL472 virtual-server-without-ipset-entry: a virtual server on a `KUBE-IPVS-IPS` address
//! whose `address,proto:port` is in none of kube-proxy's Service address sets, so that
//! `KUBE-IPVS-FILTER` rejects its new connections.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::sets::KubeSet;
use crate::ipvs::{IpvsLint, Needs};
use crate::registry::Category;
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL472",
        name: "virtual-server-without-ipset-entry",
        severity: Severity::Error,
        summary: "a virtual server on a kube-ipvs0 address has no entry in KUBE-CLUSTER-IP or another Service set: its new connections are rejected",
        docs: "## What it flags
A virtual server (`TCP  10.96.0.10:53 rr`) whose address is in `KUBE-IPVS-IPS` (the addresses
kube-proxy binds to `kube-ipvs0`), while its `address,proto:port` (`10.96.0.10,tcp:53`) is in
none of `KUBE-CLUSTER-IP`, `KUBE-EXTERNAL-IP`, `KUBE-EXTERNAL-IP-LOCAL`,
`KUBE-LOAD-BALANCER`, `KUBE-LOAD-BALANCER-LOCAL`, `KUBE-LOAD-BALANCER-FW` (or their
`KUBE-6-` twins), and its port is not a node port.

## Why it matters
kube-proxy's filter chain `KUBE-IPVS-FILTER` lets traffic to a `KUBE-IPVS-IPS` address through
only when the address and port are in one of the Service sets, and otherwise ends with
`-m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT` (kubernetes#72236).
The virtual server exists, but every new connection to it is refused: the Service looks up and
does not answer. A failed `ipset add`, or a set flushed by hand or by another tool, leaves this.

## Example
```text
create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536
add KUBE-CLUSTER-IP 10.96.0.1,tcp:443
create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536
add KUBE-IPVS-IPS 10.96.0.10
TCP  10.96.0.10:53 rr
  -> 10.244.1.5:53                Masq    1      0          0
```

## Instead
Restart kube-proxy: it rewrites every set on its first sync. Look in its log for failed ipset
commands, and for other tools that manage ipsets on the node.

## Exceptions
Only with `ipvsadm -Ln` (numeric) and `ipset` output of the address's family: a set cut short
(`RL174`) or missing from the paste counts as unknown and nothing is reported.",
    },
    category: Category::Correctness,
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
    for vs in &cx.ipvs().virtual_servers {
        let Some(key) = vs.key() else { continue };
        let Some(ips) = cx.complete_set(KubeSet::IpvsIps, key.0.is_ipv6()) else {
            continue;
        };
        if !ips.addresses.contains(&key.0) || cx.is_node_port(vs) {
            continue;
        }
        // Only when every Service set of this family was read whole: a missing one may hold it.
        let all_read = crate::ipvs::sets::SERVICE_ADDRESS_SETS
            .iter()
            .all(|&k| cx.in_set(k, key).is_some());
        if !all_read || cx.in_service_sets(key) {
            continue;
        }
        let set_name = if key.0.is_ipv6() {
            "KUBE-6-CLUSTER-IP"
        } else {
            "KUBE-CLUSTER-IP"
        };
        let member = format!("{},{}:{}", key.0, key.1.as_str(), key.2);
        out.push(finding(
            &LINT.info,
            vs.span,
            format!(
                "virtual server {} is in no Service ipset: KUBE-IPVS-FILTER rejects its new connections",
                vs.target.text
            ),
            format!("no `{member}` in {set_name} or another Service set"),
            "restart kube-proxy (it rewrites every set on its first sync) and look in its log for failed ipset commands",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases, part, without};

    #[test]
    fn cases() {
        let missing = without("add KUBE-CLUSTER-IP 10.96.0.10,tcp:53");
        let missing_lb = without("add KUBE-LOAD-BALANCER 203.0.113.10,tcp:443");
        // Without KUBE-IPVS-IPS nothing is known to be filtered.
        let no_ips_set = missing.replace("create KUBE-IPVS-IPS", "create KUBE-SOMETHING-ELSE");
        // A paste of only some sets: the Service sets that are not there count as unknown.
        let only_ipvsadm_and_ips = format!(
            "create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-IPS 10.96.0.10\n{}",
            part("IP Virtual Server", Some("1: lo:"))
        );
        assert_cases(
            &LINT,
            &[HEALTHY, &no_ips_set, &only_ipvsadm_and_ips],
            &[(&missing, 1), (&missing_lb, 1)],
        );
    }
}
