//! RL405 orphan-endpoint-chain: a kube-proxy endpoint chain in nat that nothing jumps to.

use crate::context::{Findings, LintContext};
use crate::kube::Generation;
use crate::lints::orphan_service_chain::{push_orphan, stale_help};
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, Severity, TableKind};
use rustc_hash::FxHashSet;

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL405",
        name: "orphan-endpoint-chain",
        severity: Severity::Warning,
        summary: "a KUBE-SEP endpoint chain in nat that nothing jumps to",
        docs: "## What it flags
A `KUBE-SEP-*` chain (one endpoint of a Service port: its DNAT to a pod) in a complete nat table
that no rule jumps to. The message names the Service from the chain's comment and the endpoint
from its DNAT. An endpoint chain still jumped to from an orphaned service chain is not reported
here: `RL404` reports that service chain.

## Why it matters
kube-proxy jumps to each endpoint chain from its Service's `KUBE-SVC-*` (or `KUBE-SVL-*`) chain
and deletes the chain in the same `iptables-restore` that removes the endpoint. An endpoint
chain nothing reaches is left over: a pod went away while kube-proxy was not running or could
not restore its rules (kubernetes#80407), or a switch of proxy mode left the old rules behind
(kubernetes#102314). The chain does no harm itself, but it shows that kube-proxy is not keeping
this node in sync, so traffic may still go to endpoints that no longer exist.

## Example
```text
:KUBE-SEP-Q4MZLVKJ6N2XU7TA - [0:0]
-A KUBE-SEP-Q4MZLVKJ6N2XU7TA -s 10.244.2.14/32 -m comment --comment \"shop/cart:http\" -j KUBE-MARK-MASQ
-A KUBE-SEP-Q4MZLVKJ6N2XU7TA -p tcp -m comment --comment \"shop/cart:http\" -m tcp -j DNAT --to-destination 10.244.2.14:8080
```
with no `-j KUBE-SEP-Q4MZLVKJ6N2XU7TA` anywhere in nat.

## Instead
Find out why kube-proxy did not delete the chain (its log shows failed `iptables-restore` runs)
and restart it: a full sync deletes every `KUBE-SEP-*` chain it does not need. Or delete the
chain by hand: `iptables -t nat -F CHAIN` then `iptables -t nat -X CHAIN`.

## Exceptions
- In large-cluster mode (over 1,000 endpoints, recognised by endpoint chains without comments)
  kube-proxy deletes stale chains only once per sync period: the finding is then `info`.
- kube-proxy before 1.23 could declare endpoint chains for endpoints that are not ready (a pod
  shutting down) while jumping only to the ready ones. So in the layout before 1.25 an
  unreached endpoint chain whose comment names a Service that is still programmed is not
  reported.
- Partial tables (iptables-restore input, `--noflush` fragments) are skipped.

## References
- https://github.com/kubernetes/kubernetes/issues/80407
- https://github.com/kubernetes/kubernetes/issues/102314",
    },
    category: Category::Unused,
    check,
};

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
    // Services with a chain in use, by name: built only if an endpoint chain needs it.
    let mut live: Option<FxHashSet<&str>> = None;
    for endpoint in &kube.endpoints {
        if jumped(endpoint.chain) {
            continue;
        }
        let endpoint_name = endpoint.name(set);
        if kube.layout.generation == Generation::Legacy
            && let Some(svc) = &endpoint_name
        {
            let live = live.get_or_insert_with(|| {
                kube.services
                    .iter()
                    .filter(|s| s.is_live(graph))
                    .filter_map(|s| s.name.as_deref())
                    .collect()
            });
            // kube-proxy before 1.23: the chain of an endpoint that is not ready.
            if live.contains(svc.as_ref()) {
                continue;
            }
        }
        let chain = set.chain(endpoint.chain);
        let name = chain.name();
        let target = endpoint
            .destination
            .map(|d| format!(" (DNAT to {d})"))
            .unwrap_or_default();
        let message = match &endpoint_name {
            Some(svc) => format!("nothing jumps to {name}, an endpoint chain of {svc}{target}"),
            None => format!("nothing jumps to endpoint chain {name}{target}"),
        };
        let help = stale_help(
            "a removed endpoint",
            "a removed endpoint or Service",
            name,
            large_cluster,
        );
        push_orphan(cx, out, chain, message, help, large_cluster);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    /// A complete nat table holding the given lines.
    fn nat(lines: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n{lines}COMMIT\n"
        )
    }

    const SVC: &str = ":KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]\n-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n";

    fn sep(hash: &str, ip: &str, service: &str) -> String {
        format!(
            ":KUBE-SEP-{hash} - [0:0]\n-A KUBE-SEP-{hash} -s {ip}/32 -m comment --comment \"{service}\" -j KUBE-MARK-MASQ\n-A KUBE-SEP-{hash} -p tcp -m comment --comment \"{service}\" -m tcp -j DNAT --to-destination {ip}:8080\n"
        )
    }

    /// A marker of the layout from 1.25 on.
    const MODERN: &str = ":KUBE-EXT-OTHEROTHEROTHERX - [0:0]\n-A KUBE-SERVICES -d 192.0.2.10/32 -p tcp -m comment --comment \"default/other:http external IP\" -m tcp --dport 80 -j KUBE-EXT-OTHEROTHEROTHERX\n-A KUBE-EXT-OTHEROTHEROTHERX -m comment --comment \"masquerade traffic for default/other:http external destinations\" -j KUBE-MARK-MASQ\n";

    #[test]
    fn cases() {
        let web = sep("AAAAAAAAAAAAAAAA", "10.244.1.5", "default/web:http");
        let stale = sep("BBBBBBBBBBBBBBBB", "10.244.2.7", "default/web:http");
        let gone = sep("CCCCCCCCCCCCCCCC", "10.244.3.9", "shop/cart:http");
        let healthy = nat(&format!("{SVC}{web}"));
        // Legacy layout: a not-ready endpoint of a live Service (kube-proxy before 1.23).
        let not_ready = nat(&format!("{SVC}{web}{stale}"));
        // Reached only from an orphaned service chain: RL404's finding, not ours.
        let under_orphan = nat(&format!(
            ":KUBE-SVC-CARTCARTCARTCART - [0:0]\n{gone}-A KUBE-SVC-CARTCARTCARTCART -m comment --comment \"shop/cart:http -> 10.244.3.9:8080\" -j KUBE-SEP-CCCCCCCCCCCCCCCC\n"
        ));
        let fragment = format!("*nat\n{web}COMMIT\n");
        // Legacy layout, the endpoint's Service is gone.
        let legacy_gone = nat(&format!("{SVC}{web}{gone}"));
        // Layout from 1.25 on: kube-proxy never leaves an endpoint of a live Service unreached.
        let modern_stale = nat(&format!("{MODERN}{SVC}{web}{stale}"));
        let two = nat(&format!("{MODERN}{SVC}{web}{stale}{gone}"));
        assert_cases(
            &LINT,
            &[&healthy, &not_ready, &under_orphan, &fragment],
            &[(&legacy_gone, 1), (&modern_stale, 1), (&two, 2)],
        );
    }

    #[test]
    fn message_names_service_and_destination() {
        let gone = sep("CCCCCCCCCCCCCCCC", "10.244.3.9", "shop/cart:http");
        let found = run(&LINT, &nat(&gone));
        assert_eq!(
            found[0].message,
            "nothing jumps to KUBE-SEP-CCCCCCCCCCCCCCCC, an endpoint chain of shop/cart:http (DNAT to 10.244.3.9:8080)"
        );
        assert_eq!(found[0].severity, Severity::Warning);
        let bare = nat(&gone.replace(" -m comment --comment \"shop/cart:http\"", ""));
        let found = run(&LINT, &bare);
        assert_eq!(
            found[0].message,
            "nothing jumps to endpoint chain KUBE-SEP-CCCCCCCCCCCCCCCC (DNAT to 10.244.3.9:8080)"
        );
        assert_eq!(found[0].severity, Severity::Info);
    }
}
