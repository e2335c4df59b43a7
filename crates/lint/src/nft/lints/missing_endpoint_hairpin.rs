//! RL459 missing-endpoint-hairpin: a kube-proxy endpoint chain that DNATs without first
//! marking the packets its own endpoint sends (a pod reaching itself through its Service).

use super::endpoint_address_mismatch::{dnats, endpoint_of_name};
use crate::nft::NftLint;
use crate::nft::context::{NftContext, NftFindings};
use crate::registry::Category;
use rulelint_nft::{Expr, Severity, Stmt};
use rulelint_parser::CodeInfo;
use std::net::IpAddr;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL459",
        name: "missing-endpoint-hairpin",
        severity: Severity::Warning,
        summary: "a kube-proxy endpoint chain DNATs without the rule that masquerades its own endpoint's traffic",
        docs: "## What it flags
In a whole `table ip|ip6 kube-proxy`, an endpoint chain
`endpoint-HASH-ns/svc/proto/port__IP/PORT` with a `dnat` and no earlier rule matching
`ip saddr IP` (`ip6 saddr` for IPv6): kube-proxy writes
`ip saddr IP jump mark-for-masquerade` (newer versions set the mark inline) before every
endpoint's DNAT.

## Why it matters
When a pod connects to a Service and is itself the chosen endpoint, the reply would go from
the pod to itself directly, bypassing the DNAT's reverse translation; the connection hangs.
The hairpin rule marks such packets so that `masquerading` rewrites their source to the node.
This is the nftables form of `RL415 missing-hairpin`.

## Example
```text
chain endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 {
	meta l4proto tcp dnat to 10.180.0.1:80
}
```

## Instead
```text
chain endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 {
	ip saddr 10.180.0.1 jump mark-for-masquerade
	meta l4proto tcp dnat to 10.180.0.1:80
}
```
Restart kube-proxy to rewrite its table, and find who edited it.

## Exceptions
Cut pastes, names kube-proxy cut short (ending in `...`) and chains without a DNAT (those are
empty or dangling: `RL451`, `RL457`) are not read.",
    },
    category: Category::Correctness,
    check,
};

fn saddr_is(expr: &Expr<'_>, right: &Expr<'_>, address: IpAddr) -> bool {
    let Expr::Payload {
        proto: "ip" | "ip6",
        field: "saddr",
    } = expr
    else {
        return false;
    };
    let Expr::Literal(text) = right else {
        return false;
    };
    let host = text
        .strip_suffix("/32")
        .or_else(|| text.strip_suffix("/128"))
        .unwrap_or(text);
    host.parse::<IpAddr>().is_ok_and(|a| a == address)
}

/// The address text of an endpoint chain's name: `10.180.0.1` of `...__10.180.0.1/80`.
fn address_text(name: &str) -> Option<&str> {
    let slash = name.rfind('/')?;
    let under = name[..slash].rfind("__")?;
    Some(&name[under + 2..slash])
}

/// `ip saddr ADDRESS` (or `/32`, `/128`) with the address written as `written`.
fn saddr_text_is(expr: &Expr<'_>, right: &Expr<'_>, written: &str) -> bool {
    let (
        Expr::Payload {
            proto: "ip" | "ip6",
            field: "saddr",
        },
        Expr::Literal(text),
    ) = (expr, right)
    else {
        return false;
    };
    text.strip_prefix(written)
        .is_some_and(|rest| matches!(rest, "" | "/32" | "/128"))
}

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let set = cx.ruleset();
    for table in cx.kube_proxy_tables() {
        if !cx.is_complete(table) {
            continue;
        }
        for &c in &set.tables[table.index()].chains {
            let name = cx.chain(c).name;
            if !name.starts_with("endpoint-") {
                continue;
            }
            let Some((dnat_rule, span, _)) = dnats(set, c).next() else {
                continue;
            };
            let saddrs = || {
                set.rules_of(c).take(dnat_rule).flat_map(|rule| {
                    set.statements_of(rule)
                        .iter()
                        .filter_map(|s| match &s.kind {
                            Stmt::Match {
                                left,
                                op: None | Some("=="),
                                right,
                            } => Some((left, right)),
                            _ => None,
                        })
                })
            };
            // kube-proxy writes the address as the name ends in it: equal text needs no parse
            // of each rule's address (the name's must parse, as `endpoint_of_name` asks).
            if let Some(written) = address_text(name)
                && written.parse::<IpAddr>().is_ok()
                && saddrs().any(|(left, right)| saddr_text_is(left, right, written))
            {
                continue;
            }
            let Some((address, _)) = endpoint_of_name(name) else {
                continue;
            };
            if saddrs().any(|(left, right)| saddr_is(left, right, address)) {
                continue;
            }
            let family = if address.is_ipv6() { "ip6" } else { "ip" };
            out.push_in(
                c,
                out.diagnostic(span, format!("endpoint {address} is DNATed without `{family} saddr {address}` marking its own traffic for masquerade before it: a pod that reaches itself through the Service gets no answer"))
                    .with_label(format!("DNAT of {name}"))
                    .with_help(format!("kube-proxy writes `{family} saddr {address} jump mark-for-masquerade` before the DNAT; restart it to rewrite its table")),
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
        let without = HEALTHY.replace("\t\tip saddr 10.180.0.1 jump mark-for-masquerade\n", "");
        let inline = HEALTHY.replace(
            "ip saddr 10.180.0.1 jump mark-for-masquerade",
            "ip saddr 10.180.0.1 meta mark set meta mark | 0x00004000",
        );
        let after = HEALTHY.replace(
            "\t\tip saddr 10.180.0.1 jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to 10.180.0.1:80\n",
            "\t\tmeta l4proto tcp dnat to 10.180.0.1:80\n\t\tip saddr 10.180.0.1 jump mark-for-masquerade\n",
        );
        let other_source = HEALTHY.replace("ip saddr 10.180.0.1 jump", "ip saddr 10.180.0.7 jump");
        let cut = &without[..without.len() - 2];
        assert_cases(
            &LINT,
            &[HEALTHY, &inline, cut],
            &[(&without, 1), (&after, 1), (&other_source, 1)],
        );
    }
}
