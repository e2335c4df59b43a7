//! RL454 masquerade-chain-altered: kube-proxy's `masquerading` chain, or the jump to it from
//! the postrouting hook, is missing or does not do what kube-proxy writes.

use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings, any_statement};
use crate::registry::Category;
use rulelint_nft::{ChainId, Expr, Severity, Stmt, TableId, VerdictKind};
use rulelint_parser::CodeInfo;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL454",
        name: "masquerade-chain-altered",
        severity: Severity::Error,
        summary: "kube-proxy's masquerading chain or its jump from the postrouting hook is missing or altered",
        docs: "## What it flags
In a whole `table ip|ip6 kube-proxy` that has base chains:
- no `masquerading` chain;
- no `type nat hook postrouting` base chain that jumps to it;
- a `masquerading` chain without its `masquerade` statement, or without the
  `meta mark & MARK == 0 return` that lets unmarked packets through unchanged;
- a mark tested in `masquerading` that differs from the one `mark-for-masquerade` sets.

kube-proxy writes (`pkg/proxy/nftables/proxier.go`):
```text
chain masquerading {
	meta mark & 0x00004000 == 0x00000000 return
	meta mark set meta mark ^ 0x00004000
	masquerade fully-random
}
chain nat-postrouting {
	type nat hook postrouting priority srcnat; policy accept;
	jump masquerading
}
```

## Why it matters
Without the masquerade, traffic that kube-proxy marked (off-cluster clients of a ClusterIP,
external traffic with `externalTrafficPolicy: Cluster`, hairpin connections) leaves with its
original source address: replies bypass the node and connections hang. Without the mark test,
every packet leaving the node is masqueraded.

## Example
```text
chain nat-postrouting {
	type nat hook postrouting priority srcnat; policy accept;
}
```

## Instead
Restart kube-proxy so that it rewrites its table, and find who edited it.

## Exceptions
Cut pastes and fragments are not read (the chain may be in the missing part).",
    },
    category: Category::Correctness,
    check,
};

const MASQUERADING: &str = "masquerading";
const MARK_FOR_MASQUERADE: &str = "mark-for-masquerade";

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    for table in cx.kube_proxy_tables() {
        let t = &set.tables[table.index()];
        let has_base = t.chains.iter().any(|c| cx.chain(*c).base.is_some());
        if !cx.is_complete(table) || !has_base {
            continue;
        }
        let Some(masq) = set.chain_in(table, MASQUERADING) else {
            out.push(
                out.diagnostic(table_header(cx, table), "kube-proxy's table has no `masquerading` chain: marked traffic leaves the node unmasqueraded")
                    .with_label("kube-proxy's table")
                    .with_help("kube-proxy writes `chain masquerading` and jumps to it from `nat-postrouting`; restart it to rewrite the table"),
            );
            continue;
        };
        let hooked = t.chains.iter().any(|&c| {
            cx.chain(c)
                .base
                .as_ref()
                .is_some_and(|b| b.kind == "nat" && b.hook == "postrouting")
                && cx.graph().targets_of(c).iter().any(|(to, _)| *to == masq)
        });
        if !hooked {
            out.push_in(
                masq,
                out.diagnostic(cx.chain_header(masq), "no nat postrouting base chain jumps to `masquerading`: marked traffic leaves the node unmasqueraded")
                    .with_label("the chain nothing on the postrouting hook reaches")
                    .with_help("kube-proxy writes `jump masquerading` in `nat-postrouting` (type nat hook postrouting priority srcnat); restart it to rewrite the table"),
            );
        }
        if !any_statement(
            set,
            masq,
            |s| matches!(s, Stmt::Nat(nat) if nat.kind == "masquerade"),
        ) {
            out.push_in(
                masq,
                out.diagnostic(cx.chain_header(masq), "`masquerading` has no `masquerade` statement")
                    .with_label("kube-proxy's masquerade chain")
                    .with_help("kube-proxy ends the chain with `masquerade fully-random`; restart it to rewrite the table"),
            );
        }
        let tested = tested_mark(cx, masq);
        if tested.is_none() {
            out.push_in(
                masq,
                out.diagnostic(cx.chain_header(masq), "`masquerading` does not return unmarked packets: every packet that reaches it is masqueraded")
                    .with_label("kube-proxy's masquerade chain")
                    .with_help("kube-proxy starts the chain with `meta mark & 0x00004000 == 0x00000000 return`; restart it to rewrite the table"),
            );
        }
        if let (Some((tested, tested_span)), Some(marker)) =
            (tested, set.chain_in(table, MARK_FOR_MASQUERADE))
            && let Some(set_mark) = set_mark(cx, marker)
            && set_mark != tested
        {
            out.push_in(
                masq,
                out.diagnostic(tested_span, format!("`masquerading` tests mark {tested:#010x} but `mark-for-masquerade` sets {set_mark:#010x}: marked packets are not masqueraded"))
                    .with_label("the mark test")
                    .with_help("both must use kube-proxy's masquerade bit (`--masquerade-bit`, 14 by default: 0x00004000); restart kube-proxy to rewrite the table"),
            );
        }
    }
}

