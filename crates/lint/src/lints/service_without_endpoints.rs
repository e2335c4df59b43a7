//! RL406 service-without-endpoints: a service chain that traffic reaches but that leads to no
//! endpoint, with no REJECT or DROP to stop that traffic.

use crate::context::{Findings, LintContext};
use crate::kube::Generation;
use crate::kube::names::{ServiceChainKind, is_endpoint_chain};
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, Severity, TableKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL406",
        name: "service-without-endpoints",
        severity: Severity::Error,
        summary: "a KUBE-SVC or KUBE-SVL chain that is jumped to but jumps to no endpoint",
        docs: "## What it flags
A `KUBE-SVC-*` chain, or a `KUBE-SVL-*`/`KUBE-XLB-*` chain (the endpoints on this node for
`Local` traffic policy), that some rule jumps to but that has no jump to a `KUBE-SEP-*` endpoint
chain, while nothing else stops the traffic: no \"has no endpoints\" `REJECT` for the Service in
filter, and for a Local chain no \"has no local endpoints\" `DROP` either.

## Why it matters
The packet walks through the chain without being translated and leaves nat with the Service's
virtual IP or node port as its destination. No pod owns that address: connections hang until
they time out, or reach whatever on the node listens on the port, instead of failing at once.
kube-proxy never writes this. A Service with no endpoints gets no `KUBE-SVC-*` chain at all but a
`REJECT` per address in filter (`KUBE-SERVICES`, `KUBE-EXTERNAL-SERVICES`), so that clients get
\"connection refused\" at once; a Local-policy Service with no endpoint on this node gets a
\"has no local endpoints\" `DROP`. An empty service chain means its rules were flushed or edited
by hand, or a restore was cut short.

## Example
```text
:KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]
-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW
-A KUBE-SVC-WEBWEBWEBWEBWEBW ! -s 10.244.0.0/16 -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ
```

## Instead
```text
-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA
```
or, when the Service really has no endpoints, no service chain and in filter
```text
-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable
```
Restart kube-proxy so that it writes the Service's rules again, and check the Service's
EndpointSlices.

## Exceptions
- kube-proxy before about 1.10 kept an empty `KUBE-SVC-*` chain for a Service without endpoints
  and rejected its traffic in filter; that is recognised by the filter `REJECT`. kube-proxy 1.2
  and older kept the empty chain with no `REJECT` at all (it had no filter `KUBE-SERVICES`
  chain). So when the dump has no filter `KUBE-SERVICES` chain (also a nat-only dump), only the
  layout from 1.25 on, where kube-proxy never writes an empty service chain, is checked.
- kube-proxy 1.22 and 1.23 with the alpha `ProxyTerminatingEndpoints` gate could keep the
  chain of a Service whose endpoints are all terminating without any endpoint jump; that is
  reported, since its traffic does go through untranslated.

## References
- https://github.com/kubernetes/kubernetes/pull/110290 (the \"has no local endpoints\" DROP
  moves from the service chain to filter)
