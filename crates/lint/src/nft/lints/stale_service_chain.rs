//! RL457 stale-service-chain: an empty kube-proxy Service or endpoint chain that nothing
//! references, as kube-proxy leaves them for a while after a Service is deleted.

use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings};
use crate::registry::Category;
use rulelint_nft::Severity;
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL457",
        name: "stale-service-chain",
        severity: Severity::Info,
        summary: "an empty kube-proxy Service or endpoint chain that nothing references",
        docs: "## What it flags
In a whole `table ip|ip6 kube-proxy`, a `service-`, `external-`, `local-`, `firewall-` or
`endpoint-` chain (a name with `/`) that has no rule and that no rule or map element jumps
or goes to.

## Why it matters
Usually nothing: when a Service or endpoint goes away, kube-proxy flushes its chains and
removes every reference in one transaction, and deletes the empty chains on a later sync, at
least a second later (kube-proxy's `TestSyncProxyRulesRepeated`). Many of them, or the same
ones in dump after dump, mean that this cleanup fails
(`sync_proxy_rules_nftables_cleanup_failures_total`).

## Example
```text
chain service-42NFTM6N-ns2/svc2/tcp/p80 {
}
```

## Instead
Nothing to do for a fresh deletion. If the chains stay, read kube-proxy's log for failing
cleanup transactions.",
    },
    category: Category::Unused,
    check,
};

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    for table in cx.kube_proxy_tables() {
        if !cx.is_complete(table) {
            continue;
        }
        let walked = cx.walked();
        for &c in &cx.ruleset().tables[table.index()].chains {
            if !walked.is_service_chain(c) {
                continue;
            }
            let chain = cx.chain(c);
            if !chain.rules.is_empty() || cx.graph().jumps_into(c).next().is_some() {
                continue;
            }
            out.push_in(
                c,
                out.diagnostic(cx.chain_header(c), format!("{} is empty and nothing references it: left over from a deleted Service or endpoint", chain.name))
                    .with_label("empty, unreferenced chain")
                    .with_help("kube-proxy deletes such chains on a sync at least a second later; if they stay, look for failing cleanup transactions in its log"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    #[test]
    fn cases() {
        let stale = HEALTHY.replace(
            "\tchain reject-chain {",
            "\tchain service-XXXXXXXX-ns9/svc9/tcp/p80 {\n\t}\n\n\tchain endpoint-YYYYYYYY-ns9/svc9/tcp/p80__10.180.0.9/80 {\n\t}\n\n\tchain reject-chain {",
        );
        let own_helper = HEALTHY.replace(
            "\tchain reject-chain {",
            "\tchain helper {\n\t}\n\n\tchain reject-chain {",
        );
        let referenced_empty = HEALTHY.replace(
            "\t\tip saddr 10.180.0.2 jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to 10.180.0.2:80\n",
            "",
        );
        let cut = &stale[..stale.len() - 2];
        assert_cases(
            &LINT,
            &[HEALTHY, &own_helper, &referenced_empty, cut],
            &[(&stale, 2)],
        );
    }
}
