//! RL459 missing-endpoint-hairpin: a kube-proxy endpoint chain that DNATs without first
//! marking the packets its own endpoint sends (a pod reaching itself through its Service).

use super::endpoint_address_mismatch::endpoint_of_name;
use crate::nft::NftLint;
use crate::nft::context::{Dnat, NftContext, NftFindings};
use crate::registry::Category;
use rulelint_nft::Severity;
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

/// Whether a matched source literal is `address` (`/32` and `/128` allowed).
fn saddr_is(text: &str, address: IpAddr) -> bool {
    let host = text
        .strip_suffix("/32")
        .or_else(|| text.strip_suffix("/128"))
        .unwrap_or(text);
    host.parse::<IpAddr>().is_ok_and(|a| a == address)
}

fn saddr_text_is(text: &str, written: &str) -> bool {
    text.strip_prefix(written)
        .is_some_and(|rest| matches!(rest, "" | "/32" | "/128"))
}

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let walked = cx.walked();
    for endpoint in walked.endpoints() {
        if !cx.is_complete(endpoint.table) {
            continue;
        }
        let c = endpoint.chain;
        let Some(&Dnat {
            rule: dnat_rule,
            span,
            ..
        }) = walked.dnats(endpoint).first()
        else {
            continue;
        };
        // The source matches of the rules before the DNAT's.
        let saddrs = || {
            walked
                .saddrs(endpoint)
                .iter()
                .take_while(|m| m.rule < dnat_rule)
                .map(|m| m.address)
        };
        // kube-proxy writes the address as the name ends in it: equal text needs no parse
        // of each rule's address (the name's must parse, as `endpoint_of_name` asks, which
        // splits the name the same way).
        if let Some((written, _)) = endpoint.written
            && written.parse::<IpAddr>().is_ok()
            && saddrs().any(|text| saddr_text_is(text, written))
        {
            continue;
        }
        let name = cx.chain(c).name;
        let Some((address, _)) = endpoint_of_name(name) else {
            continue;
        };
        if saddrs().any(|text| saddr_is(text, address)) {
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
