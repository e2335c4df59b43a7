//! RL404 orphan-service-chain: a kube-proxy service chain in nat that nothing jumps to.

use crate::context::{Findings, LintContext};
use crate::kube::names::ServiceChainKind;
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainRef, CodeInfo, Severity, TableKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL404",
        name: "orphan-service-chain",
        severity: Severity::Warning,
        summary: "a KUBE-SVC, KUBE-SVL, KUBE-EXT, KUBE-FW or KUBE-XLB chain in nat that nothing jumps to",
        docs: "## What it flags
A per-Service chain of kube-proxy (`KUBE-SVC-*`, `KUBE-SVL-*`, `KUBE-EXT-*`, `KUBE-FW-*`, and
`KUBE-XLB-*` from before 1.24) in a complete nat table that no rule jumps to. The message names
the Service from kube-proxy's comments. Only the first chain of a left-behind set is reported:
a `KUBE-SVC-*` still jumped to from an orphaned `KUBE-EXT-*` is not.

## Why it matters
kube-proxy jumps to each of these chains from `KUBE-SERVICES`, `KUBE-NODEPORTS` or another chain
of the same Service, and deletes a chain in the same `iptables-restore` that removes its last
jump. A chain nothing reaches is left over from a Service that was deleted while kube-proxy was
not running or could not restore its rules (kubernetes#80407: every restore failed on a missing
`KUBE-MARK-DROP`, so deleted Services kept their rules), or from a switch of proxy mode or to a
kube-proxy replacement that did not clean up (kubernetes#102314, #119265). The chains do no harm
by themselves, but they show that kube-proxy is not in control of the node: the same failure
leaves new Services unprogrammed. When another chain of the same Service is still jumped to,
the dispatch rule that should lead here (a node port or load-balancer rule) is missing instead.

## Example
```text
:KUBE-SVC-RWMHVJ3F5Y4PSVQN - [0:0]
-A KUBE-SVC-RWMHVJ3F5Y4PSVQN -m comment --comment \"shop/cart:http -> 10.244.1.9:8080\" -j KUBE-SEP-O2GW6OQXJ7D5VZ3M
```
with no `-j KUBE-SVC-RWMHVJ3F5Y4PSVQN` anywhere in nat.

## Instead
Find out why kube-proxy did not delete the chain (its log shows failed `iptables-restore` runs)
and restart it: a full sync deletes every `KUBE-*` service chain it does not need. Or delete
the chain by hand: `iptables -t nat -F CHAIN` then `iptables -t nat -X CHAIN`.

## Exceptions
- In large-cluster mode (over 1,000 endpoints, recognised by endpoint chains without comments)
  kube-proxy deletes stale chains only once per sync period, so a few may linger for a while:
  the finding is then `info`.
- kube-proxy before 1.24 declares a `KUBE-XLB-*` chain for every Service with
  `externalTrafficPolicy: Local`, even one with no endpoints (the chain stays empty) or with no
  node port and no load-balancer IP yet (nothing jumps to it while its `KUBE-SVC-*` is in use).
  Neither is reported.
- Partial tables (iptables-restore input, `--noflush` fragments) are skipped: the jumps may be
  in the part that is not shown.

## References
- https://github.com/kubernetes/kubernetes/issues/80407
- https://github.com/kubernetes/kubernetes/issues/102314
- https://github.com/kubernetes/kubernetes/issues/119265",
    },
    category: Category::Unused,
    check,
};

/// What the chain does for its Service, for messages.
fn role(kind: ServiceChainKind, name: &str) -> &'static str {
    match kind {
        ServiceChainKind::Cluster => "service chain",
        ServiceChainKind::Local if name.starts_with("KUBE-XLB-") => {
            "external local-endpoints chain"
        }
        ServiceChainKind::Local => "local-endpoints chain",
        ServiceChainKind::External => "external-traffic chain",
        ServiceChainKind::Firewall => "load-balancer firewall chain",
    }
}

