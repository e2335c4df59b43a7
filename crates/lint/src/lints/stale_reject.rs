//! RL414 stale-reject: filter rejects a Service port as having no endpoints while nat still
//! dispatches the same address and port (or node port) to a service chain with endpoints.

use crate::context::{Findings, LintContext};
use crate::kube::names::{CommentRole, comments, service_comment};
use crate::kube::{AddressKind, KubeModel, ProxyMode, Service};
use crate::registry::{Category, Lint};
use ipnet::IpNet;
use rulelint_parser::views::PortRange;
use rulelint_parser::{CodeInfo, RuleId, RuleRef, Severity, TableKind};
use rustc_hash::FxHashMap;

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL414",
        name: "stale-reject",
        severity: Severity::Error,
        summary: "filter rejects a Service port as having no endpoints while nat still sends its traffic to endpoints",
        docs: "## What it flags
A kube-proxy \"has no endpoints\" `REJECT` in filter `KUBE-SERVICES` (cluster IPs) or
`KUBE-EXTERNAL-SERVICES` (external IPs, load-balancer IPs, node ports) for a Service port
that nat still dispatches to a service chain with endpoints:
- the `REJECT` has the same destination address, protocol and port as a dispatch rule of nat
  `KUBE-SERVICES` (`-d 10.96.12.34/32 -p tcp --dport 80`), or
- it is a node-port `REJECT` (`-m addrtype --dst-type LOCAL -p tcp --dport 30080`) for a node
  port that nat `KUBE-NODEPORTS` dispatches, or
- its comment names a Service port (`default/web:http has no endpoints`) whose nat chains jump
  to endpoints.

Addresses and ports are compared first, so the lint works without comments; the comment adds
the case of a `REJECT` left over for a port number the Service no longer uses. The service
chain must jump to at least one `KUBE-SEP-*` chain (its own or, for `KUBE-EXT-*`, through the
Service's `KUBE-SVC-*`/`KUBE-SVL-*`). The \"has no local endpoints\" `DROP` of a Local-policy
Service is not a `REJECT` and is not flagged: it goes together with nat dispatch by design.

## Why it matters
kube-proxy writes exactly one of the two for a Service port in each sync: nat rules when the
port has endpoints, the filter `REJECT` when it has none (kube-proxy since 1.10; older
versions kept an empty `KUBE-SVC-*` chain beside the `REJECT`, which has no endpoint jump and
is not flagged). Both at once mean that one table was written by a sync that the other did not
see, a partial restore or a hand edit:
- the Service lost its endpoints and nat was not rewritten: new connections still go to pods
  that are gone, and time out instead of being refused;
- or the Service has endpoints again and filter was not rewritten: traffic that filter sees
  before nat has translated it (node ports and external IPs reached from outside, traffic
  from the node itself on some kernels) is refused while the Service looks healthy.

## Example
```text
*nat
-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA
*filter
-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable
```

## Instead
One of the two, as the Service's EndpointSlices say: the nat rules and no `REJECT`, or the
`REJECT` and no nat chains. Restart kube-proxy: its next full sync rewrites both tables from
the API server's state. Then find what interrupted the earlier sync (an `iptables-restore`
that failed on one table, a script that restored an old copy of one table).

## Exceptions
- Nodes in IPVS mode are skipped: kube-proxy's IPVS mode writes no such `REJECT`, and one left
  from iptables mode is `RL411 mixed-proxy-mode`'s finding.
- Only `REJECT` rules in filter `KUBE-SERVICES` and `KUBE-EXTERNAL-SERVICES` are read.

## References
- https://github.com/kubernetes/kubernetes/blob/master/pkg/proxy/iptables/proxier.go (the
  \"has no endpoints\" rules and the dispatch rules are written from the same `hasEndpoints`)",
    },
    category: Category::Correctness,
    check,
};

/// A way into a Service port: destination address (none for node ports), protocol, port.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key<'a> {
    address: Option<IpNet>,
    protocol: &'a str,
    port: PortRange,
}

