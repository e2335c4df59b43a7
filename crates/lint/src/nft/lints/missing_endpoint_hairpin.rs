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

/// Whether `text` is an IPv4 address as `Ipv4Addr` parses one (four decimal octets of at most
/// 255, no leading zero), read without the general parser: it ran for each of 20,000
/// endpoint chains. `false` says only "ask the parser".
fn is_dotted_quad(text: &str) -> bool {
    // One pass over the bytes: the octets seen before this one, and this one's digits and value.
    let (mut dots, mut digits, mut value) = (0u32, 0u32, 0u32);
    for &b in text.as_bytes() {
        match b {
            b'0'..=b'9' => {
                // A leading zero (`01`, `00`) is refused.
                if digits == 1 && value == 0 {
                    return false;
                }
                digits += 1;
                value = value * 10 + u32::from(b - b'0');
                if value > 255 {
                    return false;
                }
            }
            b'.' if digits > 0 && dots < 3 => {
                dots += 1;
                digits = 0;
                value = 0;
            }
            _ => return false,
        }
    }
    dots == 3 && digits > 0
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
            && saddrs().any(|text| saddr_text_is(text, written))
            && (is_dotted_quad(written) || written.parse::<IpAddr>().is_ok())
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

    /// The quick IPv4 reading never accepts what the parser refuses, and accepts plain
    /// addresses.
    #[test]
    fn dotted_quad_agrees_with_the_parser() {
        let mut texts: Vec<String> = [
            "10.244.128.252",
            "0.0.0.0",
            "255.255.255.255",
            "256.1.1.1",
            "01.1.1.1",
            "1.1.1",
            "1.1.1.1.1",
            "1..1.1",
            "",
            ".",
            "1.1.1.1.",
            "a.b.c.d",
            "1.1.1.1/32",
            "fd00::1",
            "199.200.249.255",
            "300.0.0.1",
            "25a.1.1.1",
            "+1.1.1.1",
            "1.1.1.١",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for a in [
            "0", "00", "1", "9", "10", "99", "100", "199", "249", "250", "255", "256", "260",
            "300", "999", "1000",
        ] {
            texts.push(format!("{a}.1.{a}.0"));
        }
        for text in &texts {
            let parses = text.parse::<std::net::Ipv4Addr>().is_ok();
            assert_eq!(is_dotted_quad(text), parses, "{text:?}");
        }
    }
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