/// Where kube-proxy jumps to a chain of this kind from, for the help of a live Service.
fn entry(kind: ServiceChainKind) -> &'static str {
    match kind {
        ServiceChainKind::Cluster => {
            "the `cluster IP` rule in KUBE-SERVICES, or the Service's KUBE-EXT/KUBE-FW chain"
        }
        ServiceChainKind::Local => {
            "the Service's KUBE-EXT chain (or, before 1.24, the node port rule in KUBE-NODEPORTS and the Service's KUBE-FW chain)"
        }
        ServiceChainKind::External => {
            "the node port rule in KUBE-NODEPORTS and the `external IP` and `loadbalancer IP` rules in KUBE-SERVICES"
        }
        ServiceChainKind::Firewall => "the `loadbalancer IP` rules in KUBE-SERVICES",
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let Some(nat) = cx.tables().filter(|t| t.kind() == TableKind::Nat).last() else {
        return;
    };
    if !cx.is_complete(nat) {
        return;
    }
    let kube = cx.kube();
    let set = cx.ruleset();
    let graph = cx.graph();
    let jumped = |chain| graph.jumps_into(chain).next().is_some();
    let large_cluster = kube.layout.large_cluster;
    for service in &kube.services {
        let live = service.is_live(graph);
        let cluster_live = service
            .chains
            .cluster
            .is_some_and(|c| service.dispatched(graph, c));
        for (kind, id) in service.chains.iter() {
            if jumped(id) {
                continue;
            }
            let chain = set.chain(id);
            let name = chain.name();
            // kube-proxy before 1.24 declares KUBE-XLB-* for every Local-policy Service: empty
            // when it has no endpoints, unreached when it has no node port or load-balancer IP.
            if name.starts_with("KUBE-XLB-") && (chain.rule_count() == 0 || cluster_live) {
                continue;
            }
            let what = role(kind, name);
            let message = match &service.name {
                Some(svc) => format!("nothing jumps to {name}, the {what} of {svc}"),
                None => format!("nothing jumps to {what} {name}"),
            };
            let help = if live {
                format!(
                    "{} is still programmed (another of its chains is jumped to), so the rule that leads here is missing: kube-proxy jumps to a {what} from {}; restart kube-proxy so that it writes its rules again",
                    service.display_name(set),
                    entry(kind)
                )
            } else {
                stale_help(
                    "a deleted Service",
                    "a deleted Service",
                    name,
                    large_cluster,
                )
            };
            push_orphan(cx, out, chain, message, help, large_cluster);
        }
    }
}

/// The help for a chain kube-proxy should have deleted: `what` it is left over from, as
/// written for large-cluster mode (lazy deletion) and otherwise.
pub(crate) fn stale_help(what_large: &str, what: &str, name: &str, large_cluster: bool) -> String {
    if large_cluster {
        format!(
            "left over from {what_large}: in large-cluster mode (over 1,000 endpoints) kube-proxy deletes stale chains only once per sync period, so this may go away by itself; if it stays, check kube-proxy's log for failed iptables-restore runs, or delete it: `iptables -t nat -F {name}` then `iptables -t nat -X {name}`"
        )
    } else {
        format!(
            "left over from {what}: kube-proxy deletes stale chains on every sync, so it is not running, not in iptables mode, or failing to restore (check its log, kubernetes#80407); restart it, or delete the chain: `iptables -t nat -F {name}` then `iptables -t nat -X {name}`"
        )
    }
}

