//! RL412 forward-drop-policy: FORWARD drops by default on a Kubernetes node and nothing
//! accepts pod traffic.

use crate::context::{Findings, LintContext};
use crate::known::is_extension_target;
use crate::kube::is_kube_proxy_chain;
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainRef, CodeInfo, RuleRef, Severity, TableKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL412",
        name: "forward-drop-policy",
        severity: Severity::Error,
        summary: "the FORWARD policy is DROP on a Kubernetes node and no rule accepts pod traffic",
        docs: "## What it flags
The `FORWARD` chain of a complete filter table on a Kubernetes node with policy `DROP`, when no
`ACCEPT` that `FORWARD` reaches lets new pod traffic through. These do not count:

* kube-proxy's own chains (`KUBE-FORWARD`, `KUBE-SERVICES`, ...): they accept Service traffic
  marked for masquerading and replies, not traffic from one pod to another;
* Docker's: its chains (`DOCKER`, `DOCKER-ISOLATION-*`, `DOCKER-FORWARD`, ...; `DOCKER-USER`
  is yours and counts) and its `FORWARD` rules for its bridges (`-i docker0`, `-o br-...`):
  they accept what containers on the bridge send and the replies, not new connections from
  other nodes;
* an `ACCEPT` of replies only (`--ctstate RELATED,ESTABLISHED`).

Any other `ACCEPT` counts: a CNI's (Flannel's `FLANNEL-FWD`, Calico's mark accept, Cilium's
`CILIUM_FORWARD`, Weave's, kube-router's), or your own (`-s 10.244.0.0/16 -j ACCEPT`).

## Why it matters
Pods on different nodes talk through the node's `FORWARD` chain (with `br_netfilter`, so do
pods on the same bridge). With a `DROP` policy and no rule that accepts them, their packets are
dropped: DNS to CoreDNS on another node times out, pod-to-pod connections hang, while each
node reports Ready. Docker 1.13 and later set the policy to `DROP` when it starts (flannel#609,
kubernetes#40182); kube-proxy's `KUBE-FORWARD` chain only covers Service traffic.

## Example
```text
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-FORWARD - [0:0]
-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD
-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT
```

## Instead
Accept the pod network (Flannel 0.9.1 and later does this in `FLANNEL-FWD`; make sure your CNI
installs its forward rules):
```text
-A FORWARD -s 10.244.0.0/16 -j ACCEPT
-A FORWARD -d 10.244.0.0/16 -j ACCEPT
```
or set the policy back with `iptables -P FORWARD ACCEPT` (and keep Docker from changing it).

## Exceptions
Only filter tables of Kubernetes nodes are checked, complete ones or a fragment (no `*filter`
header, as grep leaves it) that declares `FORWARD` with `DROP` and shows the rules of `FORWARD`
and of every chain it reaches whose accepts count: a Docker host's `DROP` policy is
Docker's business. A CNI whose data path bypasses the host's `FORWARD` chain (eBPF redirection,
Open vSwitch) and installs no iptables accept needs no rule here; allow the chain in
`rulelint.toml`: `[lints.forward-drop-policy] allow-chains = [\"FORWARD\"]`.

## References
- https://github.com/flannel-io/flannel/issues/609
- https://github.com/kubernetes/kubernetes/issues/40182",
    },
    category: Category::Correctness,
    check,
};

/// Chains whose ACCEPTs are not for pod traffic: Docker's (but `DOCKER-USER`, which is the
/// admin's) and kube-proxy's.
fn not_for_pods(chain: ChainRef<'_, '_>) -> bool {
    let name = chain.name();
    (name.starts_with("DOCKER") && name != "DOCKER-USER") || is_kube_proxy_chain(name)
}

