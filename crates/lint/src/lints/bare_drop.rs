//! RL401 bare-drop: a DROP or REJECT that lost its match, in a chain whose owner never writes one.

use crate::context::{Findings, LintContext};
use crate::known::{Owner, owner};
use crate::kube::owners::known_chain;
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, RuleRef, Severity};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL401",
        name: "bare-drop",
        severity: Severity::Error,
        summary: "a DROP or REJECT with no match in a Kubernetes, Docker or Flannel chain",
        docs: "## What it flags
A `-j DROP` or `-j REJECT` with no effective match (a `-m comment` is not a match) in a chain
owned by software that never writes one: the `KUBE-*` chains kube-proxy (every mode), kubelet
and kube-router write (the exact names and name patterns read in their source, listed in
`crates/lint/src/kube/owners.rs`), Docker's `DOCKER*` chains, Flannel's `FLANNEL-*` chains.

## Why it matters
Every packet that reaches the chain is dropped: the node black-holes service, pod or host
traffic while it reports Ready. The usual cause is two iptables versions (the host's and a
container's, or legacy and nft) rewriting the same rules: the newer match is not understood and
is lost on the way, and `-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP` becomes
`-A KUBE-FIREWALL -j DROP` (kubernetes#112477, #114549).

## Example
```text
-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -j DROP
```

## Instead
```text
-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP
```
Delete the bare rule, restart the component that owns the chain so that it writes its rules
again, and make the host and the containers use the same iptables version and backend.

## Exceptions
kube-proxy's IPVS mode ends `KUBE-SOURCE-RANGES-FIREWALL` with `-j DROP` by design (the
allowed source ranges `RETURN` before it), and kube-router's `KUBE-POD-FW-*` and
`KUBE-NWPLCY-*` chains reject what no network policy allows, so those are not checked. Other
`KUBE-*` chains are not assumed to be Kubernetes': managed distributions and add-ons write
chains under the same prefix that drop by design (a cloud's metadata concealment dropping one
address and port, for instance). Chains of other owners
are not checked: Calico's per-workload chains end with a deliberate
\"Drop if no profiles matched\", and host firewalls (ufw, firewalld, Shorewall) drop by design.
If you add your own unconditional DROP to such a chain on purpose, allow it in `rulelint.toml`:
`[lints.bare-drop] allow-chains = [\"KUBE-MY-BLOCK\"]`.

## References
- https://github.com/kubernetes/kubernetes/issues/112477
- https://github.com/kubernetes/kubernetes/issues/114549",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let bare = |rule: RuleRef<'_, '_>| {
        let facts = cx.target_facts(rule.id);
        !facts.is_goto() && facts.is_drop_or_reject() && facts.unconditional()
    };
    for chain in cx.chains() {
        // Most chains hold no bare DROP or REJECT: the chain's shared walk facts say so before
        // its name or any of its rules is read.
        if !cx.chain_walk(chain).bare_drop_or_reject {
            continue;
        }
        let name = chain.name();
        let Some(owner) = owner(name) else {
            continue;
        };
        // kube-proxy's IPVS mode ends KUBE-SOURCE-RANGES-FIREWALL with a bare DROP on purpose
        // (the source-range ipset RETURNs come first), and kube-router's policy chains REJECT
        // what no policy allows.
        if known_chain(name).is_some_and(|k| k.drops_by_design) {
            continue;
        }
        for rule in chain.rules().filter(|&rule| bare(rule)) {
            let Some(target) = rule.target() else {
                continue;
            };
            let verdict = target.name();
            let help = if name == "KUBE-FIREWALL" && verdict == "DROP" {
                "kubelet and kube-proxy write `-m mark --mark 0x8000/0x8000 -j DROP` here; the mark match was lost, which happens when two iptables versions rewrite the same rules (kubernetes#112477): delete this rule, restart kubelet and kube-proxy, and align the iptables version of the host and the containers".to_string()
            } else {
                format!(
                    "{} always writes a match on its {verdict} rules; it was lost, which happens when two iptables versions rewrite the same rules (kubernetes#112477, #114549): delete this rule, restart {} so that it writes its rules again, and align the iptables versions",
                    owner.name(),
                    match owner {
                        Owner::Kubernetes => "kubelet and kube-proxy (or kube-router)",
                        Owner::Docker => "Docker",
                        Owner::Flannel => "Flannel",
                    }
                )
            };
            out.push(
                out.at_rule(rule, format!("{verdict} in {name} matches every packet"))
                    .with_label(format!(
                        "no match: this {} all traffic that reaches the chain",
                        if verdict == "DROP" {
                            "drops"
                        } else {
                            "rejects"
                        }
                    ))
                    .with_help(help),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter};

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                &filter(
                    ":KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP\n",
                ),
                &filter(
                    ":cali-tw-cali12345 - [0:0]\n-A FORWARD -j cali-tw-cali12345\n-A cali-tw-cali12345 -m comment --comment \"cali:abc\" -m comment --comment \"Drop if no profiles matched\" -j DROP\n",
                ),
                &filter(
                    ":LOGDROP - [0:0]\n-A INPUT -j LOGDROP\n-A LOGDROP -j LOG\n-A LOGDROP -j DROP\n",
                ),
                &filter(
                    ":DOCKER-ISOLATION-STAGE-2 - [0:0]\n-A FORWARD -j DOCKER-ISOLATION-STAGE-2\n-A DOCKER-ISOLATION-STAGE-2 -o docker0 -j DROP\n",
                ),
                // IPVS mode's source-range firewall.
                &filter(
                    ":KUBE-SOURCE-RANGES-FIREWALL - [0:0]\n-A INPUT -j KUBE-SOURCE-RANGES-FIREWALL\n-A KUBE-SOURCE-RANGES-FIREWALL -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN\n-A KUBE-SOURCE-RANGES-FIREWALL -j DROP\n",
                ),
            ],
            &[
                (
                    &filter(
                        ":KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -j DROP\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        ":DOCKER-USER - [0:0]\n:FLANNEL-FWD - [0:0]\n-A FORWARD -j DOCKER-USER\n-A FORWARD -j FLANNEL-FWD\n-A DOCKER-USER -j REJECT --reject-with icmp-port-unreachable\n-A FLANNEL-FWD -j DROP\n",
                    ),
                    2,
                ),
                // A chain named like the verdict does not hide it.
                (
                    &filter(
                        ":KUBE-FIREWALL - [0:0]\n:REJECT - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -j REJECT\n",
                    ),
                    1,
                ),
            ],
        );
    }
}