fn table_header(cx: &NftContext<'_, '_>, table: TableId) -> rulelint_nft::Span {
    let t = &cx.ruleset().tables[table.index()];
    let (start, end) = (t.span.start as usize, t.span.end as usize);
    let text = cx.ruleset().text.as_bytes();
    // Only the table's own text: a JSON listing is one line of many megabytes.
    let end = text
        .get(start..end.min(text.len()))
        .and_then(|own| memchr::memchr(b'\n', own))
        .map_or(end, |i| start + i);
    rulelint_nft::Span::new(start, end.max(start))
}

fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn is_mark(e: &Expr<'_>) -> bool {
    matches!(e, Expr::Meta { key: "mark", .. })
}

/// The mark of `meta mark & MARK == 0 ... return`, from a rule that returns.
fn tested_mark(cx: &NftContext<'_, '_>, chain: ChainId) -> Option<(u64, rulelint_nft::Span)> {
    cx.ruleset().rules_of(chain).find_map(|rule| {
        let returns = cx
            .ruleset()
            .statements_of(rule)
            .iter()
            .any(|s| matches!(&s.kind, Stmt::Verdict(v) if v.kind == VerdictKind::Return));
        if !returns {
            return None;
        }
        cx.ruleset()
            .statements_of(rule)
            .iter()
            .find_map(|s| match &s.kind {
                Stmt::Match {
                    left: Expr::Binop(b),
                    right: Expr::Literal(zero),
                    ..
                } if b.op == "&" && is_mark(&b.left) && number(zero) == Some(0) => match &b.right {
                    Expr::Literal(m) => number(m).map(|m| (m, s.span)),
                    _ => None,
                },
                _ => None,
            })
    })
}

/// The mark of `meta mark set meta mark | MARK`.
fn set_mark(cx: &NftContext<'_, '_>, chain: ChainId) -> Option<u64> {
    cx.ruleset().rules_of(chain).find_map(|rule| {
        cx.ruleset()
            .statements_of(rule)
            .iter()
            .find_map(|s| match &s.kind {
                Stmt::Assign {
                    left,
                    value: Expr::Binop(b),
                } if b.op == "|" && is_mark(left) => match &b.right {
                    Expr::Literal(m) => number(m),
                    _ => None,
                },
                _ => None,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nft::lints::testing::{HEALTHY, assert_cases};

    #[test]
    fn cases() {
        let no_jump = HEALTHY.replace(
            "priority srcnat; policy accept;\n\t\tjump masquerading\n",
            "priority srcnat; policy accept;\n",
        );
        let no_masquerade = HEALTHY.replace("\t\tmasquerade fully-random\n", "");
        let no_return = HEALTHY.replace("\t\tmeta mark & 0x00004000 == 0x00000000 return\n", "");
        let other_mark = HEALTHY.replace(
            "meta mark & 0x00004000 == 0x00000000 return",
            "meta mark & 0x00008000 == 0x00000000 return",
        );
        let no_chain = no_jump.replace(
            "\tchain masquerading {\n\t\tmeta mark & 0x00004000 == 0x00000000 return\n\t\tmeta mark set meta mark ^ 0x00004000\n\t\tmasquerade fully-random\n\t}\n",
            "",
        );
        let inlined_marking = HEALTHY
            .replace(
                "\tchain mark-for-masquerade {\n\t\tmeta mark set meta mark | 0x00004000\n\t}\n",
                "",
            )
            .replace(
                "jump mark-for-masquerade",
                "meta mark set meta mark | 0x00004000",
            );
        let cut = &no_jump[..no_jump.len() - 2];
        let no_base_chains = "table ip kube-proxy {\n\tchain services {\n\t}\n}\n";
        assert_cases(
            &LINT,
            &[HEALTHY, &inlined_marking, cut, no_base_chains],
            &[
                (&no_jump, 1),
                (&no_masquerade, 1),
                (&no_return, 1),
                (&other_mark, 1),
                (&no_chain, 1),
            ],
        );
    }
}
