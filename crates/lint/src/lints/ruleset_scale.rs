//! RL503 ruleset-scale: a ruleset large enough to make iptables mode slow.

use crate::context::{Findings, LintContext};
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, Severity, TableKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL503",
        name: "ruleset-scale",
        severity: Severity::Info,
        summary: "a ruleset large enough that iptables-mode sync time and per-packet matching suffer",
        docs: "## What it flags
- More than 10,000 rules in all (info).
- A `KUBE-SERVICES` chain of more than 1,000 rules (info) or more than 5,000 rules (warning).

## Why it matters
kube-proxy in iptables mode rewrites its rules on every sync, and each new connection to a
Service is matched against the `KUBE-SERVICES` rules one by one. Past a few thousand Services,
syncs take seconds to minutes and endpoint changes reach the node late.

## Example
A node of a cluster with 6,000 Services: `KUBE-SERVICES` holds one rule per Service port.

## Instead
Switch kube-proxy to nftables mode (Kubernetes 1.31+: Services matched with one map lookup) or
IPVS mode; or split large Services and remove unused ones.",
    },
    category: Category::Performance,
    check,
};

const TOTAL_RULES_INFO: usize = 10_000;
const SERVICE_RULES_INFO: usize = 1_000;
const SERVICE_RULES_WARNING: usize = 5_000;

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let total: usize = cx.tables().map(|t| t.rule_count()).sum();
    let services = cx
        .tables()
        .filter(|t| t.kind() == TableKind::Nat)
        .find_map(|t| t.chain("KUBE-SERVICES"));
    let service_rules = services.map_or(0, |c| c.rule_count());
    let severity = if service_rules > SERVICE_RULES_WARNING {
        Severity::Warning
    } else if service_rules > SERVICE_RULES_INFO || total > TOTAL_RULES_INFO {
        Severity::Info
    } else {
        return;
    };
    let message = if services.is_some() {
        format!(
            "{total} rules, {service_rules} of them in KUBE-SERVICES: iptables-mode kube-proxy rewrites them all on every sync and matches service rules one by one"
        )
    } else {
        format!("{total} rules: every sync rewrites them all and packets are matched rule by rule")
    };
    let (span, located) = match services {
        Some(c) => (cx.chain_span(c), Some((c.get().table, c.id))),
        None => match cx.tables().max_by_key(|t| t.rule_count()) {
            Some(t) => (t.get().header, None),
            None => return,
        },
    };
    let mut d = out
        .diagnostic(span, message)
        .with_label(if services.is_some() {
            "the service dispatch chain"
        } else {
            "the largest table"
        })
        .with_help("consider kube-proxy's nftables mode (one map lookup per packet) or IPVS mode; remove Services and rules that are no longer used");
    d.severity = severity;
    if let Some((table, chain)) = located {
        d = d.in_chain(table, chain);
    }
    out.push(d);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter, run};

    fn kube_services(rules: usize) -> String {
        let mut text = String::from(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n",
        );
        for i in 0..rules {
            text.push_str(&format!(
                "-A KUBE-SERVICES -d 10.96.{}.{}/32 -p tcp --dport 80 -j ACCEPT\n",
                i / 250,
                i % 250
            ));
        }
        text.push_str("COMMIT\n");
        text
    }

    #[test]
    fn cases() {
        let many: String = (0..10_001)
            .map(|i| format!("-A INPUT -s 10.{}.{}.1 -j ACCEPT\n", i / 250, i % 250))
            .collect();
        assert_cases(
            &LINT,
            &[&filter("-A INPUT -j ACCEPT\n"), &kube_services(1_000)],
            &[(&kube_services(1_001), 1), (&filter(&many), 1)],
        );
    }

    #[test]
    fn severity_by_threshold() {
        assert_eq!(
            run(&LINT, &kube_services(1_001))[0].severity,
            Severity::Info
        );
        let big = run(&LINT, &kube_services(5_001));
        assert_eq!(big[0].severity, Severity::Warning);
        assert!(
            big[0]
                .message
                .starts_with("5002 rules, 5001 of them in KUBE-SERVICES")
        );
    }
}