/// A Docker bridge: `docker0`, `docker_gwbridge`, or a user network's `br-<12 hex digits>`.
fn is_docker_bridge(name: &str) -> bool {
    name.starts_with("docker")
        || name
            .strip_prefix("br-")
            .is_some_and(|id| id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether a rule accepts new forwarded pod traffic: an ACCEPT that is neither for replies only
/// nor one of Docker's bridge rules.
fn accepts_pod_traffic(rule: RuleRef<'_, '_>) -> bool {
    if !rule
        .target()
        .is_some_and(|t| !t.is_goto() && t.name() == "ACCEPT")
    {
        return false;
    }
    let docker_iface = [rule.in_interface(), rule.out_interface()]
        .into_iter()
        .flatten()
        .any(|i| !i.negated && is_docker_bridge(i.value));
    let replies_only = rule.ctstate().is_some_and(|s| {
        !s.negated
            && s.value
                .iter()
                .all(|v| matches!(*v, "RELATED" | "ESTABLISHED"))
    });
    !docker_iface && !replies_only
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    if !cx.kube().layout.is_kubernetes() {
        return;
    }
    let set = cx.ruleset();
    for table in cx.tables() {
        if table.kind() != TableKind::Filter {
            continue;
        }
        let Some(forward) = table.chain("FORWARD") else {
            continue;
        };
        if forward.policy() != Some("DROP") {
            continue;
        }
        let shown =
            cx.is_complete(table) || (table.get().implicit && fragment_shows_forward(cx, forward));
        if !shown {
            continue;
        }
        let accepted = cx.graph().reachable_from(set, forward.id).any(|c| {
            let chain = set.chain(c);
            !not_for_pods(chain) && chain.rules().any(accepts_pod_traffic)
        });
        if accepted {
            continue;
        }
        let cidr = cluster_cidr(cx);
        let cidr = cidr.as_deref().unwrap_or("<pod CIDR>");
        out.push(
            out.diagnostic(
                cx.chain_span(forward),
                "the FORWARD policy is DROP and no rule accepts pod traffic: traffic between pods on different nodes is dropped",
            )
            .in_chain(table.id, forward.id)
            .with_label("policy DROP")
            .with_help(format!(
                "kube-proxy's KUBE-FORWARD accepts only Service traffic marked for masquerading and replies, and Docker's rules only its own bridges; Docker 1.13 and later set this policy (flannel#609). Accept the pod network (`iptables -A FORWARD -s {cidr} -j ACCEPT` and `iptables -A FORWARD -d {cidr} -j ACCEPT`; Flannel 0.9.1 and later adds these in FLANNEL-FWD, so check that your CNI installed its forward rules), or set `iptables -P FORWARD ACCEPT`"
            )),
        );
    }
}

/// Whether a fragment (no `*filter` header: grep output, a partial copy) shows what `FORWARD`
/// does: `FORWARD` has rules, and so does every chain it reaches whose accepts would count.
/// A chain the fragment jumps to but shows no rule of may hold the accept, so it says nothing.
fn fragment_shows_forward(cx: &LintContext<'_, '_>, forward: ChainRef<'_, '_>) -> bool {
    let set = cx.ruleset();
    forward.rules().next().is_some()
        && cx.graph().reachable_from(set, forward.id).all(|c| {
            let chain = set.chain(c);
            not_for_pods(chain)
                || (chain.rules().next().is_some()
                    && chain.rules().all(|r| {
                        r.target().is_none_or(|t| {
                            r.target_chain().is_some() || is_extension_target(t.name())
                        })
                    }))
        })
}

/// The cluster CIDR, when kube-proxy wrote it: the `! -s CIDR` of its masquerade rules in nat
/// `KUBE-SERVICES` and `KUBE-SVC-*` (with `--cluster-cidr`). Only called when reporting.
fn cluster_cidr(cx: &LintContext<'_, '_>) -> Option<String> {
    let nat = cx.tables().filter(|t| t.kind() == TableKind::Nat).last()?;
    for chain in nat.chains() {
        if chain.name() != "KUBE-SERVICES" && !chain.name().starts_with("KUBE-SVC-") {
            continue;
        }
        for rule in chain.rules() {
            if rule.target().is_some_and(|t| t.name() == "KUBE-MARK-MASQ")
                && let Some(source) = rule.source().filter(|s| s.negated)
            {
                return Some(source.value.to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    fn node(policy: &str, lines: &str) -> String {
        format!(
            "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD {policy} [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n:KUBE-FORWARD - [0:0]\n\
             -A INPUT -j KUBE-FIREWALL\n-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n-A OUTPUT -j KUBE-FIREWALL\n{lines}\
             -A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP\n\
             -A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n\
             -A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n\
             -A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n\
             COMMIT\n"
        )
    }

    const DOCKER: &str = "-A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n-A FORWARD -i docker0 ! -o docker0 -j ACCEPT\n-A FORWARD -i docker0 -o docker0 -j ACCEPT\n";

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                &node("ACCEPT", DOCKER),
                // Flannel's forward chain accepts the pod network.
                &node(
                    "DROP",
                    &format!("{DOCKER}-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD\n-A FLANNEL-FWD -s 10.244.0.0/16 -m comment --comment \"flanneld forward\" -j ACCEPT\n")
                )
                .replace(":KUBE-FORWARD - [0:0]\n", ":KUBE-FORWARD - [0:0]\n:FLANNEL-FWD - [0:0]\n"),
                // Calico's mark accept; the admin's DOCKER-USER accept.
                &node(
                    "DROP",
                    "-A FORWARD -m comment --comment \"cali:S93hcgKJrXEqnTfs\" -m comment --comment \"Policy explicitly accepted packet.\" -m mark --mark 0x10000/0x10000 -j ACCEPT\n",
                ),
                &node(
                    "DROP",
                    "-A FORWARD -j DOCKER-USER\n-A DOCKER-USER -d 10.244.0.0/16 -j ACCEPT\n",
                )
                .replace(":KUBE-FORWARD - [0:0]\n", ":KUBE-FORWARD - [0:0]\n:DOCKER-USER - [0:0]\n"),
                // Not a Kubernetes node.
                &format!("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n{DOCKER}COMMIT\n"),
            ],
            &[
                // Only kube-proxy's and Docker's accepts.
                (&node("DROP", DOCKER), 1),
                (&node("DROP", ""), 1),
                // Replies only.
                (
                    &node(
                        "DROP",
                        "-A FORWARD -d 10.244.0.0/16 -m state --state RELATED,ESTABLISHED -j ACCEPT\n",
                    ),
                    1,
                ),
            ],
        );
    }

    #[test]
    fn help_names_the_cluster_cidr() {
        let text = format!(
            "{}*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n-A KUBE-SERVICES ! -s 10.244.0.0/16 -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-MARK-MASQ\nCOMMIT\n",
            node("DROP", DOCKER)
        );
        let found = run(&LINT, &text);
        assert!(
            found[0]
                .help
                .as_deref()
                .is_some_and(|h| h.contains("-s 10.244.0.0/16 -j ACCEPT")),
            "{found:#?}"
        );
        assert!(is_docker_bridge("br-0123456789ab") && !is_docker_bridge("br0"));
    }
}
