//! RL477 ipvs-iptables-rules-altered: on a node in IPVS mode, nat rules that kube-proxy keys on
//! its ipsets are missing: the cluster IP match in `KUBE-SERVICES`, the hairpin and the marked
//! masquerade in `KUBE-POSTROUTING`.

use crate::ipvs::context::{IpvsContext, finding};
use crate::ipvs::{IpvsLint, Needs};
use crate::kube::{is_ipvs_chain, is_ipvs_set};
use crate::registry::Category;
use rulelint_parser::{ChainRef, CodeInfo, Diagnostic, Severity};

/// The declaration.
pub static LINT: IpvsLint = IpvsLint {
    info: CodeInfo {
        code: "RL477",
        name: "ipvs-iptables-rules-altered",
        severity: Severity::Warning,
        summary: "kube-proxy's IPVS-mode nat rules are missing: the KUBE-CLUSTER-IP match in KUBE-SERVICES or a masquerade rule in KUBE-POSTROUTING",
        docs: "## What it flags
A file with `iptables-save` of a node in IPVS mode (its IPVS chains or ipset matches are there)
and its `ipset` or `ipvsadm` output, whose complete nat table lacks one of the rules
kube-proxy's IPVS proxier writes there (`writeIptablesRules`, `ipsetWithIptablesChain`):

* in `KUBE-SERVICES`, a rule matching `-m set --match-set KUBE-CLUSTER-IP dst,dst` (the
  masquerade of cluster IP traffic from outside the pod network, and its ACCEPT);
* in `KUBE-POSTROUTING`, `-m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE` (hairpin);
* in `KUBE-POSTROUTING`, the `MASQUERADE` of packets marked by `KUBE-MARK-MASQ`.

## Why it matters
IPVS balances the packets whatever iptables says, but the masquerading that makes the replies
come back is in these rules: without them, node-local clients and clients outside the pod
network get no reply from cluster IPs and node ports, and pods that reach themselves through
their Service hang. A partial restore, a hand edit or another tool's `iptables -t nat -F`
leaves this.

## Example
```text
*nat
:KUBE-POSTROUTING - [0:0]
:KUBE-SERVICES - [0:0]
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
COMMIT
```

## Instead
Restart kube-proxy: it restores its chains on the next sync. Find what flushes or edits the nat
table on the node.

## Exceptions
Only with a complete nat table (COMMIT, built-in chains declared) and only when the iptables
part itself shows IPVS mode: a node whose iptables are in iptables mode beside IPVS state is
`RL411`'s.",
    },
    category: Category::Correctness,
    needs: Needs {
        ipvsadm: false,
        ipset: false,
        kube_ipvs0: false,
        pod_network: false,
        iptables: true,
    },
    check,
};

fn has_set_rule(
    chain: Option<ChainRef<'_, '_>>,
    set: &str,
    flags: &str,
    target: Option<&str>,
) -> bool {
    chain.is_some_and(|c| {
        c.rules().any(|r| {
            r.set_matches().iter().any(|m| {
                !m.negated
                    && (m.name == set || m.name == set.replacen("KUBE-", "KUBE-6-", 1))
                    && m.flags == flags
            }) && target.is_none_or(|t| r.target().is_some_and(|x| x.name() == t))
        })
    })
}

fn check(cx: &IpvsContext<'_, '_>, out: &mut Vec<Diagnostic>) {
    let o = cx.ipvs().outputs;
    if o.ipset.is_none() && o.ipvsadm.is_none() {
        return;
    }
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
    if !ipvs_mode {
        return;
    }
    let services = nat.chain("KUBE-SERVICES");
    let postrouting = nat.chain("KUBE-POSTROUTING");
    let at = |c: Option<ChainRef<'_, '_>>| {
        c.and_then(|c| c.get().declaration())
            .unwrap_or(nat.get().header)
    };
    let help = "restart kube-proxy (it restores its chains on the next sync) and find what flushes or edits the nat table";
    if !has_set_rule(services, "KUBE-CLUSTER-IP", "dst,dst", None) {
        out.push(finding(
            &LINT.info,
            at(services),
            "nat KUBE-SERVICES has no `-m set --match-set KUBE-CLUSTER-IP dst,dst` rule: cluster IP traffic from outside the pod network is not masqueraded",
            "KUBE-SERVICES in IPVS mode",
            help,
        ));
    }
    if !has_set_rule(
        postrouting,
        "KUBE-LOOP-BACK",
        "dst,dst,src",
        Some("MASQUERADE"),
    ) {
        out.push(finding(
            &LINT.info,
            at(postrouting),
            "nat KUBE-POSTROUTING has no `-m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE`: hairpin traffic is not masqueraded",
            "KUBE-POSTROUTING in IPVS mode",
            help,
        ));
    }
    let marked_masquerade = postrouting.is_some_and(|c| {
        c.rules().any(|r| {
            r.target().is_some_and(|t| t.name() == "MASQUERADE") && r.set_matches().is_empty()
        })
    });
    if !marked_masquerade {
        out.push(finding(
            &LINT.info,
            at(postrouting),
            "nat KUBE-POSTROUTING has no MASQUERADE for packets marked by KUBE-MARK-MASQ: node ports and external traffic get no replies",
            "KUBE-POSTROUTING in IPVS mode",
            help,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::lints::testing::{HEALTHY, assert_cases, part, without};

    #[test]
    fn cases() {
        let no_cluster_ip = HEALTHY
            .replace("-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment \"Kubernetes service cluster ip + port for masquerade purpose\" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ\n", "")
            .replace("-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\n", "");
        let no_hairpin = without(
            "-A KUBE-POSTROUTING -m comment --comment \"Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose\" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE",
        );
        let no_masquerade = without(
            "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully",
        );
        let flushed_nat = HEALTHY
            .lines()
            .filter(|l| {
                !(l.starts_with("-A KUBE-POSTROUTING") || l.starts_with("-A KUBE-SERVICES"))
            })
            .collect::<Vec<_>>()
            .join("\n");
        // No IPVS output beside it: the iptables lints' business.
        let iptables_only = part(
            "# Generated by iptables-save",
            Some("create KUBE-LOOP-BACK"),
        );
        let cut_nat = no_hairpin.replace("COMMIT\n# Completed", "# Completed");
        assert_cases(
            &LINT,
            &[
                HEALTHY,
                &iptables_only.replace("-A KUBE-POSTROUTING", "-A X"),
                &cut_nat,
            ],
            &[
                (&no_cluster_ip, 1),
                (&no_hairpin, 1),
                (&no_masquerade, 1),
                (&flushed_nat, 3),
            ],
        );
    }
}
