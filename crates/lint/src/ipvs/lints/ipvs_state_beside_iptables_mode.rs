//! RL479 ipvs-state-beside-iptables-mode: IPVS virtual servers, `kube-ipvs0` addresses or
//! kube-proxy's ipset entries on a node whose iptables are in kube-proxy's iptables mode: what a
//! switch away from IPVS mode leaves behind. (The other way round, iptables-mode chains beside
//! IPVS-mode rules, is `RL411`'s, which sees both in iptables-save alone.)

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::sets::KubeSet;
use crate::ipvs::{IpvsLint, Needs};
use crate::kube::{is_ipvs_chain, is_ipvs_set};
use crate::registry::Category;
use rulelint_parser::{CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL479",
        name: "ipvs-state-beside-iptables-mode",
        severity: Severity::Warning,
        summary: "virtual servers, kube-ipvs0 addresses or ipset entries of IPVS mode on a node whose kube-proxy runs in iptables mode: a mode switch's leftovers",
        docs: "## What it flags
A file whose `iptables-save` shows kube-proxy's iptables mode (nat `KUBE-SERVICES` jumps to
`KUBE-SVC-*` chains with rules) and none of its IPVS mode (no `KUBE-IPVS-*`,
`KUBE-NODE-PORT`, ... chain, no match on its ipsets), while the IPVS outputs of the same file
still hold kube-proxy's IPVS state: virtual servers, addresses on `kube-ipvs0`, or entries in
`KUBE-CLUSTER-IP`. One finding per file.

## Why it matters
Switching kube-proxy from IPVS to iptables mode does not remove the IPVS state (KEP-2448
removed the automatic cleanup). `kube-ipvs0` keeps every old cluster IP local to the node, so
the node answers on them itself, and the virtual servers keep balancing to the endpoints they
had when the switch happened: traffic that reaches them bypasses the iptables rules and goes
to pods that may be gone. k3s left `kube-ipvs0` behind after its cleanup (k3s#5644).

## Example
```text
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment \"kube-system/kube-dns:dns cluster IP\" -m udp --dport 53 -j KUBE-SVC-TCOU7JCQXEZGVUNU
...
IP Virtual Server version 1.2.1 (size=4096)
UDP  10.96.0.10:53 rr
  -> 10.244.1.5:53                Masq    1      0          0
```

## Instead
Run `kube-proxy --cleanup` once with the IPVS mode's leftovers in mind, then restart
kube-proxy; or clear them by hand: `ipvsadm -C`, `ip link delete kube-ipvs0`, and
`ipset destroy` of each `KUBE-*` set once no rule references it.

## Exceptions
Only with a complete nat table. kube-router's IPVS service proxy keeps its own
`kube-dummy-if` and sets and is not reported.",
    },
    category: Category::Suspicious,
    needs: Needs {
        ipvsadm: false,
        ipset: false,
        kube_ipvs0: false,
        pod_network: false,
        iptables: true,
    },
    check,
};

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    let (Some(parsed), Some(nat)) = (cx.iptables(), cx.nat_complete()) else {
        return;
    };
    let set = &parsed.ruleset;
    let ipvs_mode = set.iter_tables().filter(|t| !t.get().superseded).any(|t| {
        t.chains().any(|c| {
            is_ipvs_chain(c.name())
                || c.rules()
                    .any(|r| r.set_matches().iter().any(|m| is_ipvs_set(m.name)))
        })
    });
    if ipvs_mode {
        return;
    }
    // An iptables-mode Service chain with rules that KUBE-SERVICES sends traffic to.
    let Some(svc) = nat.chain("KUBE-SERVICES").and_then(|services| {
        services.rules().find_map(|r| {
            let target = r.target()?.name();
            (target.starts_with("KUBE-SVC-")
                && nat
                    .chain(target)
                    .is_some_and(|c| c.rules().next().is_some()))
            .then_some(target)
        })
    }) else {
        return;
    };
    let ipvs = cx.ipvs();
    let cluster_entries = cx
        .sets
        .iter()
        .any(|s| s.kind == KubeSet::ClusterIp && !s.set.members.is_empty());
    let bound = ipvs
        .interface("kube-ipvs0")
        .is_some_and(|i| !i.addresses.is_empty());
    let what: Vec<&str> = [
        (!ipvs.virtual_servers.is_empty(), "IPVS virtual servers"),
        (bound, "addresses on kube-ipvs0"),
        (cluster_entries, "KUBE-CLUSTER-IP entries"),
    ]
    .into_iter()
    .filter_map(|(on, text)| on.then_some(text))
    .collect();
    let o = ipvs.outputs;
    let Some(first) = [o.ipvsadm, o.ipset, o.ip_addr]
        .into_iter()
        .flatten()
        .min_by_key(|s| s.start)
    else {
        return;
    };
    if what.is_empty() {
        return;
    }
    out.push(finding(
        &LINT.info,
        first,
        format!(
            "{} beside kube-proxy's iptables mode (nat KUBE-SERVICES -> {svc}): leftovers of IPVS mode",
            what.join(", ")
        ),
        "first IPVS-mode output of the file",
        "clear the IPVS mode's state (`ipvsadm -C`, `ip link delete kube-ipvs0`, `ipset destroy` of the KUBE-* sets) or run `kube-proxy --cleanup` and restart kube-proxy",
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases, part};

    const IPTABLES_MODE: &str = "*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
:KUBE-SVC-TCOU7JCQXEZGVUNU - [0:0]
:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]
-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment \"kube-system/kube-dns:dns cluster IP\" -m udp --dport 53 -j KUBE-SVC-TCOU7JCQXEZGVUNU
-A KUBE-SVC-TCOU7JCQXEZGVUNU -m comment --comment \"kube-system/kube-dns:dns -> 10.244.1.5:53\" -j KUBE-SEP-AAAAAAAAAAAAAAAA
-A KUBE-SEP-AAAAAAAAAAAAAAAA -p udp -m comment --comment \"kube-system/kube-dns:dns\" -m udp -j DNAT --to-destination 10.244.1.5:53
COMMIT
";

    #[test]
    fn cases() {
        let ipvsadm = part("IP Virtual Server", Some("1: lo:"));
        let leftovers = format!("{IPTABLES_MODE}{ipvsadm}");
        let cut = leftovers.replace("COMMIT\n", "");
        let empty_ipvs = format!(
            "{IPTABLES_MODE}IP Virtual Server version 1.2.1 (size=4096)\nProt LocalAddress:Port Scheduler Flags\n"
        );
        assert_cases(
            &LINT,
            &[HEALTHY, &cut, &empty_ipvs, &ipvsadm],
            &[(&leftovers, 1)],
        );
    }
}