/// Reports a nat chain nothing jumps to, at its declaration; info rather than the lint's
/// severity in large-cluster mode, where kube-proxy removes stale chains lazily.
pub(crate) fn push_orphan(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    chain: ChainRef<'_, '_>,
    message: String,
    help: String,
    large_cluster: bool,
) {
    let mut d = out
        .diagnostic(cx.chain_span(chain), message)
        .in_chain(chain.get().table, chain.id)
        .with_label("declared here; no rule jumps to it")
        .with_help(help);
    if large_cluster {
        d.severity = Severity::Info;
    }
    out.push(d);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    /// A complete nat table holding the given lines.
    fn nat(lines: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n{lines}COMMIT\n"
        )
    }

    const WEB: &str = ":KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]\n:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]\n-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.1.5:8080\n";
    const WEB_DISPATCH: &str = "-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n";

    #[test]
    fn cases() {
        let live = nat(&format!("{WEB}{WEB_DISPATCH}"));
        let orphan = nat(WEB);
        // A deleted NodePort Service: KUBE-EXT is the root, KUBE-SVC still reached from it.
        let orphan_ext = nat(&format!(
            ":KUBE-EXT-WEBWEBWEBWEBWEBW - [0:0]\n{WEB}-A KUBE-EXT-WEBWEBWEBWEBWEBW -m comment --comment \"masquerade traffic for default/web:http external destinations\" -j KUBE-MARK-MASQ\n-A KUBE-EXT-WEBWEBWEBWEBWEBW -j KUBE-SVC-WEBWEBWEBWEBWEBW\n"
        ));
        // Legacy: an empty KUBE-XLB (Local policy, no endpoints), and a filled one whose
        // Service has no node port while its KUBE-SVC is in use.
        let empty_xlb = nat(":KUBE-XLB-WEBWEBWEBWEBWEBW - [0:0]\n");
        let unreached_xlb = nat(&format!(
            ":KUBE-XLB-WEBWEBWEBWEBWEBW - [0:0]\n{WEB}{WEB_DISPATCH}-A KUBE-XLB-WEBWEBWEBWEBWEBW -m comment --comment \"route LOCAL traffic for default/web:http LB IP to service chain\" -m addrtype --src-type LOCAL -j KUBE-SVC-WEBWEBWEBWEBWEBW\n-A KUBE-XLB-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n"
        ));
        let orphan_xlb = nat(&format!(
            ":KUBE-XLB-WEBWEBWEBWEBWEBW - [0:0]\n{WEB}-A KUBE-XLB-WEBWEBWEBWEBWEBW -m comment --comment \"route LOCAL traffic for default/web:http LB IP to service chain\" -m addrtype --src-type LOCAL -j KUBE-SVC-WEBWEBWEBWEBWEBW\n-A KUBE-XLB-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n"
        ));
        // Restore input: only kube-proxy's own chains, no built-in chains.
        let fragment = format!("*nat\n{WEB}COMMIT\n");
        // Two orphans of two Services, one unnamed.
        let two = nat(&format!(
            "{WEB}:KUBE-FW-DEADBEEFDEADBEEF - [0:0]\n-A KUBE-FW-DEADBEEFDEADBEEF -j KUBE-MARK-MASQ\n"
        ));
        assert_cases(
            &LINT,
            &[&live, &empty_xlb, &unreached_xlb, &fragment],
            &[(&orphan, 1), (&orphan_ext, 1), (&orphan_xlb, 1), (&two, 2)],
        );
    }

    #[test]
    fn message_names_the_service_and_large_clusters_lower_the_severity() {
        let found = run(&LINT, &nat(WEB));
        assert_eq!(
            found[0].message,
            "nothing jumps to KUBE-SVC-WEBWEBWEBWEBWEBW, the service chain of default/web:http"
        );
        assert_eq!(found[0].severity, Severity::Warning);
        // No comments on the endpoint chains: large-cluster mode.
        let bare = nat(&WEB.replace(" -m comment --comment \"default/web:http\"", ""));
        let found = run(&LINT, &bare);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Info);
    }

    #[test]
    fn a_live_service_with_an_unreached_chain_gets_a_different_help() {
        let text = nat(&format!(
            ":KUBE-EXT-WEBWEBWEBWEBWEBW - [0:0]\n{WEB}{WEB_DISPATCH}-A KUBE-EXT-WEBWEBWEBWEBWEBW -j KUBE-SVC-WEBWEBWEBWEBWEBW\n"
        ));
        let found = run(&LINT, &text);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].message,
            "nothing jumps to KUBE-EXT-WEBWEBWEBWEBWEBW, the external-traffic chain of default/web:http"
        );
        assert!(
            found[0]
                .help
                .as_deref()
                .is_some_and(|h| h.contains("still programmed"))
        );
    }
}
