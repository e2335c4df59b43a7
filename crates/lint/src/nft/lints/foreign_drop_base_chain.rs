//! RL460 foreign-drop-base-chain: on a node in nftables mode, another table's forward or
//! prerouting base chain drops by default (or ends in a bare `drop`) and accepts nothing new.

use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings};
use crate::registry::Category;
use rulelint_nft::{ChainId, Expr, Rule, Ruleset, Severity, Stmt, TableId, VerdictKind};
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL460",
        name: "foreign-drop-base-chain",
        severity: Severity::Warning,
        summary: "another table's forward or prerouting base chain drops Service traffic that kube-proxy's table accepts",
        docs: "## What it flags
On a node where `table ip|ip6 kube-proxy` has base chains, a `type filter` base chain of
another table on the `forward` or `prerouting` hook of the same family (or `inet`) that
- has `policy drop`, or whose last rule is an unconditional `drop`, and
- has no `accept` for new traffic in it or in the chains it jumps to (an accept of
  `ct state established,related` alone does not count).

## Why it matters
In nftables every base chain of a hook runs, in priority order, whatever the others decided:
an `accept` ends only its own base chain, a `drop` ends the packet. kube-proxy's nftables
mode does not open holes in other firewalls (its release note: it \"requires the firewall to be
configured properly for service proxying\"), so a forward chain that drops by default drops
pod-to-pod and Service traffic to endpoints on this node; a prerouting one drops it before
the DNAT. Docker 29 warns of the same with an iptables `FORWARD` drop policy (moby#50646);
Talos filtered NodePorts by mistake this way (siderolabs/talos#10354).

## Example
```text
table inet firewall {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
	}
}
```

## Instead
Accept the pod network and Service traffic in that chain (`ip saddr 10.244.0.0/16 accept`,
`ip daddr 10.244.0.0/16 accept`), or use `policy accept`.

## Exceptions
A chain with any other `accept` is not flagged: it lets something through on purpose, and
whether that covers the cluster's traffic is not known from the ruleset. Input and output
hooks are not read (a node firewall that drops by default is common and usually intended).
iptables' own tables are `RL412 forward-drop-policy`'s.",
    },
    category: Category::Correctness,
    check,
};

fn is_reply_only(set: &Ruleset<'_>, rule: &Rule<'_>) -> bool {
    set.statements_of(rule).iter().any(|s| match &s.kind {
        Stmt::Match {
            left: Expr::Ct { key: "state", .. },
            op: None | Some("=="),
            right,
        } => {
            let words: Vec<&str> = match right {
                Expr::Literal(w) => vec![*w],
                Expr::List(ws) => ws.to_vec(),
                Expr::Set(elements) => elements
                    .iter()
                    .filter_map(|e| match &e.key {
                        Expr::Literal(w) => Some(*w),
                        _ => None,
                    })
                    .collect(),
                _ => return false,
            };
            !words.is_empty()
                && words
                    .iter()
                    .all(|w| matches!(*w, "established" | "related"))
        }
        _ => false,
    })
}

fn accepts_new_traffic(cx: &NftContext<'_, '_>, chain: ChainId) -> bool {
    cx.graph().reachable_from(chain).any(|c| {
        cx.ruleset().rules_of(c).any(|rule| {
            let accepts = cx
                .ruleset()
                .statements_of(rule)
                .iter()
                .any(|s| match &s.kind {
                    Stmt::Verdict(v) => v.kind == VerdictKind::Accept,
                    // A verdict map may accept; count it as an accept (unsure: stay silent).
                    Stmt::Vmap { .. } => true,
                    _ => false,
                });
            accepts && !is_reply_only(cx.ruleset(), rule)
        })
    })
}

fn ends_in_bare_drop(cx: &NftContext<'_, '_>, chain: ChainId) -> bool {
    cx.ruleset().rules_of(chain).last().is_some_and(|rule| {
        let statements = cx.ruleset().statements_of(rule);
        !statements.is_empty()
            && statements.iter().all(|s| match &s.kind {
                Stmt::Verdict(v) => v.kind == VerdictKind::Drop,
                Stmt::Counter { .. } | Stmt::Comment(_) => true,
                Stmt::Keyword { keyword, .. } => *keyword == "log",
                _ => false,
            })
    })
}

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    let kube: Vec<TableId> = cx
        .kube_proxy_tables()
        .filter(|t| {
            set.tables[t.index()]
                .chains
                .iter()
                .any(|c| cx.chain(*c).base.is_some())
        })
        .collect();
    if kube.is_empty() {
        return;
    }
    let kube_families: Vec<_> = kube
        .iter()
        .filter_map(|t| set.tables[t.index()].family)
        .collect();
    for (t, table) in set.tables.iter().enumerate() {
        let id = TableId(t as u32);
        if kube.contains(&id) || !cx.is_complete(id) {
            continue;
        }
        let crosses = match table.family {
            Some(rulelint_nft::Family::Inet) => true,
            Some(f) => kube_families.contains(&f),
            None => false,
        };
        if !crosses {
            continue;
        }
        for &c in &table.chains {
            let chain = cx.chain(c);
            let Some(base) = &chain.base else { continue };
            if base.kind != "filter" || !matches!(base.hook, "forward" | "prerouting") {
                continue;
            }
            let drop_policy = base.policy == Some("drop");
            if !(drop_policy || ends_in_bare_drop(cx, c)) || accepts_new_traffic(cx, c) {
                continue;
            }
            let how = if drop_policy {
                "has policy drop"
            } else {
                "ends in a bare drop"
            };
            let family = table.family_word.unwrap_or("ip");
            let table_name = table.name.unwrap_or("?");
            let span = if drop_policy {
                base.span
            } else {
                cx.chain_header(c)
            };
            out.push_in(
                c,
                out.diagnostic(span, format!("{} of table {family} {table_name} {how} on the {} hook and accepts no new traffic: it drops the Service and pod traffic kube-proxy's table lets through", chain.name, base.hook))
                    .with_label(format!("{} base chain, priority {}", base.hook, base.priority.text))
                    .with_help("in nftables an accept ends only its own base chain, a drop ends the packet; accept the pod network and Service traffic in this chain, or make its policy accept"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    fn with(table: &str) -> String {
        format!("{HEALTHY}{table}")
    }

    #[test]
    fn cases() {
        let drop_policy = "table inet firewall {\n\tchain forward {\n\t\ttype filter hook forward priority filter; policy drop;\n\t\tct state established,related accept\n\t}\n}\n";
        let accepts_pods = drop_policy.replace(
            "ct state established,related accept\n",
            "ct state established,related accept\n\t\tip saddr 10.244.0.0/16 accept\n",
        );
        let final_drop = "table ip fw {\n\tchain pre {\n\t\ttype filter hook prerouting priority raw; policy accept;\n\t\tcounter drop\n\t}\n}\n";
        let input_drop = drop_policy.replace("hook forward", "hook input");
        let ip6_only = drop_policy.replace("table inet", "table ip6");
        assert_cases(
            &LINT,
            &[
                HEALTHY,
                drop_policy,
                &with(&accepts_pods),
                &with(&input_drop),
                &with(&ip6_only),
            ],
            &[(&with(drop_policy), 1), (&with(final_drop), 1)],
        );
    }
}
