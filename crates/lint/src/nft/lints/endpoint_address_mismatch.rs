//! RL458 endpoint-address-mismatch: a kube-proxy endpoint chain whose DNAT goes to another
//! address or port than the one its name was made from.

use crate::nft::NftLint;
use crate::nft::context::{Dnat, NftContext, NftFindings};
use crate::registry::Category;
use rulelint_nft::Severity;
use rulelint_parser::CodeInfo;
use std::net::IpAddr;

/// The declaration.
pub static LINT: NftLint = NftLint {
    info: CodeInfo {
        code: "RL458",
        name: "endpoint-address-mismatch",
        severity: Severity::Warning,
        summary: "a kube-proxy endpoint chain DNATs to another address or port than its name says",
        docs: "## What it flags
In `table ip|ip6 kube-proxy`, an endpoint chain `endpoint-HASH-ns/svc/proto/port__IP/PORT`
whose `dnat to ADDRESS:PORT` names another address or port than the `IP/PORT` at the end of
its name. (IPv6 endpoints are named with `.` for `:`.)

## Why it matters
kube-proxy makes the name from the endpoint it DNATs to (`servicePortEndpointChainNameBase`),
so the two always agree in what it writes. A difference means the rule was edited by hand or
by another tool: traffic for this endpoint goes somewhere the Service does not list.

## Example
```text
chain endpoint-5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80 {
	ip saddr 10.180.0.1 jump mark-for-masquerade
	meta l4proto tcp dnat to 10.180.0.9:80
}
```

## Instead
Find who edited kube-proxy's table; restart kube-proxy to rewrite it.

## Exceptions
Names kube-proxy cut short (ending in `...`) and DNATs to a map (`numgen ... map { ... }`) are
not compared.",
    },
    category: Category::Suspicious,
    check,
};

/// The endpoint `(address, port)` at the end of an endpoint chain's name.
pub(crate) fn endpoint_of_name(name: &str) -> Option<(IpAddr, Option<u16>)> {
    if !name.starts_with("endpoint-") {
        return None;
    }
    let (_, endpoint) = name.rsplit_once("__")?;
    let (address, port) = endpoint.rsplit_once('/')?;
    let address = address
        .parse::<IpAddr>()
        .ok()
        .or_else(|| address.replace('.', ":").parse::<IpAddr>().ok())?;
    Some((address, Some(port.parse().ok()?)))
}

/// The `(address, port)` of a `dnat to` literal: `10.0.0.1:80`, `10.0.0.1`, `[fd00::1]:80`.
fn dnat_target(to: &str) -> Option<(IpAddr, Option<u16>)> {
    if let Some(rest) = to.strip_prefix('[') {
        let (address, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((address.parse().ok()?, port));
    }
    if let Ok(address) = to.parse::<IpAddr>() {
        return Some((address, None));
    }
    let (address, port) = to.rsplit_once(':')?;
    Some((address.parse().ok()?, Some(port.parse().ok()?)))
}

/// Whether `to` is the `ADDRESS:PORT` that ends the chain name as `__ADDRESS/PORT` (`written`),
/// as kube-proxy writes both: then they agree without parsing either (IPv4; IPv6 names differ).
fn same_text(written: Option<(&str, &str)>, to: &str) -> bool {
    written.is_some_and(|(address, port)| {
        to.len() == address.len() + 1 + port.len()
            && to.starts_with(address)
            && to.as_bytes()[address.len()] == b':'
            && to.ends_with(port)
    })
}

fn check(cx: &NftContext<'_, '_>, out: &mut NftFindings<'_>) {
    let walked = cx.walked();
    for endpoint in walked.endpoints() {
        // A chain cut short may end in a half-written address.
        if !endpoint.closed {
            continue;
        }
        let c = endpoint.chain;
        for &Dnat { span, to, .. } in walked.dnats(endpoint) {
            if same_text(endpoint.written, to) {
                continue;
            }
            let Some((address, port)) = endpoint_of_name(cx.chain(c).name) else {
                break;
            };
            let Some((to_address, to_port)) = dnat_target(to) else {
                continue;
            };
            let port_differs = matches!((port, to_port), (Some(a), Some(b)) if a != b);
            if to_address == address && !port_differs {
                continue;
            }
            let named = match port {
                Some(p) if address.is_ipv6() => format!("[{address}]:{p}"),
                Some(p) => format!("{address}:{p}"),
                None => address.to_string(),
            };
            out.push_in(
                c,
                out.diagnostic(span, format!("endpoint chain for {named} DNATs to {to}"))
                    .with_label(format!("the chain's name says {named}"))
                    .with_help("kube-proxy names each endpoint chain after the address it DNATs to: this rule was edited; find who did, and restart kube-proxy to rewrite its table"),
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
        let v6 = "table ip6 kube-proxy {\n\tchain endpoint-ABCDEFGH-ns1/svc1/tcp/p80__fd00.10.180..1/80 {\n\t\tip6 saddr fd00:10:180::1 jump mark-for-masquerade\n\t\tmeta l4proto tcp dnat to [fd00:10:180::1]:80\n\t}\n}\n";
        let truncated = HEALTHY.replace("__10.180.0.1/80", "__10.180.0....");
        let other_address = HEALTHY.replace("dnat to 10.180.0.1:80", "dnat to 10.180.0.9:80");
        let other_port = HEALTHY.replace("dnat to 10.180.0.1:80", "dnat to 10.180.0.1:8080");
        assert_cases(
            &LINT,
            &[
                HEALTHY,
                v6,
                &truncated.replace("dnat to 10.180.0.1:80", "dnat to 10.180.0.9:80"),
            ],
            &[
                (&other_address, 1),
                (&other_port, 1),
                (
                    &v6.replace("dnat to [fd00:10:180::1]:80", "dnat to [fd00:10:180::2]:80"),
                    1,
                ),
            ],
        );
        assert_eq!(
            endpoint_of_name("endpoint-ABCDEFGH-ns1/svc1/tcp/p80__fd00.10.180..1/80"),
            Some(("fd00:10:180::1".parse().unwrap(), Some(80)))
        );
    }
}