/// Whether a Service port's chains jump to at least one endpoint.
fn has_endpoints(service: &Service<'_>) -> bool {
    !service.endpoints.is_empty() || !service.local_endpoints.is_empty()
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let model = cx.kube();
    // kube-proxy's iptables mode only. IPVS mode writes no "has no endpoints" REJECT; one left
    // over from iptables mode is RL411's.
    if model.layout.mode != ProxyMode::Iptables {
        return;
    }
    let Some(filter) = cx.tables().filter(|t| t.kind() == TableKind::Filter).last() else {
        return;
    };
    // filter's REJECTs with the (address, protocol, port) each guards, in order. They are few
    // (Services without endpoints) beside the dispatch rules of every Service port: the map
    // holds their keys, and the model's addresses are looked up in it.
    let mut rejects: Vec<(RuleRef<'_, '_>, Option<Key<'_>>)> = Vec::new();
    for name in ["KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES"] {
        let Some(chain) = filter.chain(name) else {
            continue;
        };
        for rule in chain.rules() {
            if rule.target().is_some_and(|t| t.name() == "REJECT") {
                rejects.push((rule, reject_key(rule)));
            }
        }
    }
    if rejects.is_empty() {
        return;
    }
    // For each guarded key, the first dispatch rule to a Service port with endpoints (by
    // (address, protocol, port); node ports by (protocol, port)), in the model's order.
    let mut dispatched: FxHashMap<Key<'_>, Option<(usize, RuleId)>> = rejects
        .iter()
        .filter_map(|&(_, key)| key.map(|k| (k, None)))
        .collect();
    // "has no endpoints" REJECTs whose comment names a Service port with endpoints.
    let mut named: FxHashMap<RuleId, usize> = FxHashMap::default();
    for (i, service) in model.services.iter().enumerate() {
        if service.hash.is_none() || !has_endpoints(service) {
            continue;
        }
        for address in &service.addresses {
            let (Some(protocol), Some(port)) = (address.protocol, address.port) else {
                continue;
            };
            let address_key = match address.kind {
                AddressKind::NodePort => None,
                _ => match address.address {
                    Some(a) => Some(a),
                    None => continue,
                },
            };
            if let Some(first @ None) = dispatched.get_mut(&Key {
                address: address_key,
                protocol,
                port,
            }) {
                *first = Some((i, address.rule));
            }
        }
        for &rule in &service.no_endpoints_rules {
            named.insert(rule, i);
        }
    }
    for (rule, key) in rejects {
        let found = key
            .and_then(|key| dispatched.get(&key).copied().flatten())
            .or_else(|| named.get(&rule.id).map(|&i| (i, first_dispatch(model, i))));
        if let Some((i, dispatch)) = found {
            report(cx, out, model, rule, i, dispatch);
        }
    }
}

/// The (address, protocol, port) a REJECT guards; node-port REJECTs (`--dst-type LOCAL`) have
/// no address.
fn reject_key<'a>(rule: RuleRef<'_, 'a>) -> Option<Key<'a>> {
    let protocol = rule.protocol().filter(|p| !p.negated)?.value;
    let port = rule
        .destination_ports()
        .filter(|p| !p.negated && p.value.len() == 1)?
        .value[0];
    let address = match rule.destination() {
        Some(d) if !d.negated => Some(d.value),
        Some(_) => return None,
        None if rule
            .dst_type()
            .is_some_and(|t| !t.negated && t.value == "LOCAL") =>
        {
            None
        }
        None => return None,
    };
    Some(Key {
        address,
        protocol,
        port,
    })
}

/// The first dispatch rule of a Service port, or its first endpoint jump when nat does not
/// dispatch it (for the message).
fn first_dispatch(model: &KubeModel<'_>, i: usize) -> RuleId {
    let service = &model.services[i];
    service
        .addresses
        .first()
        .map(|a| a.rule)
        .or_else(|| service.endpoints.first().map(|j| j.rule))
        .or_else(|| service.local_endpoints.first().map(|j| j.rule))
        .unwrap_or(RuleId(0))
}

fn report(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    model: &KubeModel<'_>,
    rule: RuleRef<'_, '_>,
    i: usize,
    dispatch: RuleId,
) {
    let set = cx.ruleset();
    let service = &model.services[i];
    let svc = service.display_name(set);
    let endpoints = Service::balanced(&service.endpoints)
        .count()
        .max(Service::balanced(&service.local_endpoints).count());
    let dispatch = set.rule(dispatch);
    let nat_line = cx.line(dispatch.get().span.start);
    let via = dispatch.chain().name();
    let target = dispatch.target().map_or("", |t| t.name());
    // The REJECT's own comment, when it names another Service port.
    let rejected = comments(rule)
        .find_map(|c| {
            service_comment(&c)
                .filter(|(_, role)| *role == CommentRole::NoEndpoints)
                .map(|(n, _)| n.to_string())
        })
        .filter(|n| *n != svc);
    let what = match &rejected {
        Some(other) => format!("{svc} (the REJECT names {other})"),
        None => svc.to_string(),
    };
    let chain = rule.chain().name();
    let message = format!(
        "filter {chain} rejects {what} as having no endpoints, but nat {via} (line {nat_line}) still sends its traffic to {target}, which has {endpoints} endpoint{}: one of the two tables is stale",
        if endpoints == 1 { "" } else { "s" }
    );
    out.push(
        out.at_rule(rule, message)
            .with_label(format!(
                "\"has no endpoints\" REJECT; nat dispatches the same Service port at line {nat_line}"
            ))
            .with_help(format!(
                "kube-proxy writes either nat rules (endpoints exist) or this REJECT (none exist) for a Service port, never both; restart kube-proxy so that one full sync rewrites both tables, check {svc}'s EndpointSlices, and find what cut the earlier sync short"
            )),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    const NAT: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]\n:KUBE-EXT-WEBWEBWEBWEBWEBW - [0:0]\n:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n-A KUBE-EXT-WEBWEBWEBWEBWEBW -m comment --comment \"masquerade traffic for default/web:http external destinations\" -j KUBE-MARK-MASQ\n-A KUBE-EXT-WEBWEBWEBWEBWEBW -j KUBE-SVC-WEBWEBWEBWEBWEBW\n-A KUBE-NODEPORTS -p tcp -m comment --comment \"default/web:http\" -m tcp --dport 30080 -j KUBE-EXT-WEBWEBWEBWEBWEBW\n-A KUBE-SEP-AAAAAAAAAAAAAAAA -s 10.244.1.5/32 -m comment --comment \"default/web:http\" -j KUBE-MARK-MASQ\n-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.1.5:8080\n-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n";
    const TO_SEP: &str = "-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n";
    const CLUSTER_REJECT: &str = "-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\n";
    const NODEPORT_REJECT: &str = "-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment \"default/web:http has no endpoints\" -m addrtype --dst-type LOCAL -m tcp --dport 30080 -j REJECT --reject-with icmp-port-unreachable\n";

    fn dump(svc: &str, filter: &str) -> String {
        format!(
            "{NAT}{svc}COMMIT\n*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-EXTERNAL-SERVICES - [0:0]\n-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n{filter}COMMIT\n"
        )
    }

    fn strip_comments(text: &str) -> String {
        text.lines()
            .map(|l| match l.find(" -m comment --comment \"") {
                Some(at) => {
                    let rest = &l[at + " -m comment --comment \"".len()..];
                    let end = rest.find('"').map_or(rest.len(), |e| e + 1);
                    format!("{}{}", &l[..at], &rest[end..])
                }
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    }

    #[test]
    fn cases() {
        let other_port = CLUSTER_REJECT.replace("--dport 80", "--dport 81");
        let other_service = other_port.replace("default/web:http", "default/api:http");
        let udp = CLUSTER_REJECT
            .replace("-p tcp", "-p udp")
            .replace("-m tcp", "-m udp");
        let local_drop = NODEPORT_REJECT
            .replace("has no endpoints", "has no local endpoints")
            .replace("-j REJECT --reject-with icmp-port-unreachable", "-j DROP");
        assert_cases(
            &LINT,
            &[
                &dump(TO_SEP, ""),
                // Before 1.10: an empty service chain beside the REJECT (RL406 knows it).
                &dump("", CLUSTER_REJECT),
                &dump("", NODEPORT_REJECT),
                // Another Service port (name and port differ), another protocol.
                &dump(TO_SEP, &other_service),
                &dump(TO_SEP, &udp.replace("default/web:http", "default/web:dns")),
                // Local policy: the DROP goes with nat dispatch.
                &dump(TO_SEP, &local_drop),
            ],
            &[
                (&dump(TO_SEP, CLUSTER_REJECT), 1),
                (&dump(TO_SEP, NODEPORT_REJECT), 1),
                (
                    &dump(TO_SEP, &format!("{CLUSTER_REJECT}{NODEPORT_REJECT}")),
                    2,
                ),
                // Without comments, by address and port alone.
                (
                    &strip_comments(&dump(TO_SEP, &format!("{CLUSTER_REJECT}{NODEPORT_REJECT}"))),
                    2,
                ),
                // By name alone: a REJECT for a port the Service no longer has.
                (&dump(TO_SEP, &other_port), 1),
            ],
        );
    }

    #[test]
    fn message() {
        let found = run(&LINT, &dump(TO_SEP, CLUSTER_REJECT));
        assert_eq!(
            found[0].message,
            "filter KUBE-SERVICES rejects default/web:http as having no endpoints, but nat KUBE-SERVICES (line 19) still sends its traffic to KUBE-SVC-WEBWEBWEBWEBWEBW, which has 1 endpoint: one of the two tables is stale"
        );
    }
}
