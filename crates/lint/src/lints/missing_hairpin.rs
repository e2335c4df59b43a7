//! RL415 missing-hairpin: an endpoint chain without the `-s <pod IP> -j KUBE-MARK-MASQ` rule
//! kube-proxy writes before every DNAT.

use crate::context::{Findings, LintContext};
use crate::kube::{Endpoint, ProxyMode};
use crate::registry::{Category, Lint};
use rulelint_parser::views::NatAddress;
use rulelint_parser::{CodeInfo, RuleId, RuleRef, Severity};
use std::net::IpAddr;

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL415",
        name: "missing-hairpin",
        severity: Severity::Warning,
        summary: "an endpoint chain lacks the rule that masquerades a pod reaching itself through its Service",
        docs: "## What it flags
A `KUBE-SEP-*` endpoint chain that a Service chain jumps to and that DNATs to one
`address:port`, but has no rule before the DNAT that marks traffic from that same address for
masquerading:
```text
-A KUBE-SEP-AAAAAAAAAAAAAAAA -s 10.244.1.5/32 -m comment --comment \"default/web:http\" -j KUBE-MARK-MASQ
```
Also flagged: the rule is there but its source is another address than the DNAT destination
(`-s` must be the endpoint's own IP, `/32` for IPv4, `/128` for IPv6).

kube-proxy writes this rule first in every endpoint chain, unconditionally, in every
iptables-mode version: 1.1 wrote `-s IP/32 -j MARK --set-xmark 0x4d415351/0xffffffff` (also
accepted here), 1.2 and later `-s IP -j KUBE-MARK-MASQ` (`-s IP/32` or `/128` as
iptables-save prints it). Large-cluster mode drops the rule's comment, not the rule.

## Why it matters
When a pod connects to its own Service and the load balancing picks the pod itself, the
packet is DNATed back to where it came from. Without source NAT the pod answers itself
directly, from its own address: the connection it opened to the cluster IP never sees a reply
and hangs. The masquerade rule makes the reply come back through the node, where conntrack
undoes the DNAT. Only this \"hairpin\" case breaks, so the Service looks healthy from every
other pod; it shows up as a pod that intermittently cannot reach its own Service (as often as
the balancing picks itself).

## Example
```text
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA
-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.1.5:8080
```

## Instead
```text
-A KUBE-SEP-AAAAAAAAAAAAAAAA -s 10.244.1.5/32 -m comment --comment \"default/web:http\" -j KUBE-MARK-MASQ
-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.1.5:8080
```
Restart kube-proxy so that it writes the chain again, and find what edited it.

## Known problems
The severity is a warning, not an error: the lint is sure that the rule is missing (kube-proxy
never leaves it out), but the harm is limited to endpoints on this node reached by
themselves, and the dump does not say which endpoints are local. The lint stays silent when
it cannot be sure the chain is kube-proxy's: no DNAT, a DNAT that is not one `address:port`
(`RL408 invalid-endpoint`'s finding), a DNAT without `-p` (kube-proxy always writes
`-m PROTO -p PROTO`), a chain no Service chain jumps to (`RL405 orphan-endpoint-chain`), and
nodes in IPVS mode (which has no endpoint chains; its hairpin is the `KUBE-LOOP-BACK` ipset).

## References
- https://github.com/kubernetes/kubernetes/blob/master/pkg/proxy/iptables/proxier.go
  (\"Handle traffic that loops back to the originator with SNAT\")
- https://kubernetes.io/docs/tasks/debug/debug-application/debug-service/#a-pod-fails-to-reach-itself-via-the-service-ip",
    },
    category: Category::Correctness,
    check,
};

/// What the rules before an endpoint chain's DNAT say about its hairpin rule.
enum Hairpin {
    /// A masquerade-marking rule from the endpoint's own address.
    Present,
    /// A masquerade-marking rule from a single other address: the first such rule.
    OtherSource(IpAddr, RuleId),
    /// None at all.
    Missing,
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let model = cx.kube();
    // kube-proxy's iptables mode only (IPVS mode writes no KUBE-SEP chains; leftovers there
    // are RL411's).
    if model.endpoints.is_empty() || model.layout.mode != ProxyMode::Iptables {
        return;
    }
    let set = cx.ruleset();
    let graph = cx.graph();
    for endpoint in &model.endpoints {
        let Some(dnat) = endpoint.dnat else {
            continue;
        };
        let chain = set.chain(endpoint.chain);
        // The common case first, read with the DNAT (`Endpoint::hairpin_as_written`): the
        // rule before the DNAT has `-s` with the DNAT's address as iptables-save prints both.
        if endpoint.hairpin_as_written {
            continue;
        }
        let dnat = set.rule(dnat);
        let Some(ip) = destination_ip(endpoint, dnat) else {
            continue;
        };
        if dnat.protocol().is_none_or(|p| p.negated) || dnat.has_unsupported_revision() {
            continue;
        }
        // Jumped to from a Service chain: a kube-proxy endpoint in use.
        if !graph
            .jumps_into(endpoint.chain)
            .any(|(from, _)| model.service_of_chain(from).is_some())
        {
            continue;
        }
        let before = chain.rules().take_while(|r| r.id != dnat.id);
        let hairpin = before.fold(Hairpin::Missing, |found, rule| match found {
            Hairpin::Present => found,
            _ => match marks_from(rule) {
                Some(source) if source == ip => Hairpin::Present,
                Some(source) => match found {
                    Hairpin::Missing => Hairpin::OtherSource(source, rule.id),
                    other => other,
                },
                None => found,
            },
        });
        if matches!(hairpin, Hairpin::Present) {
            continue;
        }
        let name = endpoint
            .name(set)
            .map(|n| n.into_owned())
            .or_else(|| {
                graph
                    .jumps_into(endpoint.chain)
                    .find_map(|(from, _)| model.service_of_chain(from))
                    .map(|s| s.display_name(set).into_owned())
            })
            .unwrap_or_else(|| "its Service".to_string());
        let host = if ip.is_ipv4() { "32" } else { "128" };
        let should = format!("-s {ip}/{host} -j KUBE-MARK-MASQ");
        let help = format!(
            "kube-proxy writes `-A {} {should}` before the DNAT of every endpoint chain; restart kube-proxy so that it writes the chain again, and find what edited it",
            chain.name()
        );
        match hairpin {
            Hairpin::Present => {}
            Hairpin::Missing => out.push(
                out.at_rule(
                    dnat,
                    format!(
                        "endpoint chain {} of {name} DNATs to {ip} without `{should}` before it: a pod that reaches itself through the Service gets no answer",
                        chain.name()
                    ),
                )
                .with_label("DNAT without the hairpin masquerade rule before it")
                .with_help(help),
            ),
            Hairpin::OtherSource(source, id) => {
                let rule = set.rule(id);
                out.push(
                    out.at_rule(
                        rule,
                        format!(
                            "endpoint chain {} of {name} marks traffic from {source} for masquerading but DNATs to {ip} (line {}): a pod that reaches itself through the Service gets no answer",
                            chain.name(),
                            cx.line(dnat.get().span.start)
                        ),
                    )
                    .with_label(format!("source {source}, not the endpoint {ip}"))
                    .with_help(help),
                );
            }
        }
    }
}