- https://kubernetes.io/docs/reference/networking/virtual-ips/",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let kube = cx.kube();
    // A missing endpoint jump or REJECT may be in the part of a truncated paste or a
    // fragment that is not there.
    if kube.services.is_empty() || !cx.kube_tables_complete() {
        return;
    }
    let set = cx.ruleset();
    let graph = cx.graph();
    // Without filter's KUBE-SERVICES the "has no endpoints" REJECTs are unknown (a nat-only
    // dump), or kube-proxy predates them (1.2 and older kept empty service chains): check only
    // the layout that never writes an empty service chain.
    let rejects_known = cx
        .tables()
        .filter(|t| t.kind() == TableKind::Filter)
        .last()
        .is_some_and(|t| t.chain("KUBE-SERVICES").is_some());
    if !rejects_known && kube.layout.generation != Generation::Modern {
        return;
    }
    for service in &kube.services {
        if !service.no_endpoints_rules.is_empty() {
            continue;
        }
        for (kind, id) in service.chains.iter() {
            let local = match kind {
                ServiceChainKind::Cluster => false,
                ServiceChainKind::Local => true,
                ServiceChainKind::External | ServiceChainKind::Firewall => continue,
            };
            if local && !service.no_local_endpoints_rules.is_empty() {
                continue;
            }
            // The first rule that jumps here, for the message.
            let Some(first) = graph.jumps_into(id).map(|(_, j)| j.rule).min() else {
                continue;
            };
            // The model's endpoint jumps (to declared `KUBE-SEP-*` chains) answer most Services
            // without reading the chain's rules again; the scan by name stays for the rest.
            let modelled = if local {
                &service.local_endpoints[..]
            } else {
                &service.endpoints[..]
            };
            if modelled.iter().any(|j| set.rule(j.rule).get().chain == id) {
                continue;
            }
            let chain = set.chain(id);
            if chain
                .rules()
                .any(|r| r.target().is_some_and(|t| is_endpoint_chain(t.name())))
            {
                continue;
            }
            let name = chain.name();
            let svc = service.display_name(set);
            let from = set.rule(first);
            let line = cx.line(from.get().span.start);
            let via = from.chain().name();
            let message = if service.name.is_some() {
                format!(
                    "{name} of {svc} jumps to no endpoint: traffic sent to it (from {via}, line {line}) leaves nat untranslated"
                )
            } else {
                format!(
                    "{name} jumps to no endpoint: traffic sent to it (from {via}, line {line}) leaves nat untranslated"
                )
            };
            let help = if local {
                format!(
                    "kube-proxy writes one `-j KUBE-SEP-...` per endpoint on this node here; with none it writes a `\"{svc} has no local endpoints\"` DROP (in filter since 1.25, as `-j KUBE-MARK-DROP` in this chain before). Restart kube-proxy so that it writes the Service's rules again, and check its EndpointSlices"
                )
            } else {
                format!(
                    "kube-proxy writes one `-j KUBE-SEP-...` per endpoint here; a Service without endpoints gets no {name} at all but `-m comment --comment \"{svc} has no endpoints\" ... -j REJECT` rules in filter KUBE-SERVICES. Restart kube-proxy so that it writes the Service's rules again, and check its EndpointSlices"
                )
            };
            let d = out
                .diagnostic(cx.chain_span(chain), message)
                .in_chain(chain.get().table, id)
                .with_label("declared here; no rule in it jumps to a KUBE-SEP endpoint chain")
                .with_help(help);
            out.push(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    const NAT_HEAD: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-MARK-DROP - [0:0]\n:KUBE-SVC-WEBWEBWEBWEBWEBW - [0:0]\n:KUBE-SEP-AAAAAAAAAAAAAAAA - [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n-A KUBE-SEP-AAAAAAAAAAAAAAAA -p tcp -m comment --comment \"default/web:http\" -m tcp -j DNAT --to-destination 10.244.1.5:8080\n";
    const TO_SEP: &str = "-A KUBE-SVC-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http -> 10.244.1.5:8080\" -j KUBE-SEP-AAAAAAAAAAAAAAAA\n";
    const MASQ: &str = "-A KUBE-SVC-WEBWEBWEBWEBWEBW ! -s 10.244.0.0/16 -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-MARK-MASQ\n";

    fn dump(nat: &str, filter: Option<&str>) -> String {
        let filter = filter.map_or(String::new(), |lines| {
            format!(
                "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-EXTERNAL-SERVICES - [0:0]\n-A INPUT -j KUBE-SERVICES\n-A INPUT -j KUBE-EXTERNAL-SERVICES\n{lines}COMMIT\n"
            )
        });
        format!("{NAT_HEAD}{nat}COMMIT\n{filter}")
    }

    const REJECT: &str = "-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http has no endpoints\" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\n";

    /// A Local-policy Service reached by its node port.
    fn local(chain: &str, body: &str) -> String {
        format!(
            ":{chain} - [0:0]\n-A KUBE-NODEPORTS -p tcp -m comment --comment \"default/web:http\" -m tcp --dport 30080 -j {chain}\n{body}"
        )
    }

    #[test]
    fn cases() {
        let healthy = dump(&format!("{MASQ}{TO_SEP}"), Some(""));
        // kube-proxy before 1.10: empty chain, REJECT in filter.
        let old_empty = dump("", Some(REJECT));
        // No filter table, legacy layout: unknown.
        let nat_only_legacy = dump(MASQ, None);
        // Not jumped to: RL404's business.
        let unreached = format!(
            "{}COMMIT\n",
            NAT_HEAD.replace(
                "-A KUBE-SERVICES -d 10.96.12.34/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBWEBWEBWEBWEBW\n",
                ""
            )
        );
        // Local policy, no local endpoints: the DROP in the chain (before 1.25)...
        let xlb_drop = dump(
            &format!(
                "{TO_SEP}{}",
                local(
                    "KUBE-XLB-WEBWEBWEBWEBWEBW",
                    "-A KUBE-XLB-WEBWEBWEBWEBWEBW -m comment --comment \"default/web:http has no local endpoints\" -j KUBE-MARK-DROP\n"
                )
            ),
            Some(""),
        );
        // ... or in filter (1.25 on).
        let svl_filter_drop = dump(
            &format!("{TO_SEP}{}", local("KUBE-SVL-WEBWEBWEBWEBWEBW", "")),
            Some(
                "-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment \"default/web:http has no local endpoints\" -m addrtype --dst-type LOCAL -m tcp --dport 30080 -j DROP\n",
            ),
        );
        let empty = dump(MASQ, Some(""));
        let empty_local = dump(
            &format!("{TO_SEP}{}", local("KUBE-SVL-WEBWEBWEBWEBWEBW", "")),
            Some(""),
        );
        // No filter, but the layout from 1.25 on (KUBE-SVL exists): checked.
        let nat_only_modern = dump(
            &format!("{MASQ}{}", local("KUBE-SVL-WEBWEBWEBWEBWEBW", "")),
            None,
        );
        assert_cases(
            &LINT,
            &[
                &healthy,
                &old_empty,
                &nat_only_legacy,
                &unreached,
                &xlb_drop,
                &svl_filter_drop,
            ],
            &[(&empty, 1), (&empty_local, 1), (&nat_only_modern, 2)],
        );
    }

    #[test]
    fn message() {
        let found = run(&LINT, &dump(MASQ, Some("")));
        assert_eq!(
            found[0].message,
            "KUBE-SVC-WEBWEBWEBWEBWEBW of default/web:http jumps to no endpoint: traffic sent to it (from KUBE-SERVICES, line 13) leaves nat untranslated"
        );
    }
}