/// The one address of a DNAT's `--to-destination`; `None` when it is not exactly one address
/// (RL408 reports those).
fn destination_ip(endpoint: &Endpoint<'_>, dnat: RuleRef<'_, '_>) -> Option<IpAddr> {
    let text = endpoint.destination?;
    if dnat
        .target()?
        .options()
        .filter(|o| o.name() == "--to-destination")
        .count()
        != 1
    {
        return None;
    }
    let parsed = NatAddress::parse(text).ok()?;
    let first = parsed.first?;
    (parsed.last == Some(first)).then_some(first)
}

/// The single source address of a rule that marks for masquerading: `-s IP/32` (`/128`) with
/// `-j KUBE-MARK-MASQ`, or (kube-proxy 1.1) `-j MARK`.
fn marks_from(rule: RuleRef<'_, '_>) -> Option<IpAddr> {
    let target = rule.target()?;
    if !matches!(target.name(), "KUBE-MARK-MASQ" | "MARK") {
        return None;
    }
    let source = rule.source().filter(|s| !s.negated)?.value;
    (source.prefix_len() == source.max_prefix_len()).then_some(source.addr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    fn nat(sep: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]\n:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n{sep}COMMIT\n"
        )
    }

    const MASQ: &str = "-A KUBE-SEP-AAAAAAAAAAAAAAAA -s 10.244.1.5/32 -m comment --comment \"default/web:http\" -j KUBE-MARK-MASQ\n";
    const DNAT: &str = "-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.1.5:8080\n";

    #[test]
    fn cases() {
        let v6 = |s: &str| {
            s.replace("10.244.1.5/32", "fd00:10:244::5/128")
                .replace("10.244.1.5:8080", "[fd00:10:244::5]:8080")
                .replace("10.96.12.34/32", "fd00:10:96::1234/128")
        };
        let large = |s: &str| s.replace(" -m comment --comment \"default/web:http\"", "");
        let unreferenced = nat(DNAT).replace(
            "-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n",
            "",
        );
        assert_cases(
            &LINT,
            &[
                &nat(&format!("{MASQ}{DNAT}")),
                &v6(&nat(&format!("{MASQ}{DNAT}"))),
                &large(&nat(&format!("{MASQ}{DNAT}"))),
                // kube-proxy 1.1: MARK instead of KUBE-MARK-MASQ.
                &nat(&format!(
                    "{}{DNAT}",
                    MASQ.replace(
                        "-j KUBE-MARK-MASQ",
                        "-j MARK --set-xmark 0x4d415351/0xffffffff"
                    )
                )),
                // No DNAT, a broken DNAT, no -p: not sure it is kube-proxy's (RL408).
                &nat(MASQ),
                &nat(&DNAT.replace("10.244.1.5:8080", ":0")),
                &nat(&DNAT.replace("-p tcp ", "").replace("-m tcp ", "")),
                // Nothing jumps to it: RL405.
                &unreferenced,
            ],
            &[
                (&nat(DNAT), 1),
                (&v6(&nat(DNAT)), 1),
                (&large(&nat(DNAT)), 1),
                // After the DNAT: never runs.
                (&nat(&format!("{DNAT}{MASQ}")), 1),
                // Another source.
                (
                    &nat(&format!(
                        "{}{DNAT}",
                        MASQ.replace("10.244.1.5/32", "10.244.1.6/32")
                    )),
                    1,
                ),
                // A /24 source is not the host rule.
                (&nat(&format!("{}{DNAT}", MASQ.replace("/32", "/24"))), 1),
            ],
        );
    }

    #[test]
    fn message() {
        let found = run(&LINT, &nat(DNAT));
        assert_eq!(
            found[0].message,
            "endpoint chain KUBE-SEP-AAAAAAAAAAAAAAAA of default/web:http DNATs to 10.244.1.5 without `-s 10.244.1.5/32 -j KUBE-MARK-MASQ` before it: a pod that reaches itself through the Service gets no answer"
        );
    }
}
