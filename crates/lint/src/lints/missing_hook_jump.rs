//! RL402 missing-hook-jump: a built-in chain lacks a jump that kube-proxy or kubelet installs.

use crate::context::{Findings, LintContext};
use crate::kube::{Generation, ProxyMode};
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainRef, CodeInfo, Severity, TableKind, TableRef};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL402",
        name: "missing-hook-jump",
        severity: Severity::Error,
        summary: "a built-in chain lacks a jump that kube-proxy or kubelet installs",
        docs: "## What it flags
A built-in chain of a complete `nat` or `filter` table on a Kubernetes node that lacks a jump
kube-proxy or kubelet installs there, while the chain the jump leads to exists:

| table | built-in chain | jump to | written by |
|-------|----------------|---------|------------|
| nat | `PREROUTING`, `OUTPUT` | `KUBE-SERVICES` (\"kubernetes service portals\") | kube-proxy |
| nat | `POSTROUTING` | `KUBE-POSTROUTING` (\"kubernetes postrouting rules\") | kube-proxy, kubelet |
| filter | `INPUT`, `FORWARD`, `OUTPUT` | `KUBE-PROXY-FIREWALL` (1.25+) | kube-proxy |
| filter | `INPUT` | `KUBE-NODEPORTS` (\"health check service ports\"), `KUBE-EXTERNAL-SERVICES` | kube-proxy |
| filter | `FORWARD` | `KUBE-FORWARD`, `KUBE-SERVICES`, `KUBE-EXTERNAL-SERVICES` | kube-proxy |
| filter | `OUTPUT` | `KUBE-SERVICES` | kube-proxy |
| filter | `INPUT`, `OUTPUT` | `KUBE-FIREWALL` | kubelet |

A declared kube-proxy chain that nothing hooks is the usual sign. In `nat`, Service chains
(`KUBE-SVC-*`, `KUBE-SEP-*`, ...) without `KUBE-SERVICES` or without its hooks count too. The
finding is on the built-in chain's declaration and names the exact rule that should be there;
a jump from a chain the built-in chain reaches counts as present.

Only the jumps of the layout the dump shows are expected: the `FORWARD` jumps to
`KUBE-SERVICES` and `KUBE-EXTERNAL-SERVICES` only on layouts that have the filter
`KUBE-NODEPORTS` chain or `KUBE-PROXY-FIREWALL` (older kube-proxy hooked filter
`KUBE-SERVICES` from `OUTPUT` alone). In IPVS mode the expected set is kube-proxy's IPVS one:
the `nat` jumps, `KUBE-FORWARD`, `KUBE-NODE-PORT` (\"kubernetes health check rules\"),
`KUBE-PROXY-FIREWALL` from `INPUT`, `KUBE-IPVS-FILTER`, `KUBE-IPVS-OUT-FILTER`, and kubelet's
`KUBE-FIREWALL`. In kube-proxy's old userspace mode it is that mode's set (`PREROUTING` and
`OUTPUT` to `KUBE-PORTALS-CONTAINER`/`-HOST` and `KUBE-NODEPORT-CONTAINER`/`-HOST`, `INPUT` to
`KUBE-NODEPORT-NON-LOCAL`) with kubelet's. On a node whose Services kube-router's proxy or
another proxy serves, only kubelet's jumps are expected. The mode is decided first
(`rulelint services` prints it): a node is not held to the rules of a mode it does not run.

## Why it matters
Without the hook no packet reaches the chain: without `PREROUTING -> KUBE-SERVICES` no Service
is reachable from pods or from outside, without `OUTPUT -> KUBE-SERVICES` not from the node,
without `POSTROUTING -> KUBE-POSTROUTING` nothing is masqueraded, without `FORWARD ->
KUBE-FORWARD` forwarded Service traffic falls to the policy, and without `INPUT ->
KUBE-FIREWALL` the martian and marked-packet drops do nothing. The chains look intact, so the
node seems healthy until traffic fails. Hooks go missing when a firewall service
(firewalld, iptables-services, ufw) reloads or a script flushes the built-in chains and
restores its own rules, or when a saved ruleset from before kube-proxy ran is restored.

## Example
```text
*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
```

## Instead
```text
-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
```
Restart kube-proxy (and kubelet for `KUBE-FIREWALL`, `KUBE-POSTROUTING` before 1.28): they
check their jumps on every sync and insert missing ones at the top of the built-in chain.
Then find what removed them (a firewall reload, a restored ruleset) and make it keep them.

## Exceptions
Partial tables (headerless fragments, restore input) are skipped: their built-in chains are
not shown whole. Jumps of other generations are not expected, and IPVS mode is checked for
the jumps every IPVS version writes only.",
    },
    category: Category::Correctness,
    check,
};

/// When a hook is expected, beyond its chain existing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    /// The target chain exists in the table.
    Declared,
    /// nat `KUBE-SERVICES`: it exists, or Service chains do.
    Services,
    /// filter `FORWARD` service hooks: the target exists and the layout is one that writes them.
    ForwardEra,
}

/// One jump from a built-in chain that kube-proxy or kubelet installs.
struct Hook {
    table: TableKind,
    from: &'static str,
    to: &'static str,
    /// The rule as iptables-save prints it.
    rule: &'static str,
    /// The rule of layouts before `KUBE-EXTERNAL-SERVICES` (kube-proxy before 1.10), if different.
    old_rule: Option<&'static str>,
    kubelet: bool,
    when: When,
}

const fn hook(
    table: TableKind,
    from: &'static str,
    to: &'static str,
    rule: &'static str,
    when: When,
) -> Hook {
    Hook {
        table,
        from,
        to,
        rule,
        old_rule: None,
        kubelet: false,
        when,
    }
}

const NAT_PREROUTING: Hook = hook(
    TableKind::Nat,
    "PREROUTING",
    "KUBE-SERVICES",
    "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
    When::Services,
);
const NAT_OUTPUT: Hook = hook(
    TableKind::Nat,
    "OUTPUT",
    "KUBE-SERVICES",
    "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
    When::Services,
);
const NAT_POSTROUTING: Hook = hook(
    TableKind::Nat,
    "POSTROUTING",
    "KUBE-POSTROUTING",
    "-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING",
    When::Declared,
);
const INPUT_FIREWALL: Hook = Hook {
    kubelet: true,
    ..hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-FIREWALL",
        "-A INPUT -j KUBE-FIREWALL",
        When::Declared,
    )
};
const OUTPUT_FIREWALL: Hook = Hook {
    kubelet: true,
    ..hook(
        TableKind::Filter,
        "OUTPUT",
        "KUBE-FIREWALL",
        "-A OUTPUT -j KUBE-FIREWALL",
        When::Declared,
    )
};
const FORWARD_FORWARD: Hook = hook(
    TableKind::Filter,
    "FORWARD",
    "KUBE-FORWARD",
    "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD",
    When::Declared,
);

/// iptables mode, in the order kube-proxy lists them.
const IPTABLES_HOOKS: &[Hook] = &[
    NAT_PREROUTING,
    NAT_OUTPUT,
    NAT_POSTROUTING,
    hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-PROXY-FIREWALL",
        "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL",
        When::Declared,
    ),
    hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-NODEPORTS",
        "-A INPUT -m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS",
        When::Declared,
    ),
    hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-EXTERNAL-SERVICES",
        "-A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES",
        When::Declared,
    ),
    INPUT_FIREWALL,
    hook(
        TableKind::Filter,
        "FORWARD",
        "KUBE-PROXY-FIREWALL",
        "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL",
        When::Declared,
    ),
    FORWARD_FORWARD,
    hook(
        TableKind::Filter,
        "FORWARD",
        "KUBE-SERVICES",
        "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
        When::ForwardEra,
    ),
    hook(
        TableKind::Filter,
        "FORWARD",
        "KUBE-EXTERNAL-SERVICES",
        "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES",
        When::ForwardEra,
    ),
    hook(
        TableKind::Filter,
        "OUTPUT",
        "KUBE-PROXY-FIREWALL",
        "-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL",
        When::Declared,
    ),
    Hook {
        old_rule: Some(
            "-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
        ),
        ..hook(
            TableKind::Filter,
            "OUTPUT",
            "KUBE-SERVICES",
            "-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
            When::Declared,
        )
    },
    OUTPUT_FIREWALL,
];

/// kube-proxy's userspace mode (`pkg/proxy/userspace/proxier.go`, `iptablesInit`), with
/// kubelet's jumps.
const USERSPACE_HOOKS: &[Hook] = &[
    hook(
        TableKind::Nat,
        "PREROUTING",
        "KUBE-PORTALS-CONTAINER",
        "-A PREROUTING -m comment --comment \"handle ClusterIPs; NOTE: this must be before the NodePort rules\" -j KUBE-PORTALS-CONTAINER",
        When::Declared,
    ),
    hook(
        TableKind::Nat,
        "PREROUTING",
        "KUBE-NODEPORT-CONTAINER",
        "-A PREROUTING -m addrtype --dst-type LOCAL -m comment --comment \"handle service NodePorts; NOTE: this must be the last rule in the chain\" -j KUBE-NODEPORT-CONTAINER",
        When::Declared,
    ),
    hook(
        TableKind::Nat,
        "OUTPUT",
        "KUBE-PORTALS-HOST",
        "-A OUTPUT -m comment --comment \"handle ClusterIPs; NOTE: this must be before the NodePort rules\" -j KUBE-PORTALS-HOST",
        When::Declared,
    ),
    hook(
        TableKind::Nat,
        "OUTPUT",
        "KUBE-NODEPORT-HOST",
        "-A OUTPUT -m addrtype --dst-type LOCAL -m comment --comment \"handle service NodePorts; NOTE: this must be the last rule in the chain\" -j KUBE-NODEPORT-HOST",
        When::Declared,
    ),
    NAT_POSTROUTING,
    hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-NODEPORT-NON-LOCAL",
        "-A INPUT -m comment --comment \"Ensure that non-local NodePort traffic can flow\" -j KUBE-NODEPORT-NON-LOCAL",
        When::Declared,
    ),
    INPUT_FIREWALL,
    OUTPUT_FIREWALL,
];

/// kubelet's jumps alone: a node whose Services another proxy serves (kube-router, Cilium).
const KUBELET_HOOKS: &[Hook] = &[NAT_POSTROUTING, INPUT_FIREWALL, OUTPUT_FIREWALL];

/// IPVS mode: the jumps every IPVS version that has the target chain writes.
const IPVS_HOOKS: &[Hook] = &[
    NAT_PREROUTING,
    NAT_OUTPUT,
    NAT_POSTROUTING,
    hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-NODE-PORT",
        "-A INPUT -m comment --comment \"kubernetes health check rules\" -j KUBE-NODE-PORT",
        When::Declared,
    ),
    hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-PROXY-FIREWALL",
        "-A INPUT -m comment --comment \"kube-proxy firewall rules\" -j KUBE-PROXY-FIREWALL",
        When::Declared,
    ),
    hook(
        TableKind::Filter,
        "INPUT",
        "KUBE-IPVS-FILTER",
        "-A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER",
        When::Declared,
    ),
    INPUT_FIREWALL,
    FORWARD_FORWARD,
    hook(
        TableKind::Filter,
        "OUTPUT",
        "KUBE-IPVS-OUT-FILTER",
        "-A OUTPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-OUT-FILTER",
        When::Declared,
    ),
    OUTPUT_FIREWALL,
];

/// Whether a built-in chain reaches `target`: directly (the usual case, no allocation) or
/// through chains it jumps to.
fn reaches(cx: &LintContext<'_, '_>, from: ChainRef<'_, '_>, target: ChainRef<'_, '_>) -> bool {
    from.rules()
        .any(|r| r.target().is_some_and(|t| t.name() == target.name()))
        || cx
            .graph()
            .reachable_from(cx.ruleset(), from.id)
            .any(|c| c == target.id)
}

/// Facts about the layout of one table that decide which hooks it should have.
struct TableFacts {
    /// nat: Service chains exist (`KUBE-SVC-*`, ...).
    service_chains: usize,
    /// filter: the layout writes the FORWARD service hooks.
    forward_era: bool,
    /// filter: `KUBE-EXTERNAL-SERVICES` exists (kube-proxy 1.10+: ctstate NEW on the hooks).
    external_services: bool,
}

fn facts(cx: &LintContext<'_, '_>, table: TableRef<'_, '_>) -> TableFacts {
    let kube = cx.kube();
    let has = |name| table.chain(name).is_some();
    let forward_era = table.kind() == TableKind::Filter
        && (kube.layout.generation == Generation::Modern
            || has("KUBE-NODEPORTS")
            || has("KUBE-PROXY-FIREWALL")
            || table.chain("FORWARD").is_some_and(|f| {
                f.rules().any(|r| {
                    r.target()
                        .is_some_and(|t| t.name() == "KUBE-EXTERNAL-SERVICES")
                })
            }));
    let service_chains = if table.kind() == TableKind::Nat {
        kube.services
            .iter()
            .filter(|s| {
                s.chains
                    .iter()
                    .any(|(_, c)| cx.ruleset().chain(c).get().table == table.id)
            })
            .count()
    } else {
        0
    };
    TableFacts {
        service_chains,
        forward_era,
        external_services: has("KUBE-EXTERNAL-SERVICES"),
    }
}

/// The hooks of the node's proxy mode; `None` when it is not a Kubernetes node.
fn hooks(cx: &LintContext<'_, '_>) -> Option<&'static [Hook]> {
    let layout = cx.kube().layout;
    if !layout.is_kubernetes() {
        return None;
    }
    Some(match layout.mode {
        ProxyMode::Iptables => IPTABLES_HOOKS,
        ProxyMode::Ipvs => IPVS_HOOKS,
        ProxyMode::Userspace => USERSPACE_HOOKS,
        // kube-router's proxy, or another one rulelint does not know: kubelet's jumps only.
        ProxyMode::KubeRouter | ProxyMode::None => KUBELET_HOOKS,
    })
}

/// Whether a hook is expected in a table, given whether its target chain exists.
fn expected(hook: &Hook, target_exists: bool, facts: &TableFacts) -> bool {
    match hook.when {
        When::Declared => target_exists,
        When::Services => target_exists || facts.service_chains > 0,
        When::ForwardEra => target_exists && facts.forward_era,
    }
}

/// Whether this lint expects a built-in chain to jump to `chain`: then, when nothing jumps to
/// the chain, this lint reports the missing jumps and `RL203 unreferenced-chain` leaves the
/// chain alone.
pub(crate) fn expects_hook_to(cx: &LintContext<'_, '_>, chain: ChainRef<'_, '_>) -> bool {
    let table = chain.table();
    let Some(hooks) = hooks(cx) else {
        return false;
    };
    let mut candidates = hooks
        .iter()
        .filter(|h| h.table == table.kind() && h.to == chain.name())
        .peekable();
    if candidates.peek().is_none() || !cx.is_complete(table) {
        return false;
    }
    let facts = facts(cx, table);
    candidates.any(|h| expected(h, true, &facts))
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let Some(hooks) = hooks(cx) else {
        return;
    };
    for table in cx.tables() {
        let kind = table.kind();
        if !matches!(kind, TableKind::Nat | TableKind::Filter) || !cx.is_complete(table) {
            continue;
        }
        let facts = facts(cx, table);
        for &builtin in kind.builtin_chains() {
            let Some(from) = table.chain(builtin) else {
                continue;
            };
            let mut missing: Vec<&Hook> = Vec::new();
            let mut services_undeclared = false;
            for hook in hooks
                .iter()
                .filter(|h| h.table == kind && h.from == builtin)
            {
                let target = table.chain(hook.to);
                if !expected(hook, target.is_some(), &facts) {
                    continue;
                }
                match target {
                    Some(target) if reaches(cx, from, target) => {}
                    Some(_) => missing.push(hook),
                    None => {
                        services_undeclared = true;
                        missing.push(hook);
                    }
                }
            }
            if !missing.is_empty() {
                report(cx, out, from, &missing, &facts, services_undeclared);
            }
        }
    }
}

fn report(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    from: ChainRef<'_, '_>,
    missing: &[&Hook],
    facts: &TableFacts,
    services_undeclared: bool,
) {
    let table = from.table();
    let rule = |h: &Hook| match h.old_rule {
        Some(old) if !facts.external_services => old,
        _ => h.rule,
    };
    let kubelet = missing.iter().any(|h| h.kubelet);
    let proxy = missing.iter().any(|h| !h.kubelet);
    let (writers, install) = match (proxy, kubelet) {
        (true, true) => ("kube-proxy and kubelet", "install"),
        (false, true) => ("kubelet", "installs"),
        _ => ("kube-proxy", "installs"),
    };
    let targets = join(missing.iter().map(|h| h.to), " and ");
    let message = match missing {
        [one] => format!(
            "{} {} lacks the jump to {} that {writers} {install}: `{}`",
            table.name(),
            from.name(),
            one.to,
            rule(one)
        ),
        _ => format!(
            "{} {} lacks {} jumps that {writers} {install}: {}",
            table.name(),
            from.name(),
            missing.len(),
            join(missing.iter().map(|h| format!("`{}`", rule(h))), ", ")
        ),
    };
    let label = format!("nothing in {} leads to {targets}", from.name());
    let restart = match (proxy, kubelet) {
        (true, true) => "restart kube-proxy and kubelet, which insert their jumps again",
        (false, true) => "restart kubelet, which inserts its jump again",
        _ => "restart kube-proxy, which inserts its jumps again on its next sync",
    };
    let help = if services_undeclared {
        format!(
            "KUBE-SERVICES itself is missing, so none of the {} Service chains is reached: restart kube-proxy, which declares KUBE-SERVICES and adds its jumps again; then find what flushed the table (a firewall service reload, a restored ruleset)",
            facts.service_chains
        )
    } else {
        let by_hand = match missing {
            [one] => format!(
                "`iptables -t {} -I {}`",
                table.name(),
                rule(one).trim_start_matches("-A ")
            ),
            _ => format!(
                "`iptables -t {} -I` and each rule above without its `-A`",
                table.name()
            ),
        };
        let (exists, it, jumps) = if missing.len() == 1 {
            ("exists", "it", "the jump")
        } else {
            ("exist", "them", "the jumps")
        };
        format!(
            "{targets} {exists} but no packet that enters {} reaches {it}: {restart}, or add {jumps} by hand with {by_hand}; then find what removed {jumps} (a firewall service reload such as firewalld or iptables-services, a script that flushes the built-in chains, or a restored ruleset)",
            from.name()
        )
    };
    out.push(
        out.diagnostic(cx.chain_span(from), message)
            .in_chain(table.id, from.id)
            .with_label(label)
            .with_help(help),
    );
}

/// `a`, `a and b`, `a, b and c` (with `last` as the final separator).
fn join<S: AsRef<str>>(items: impl Iterator<Item = S>, last: &str) -> String {
    let items: Vec<S> = items.collect();
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == items.len() { last } else { ", " });
        }
        out.push_str(item.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    const NAT_HEAD: &str = "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n";
    const FILTER_HEAD: &str =
        "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n";

    fn nat(lines: &str) -> String {
        format!("{NAT_HEAD}{lines}COMMIT\n")
    }

    fn filter(lines: &str) -> String {
        format!("{FILTER_HEAD}{lines}COMMIT\n")
    }

    const NAT_OK: &str = ":KUBE-POSTROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n\
        -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
        -A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
        -A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n";

    /// kube-proxy 1.25+ filter hooks.
    const FILTER_MODERN: &str = ":KUBE-EXTERNAL-SERVICES - [0:0]\n:KUBE-FIREWALL - [0:0]\n:KUBE-FORWARD - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-PROXY-FIREWALL - [0:0]\n:KUBE-SERVICES - [0:0]\n\
        -A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n\
        -A INPUT -m comment --comment \"kubernetes health check service ports\" -j KUBE-NODEPORTS\n\
        -A INPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n\
        -A INPUT -j KUBE-FIREWALL\n\
        -A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n\
        -A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n\
        -A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
        -A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes externally-visible service portals\" -j KUBE-EXTERNAL-SERVICES\n\
        -A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes load balancer firewall\" -j KUBE-PROXY-FIREWALL\n\
        -A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
        -A OUTPUT -j KUBE-FIREWALL\n";

    fn without(text: &str, line: &str) -> String {
        let out = text.replace(&format!("{line}\n"), "");
        assert_ne!(out, text, "{line} not in the text");
        out
    }

    #[test]
    fn cases() {
        let modern = format!("{}{}", nat(NAT_OK), filter(FILTER_MODERN));
        let svc = ":KUBE-SVC-AAAAAAAAAAAAAAAA - [0:0]\n:KUBE-SEP-BBBBBBBBBBBBBBBB - [0:0]\n\
            -A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-SEP-BBBBBBBBBBBBBBBB\n\
            -A KUBE-SEP-BBBBBBBBBBBBBBBB -p tcp -m tcp -j DNAT --to-destination 10.244.1.5:80\n";
        assert_cases(
            &LINT,
            &[
                &modern,
                // 2016: filter KUBE-SERVICES hooked from OUTPUT only, without ctstate.
                &format!(
                    "{}{}",
                    nat(NAT_OK),
                    filter(
                        ":KUBE-SERVICES - [0:0]\n-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
                    )
                ),
                // No Kubernetes at all: nothing expected.
                &filter(":DOCKER - [0:0]\n-A FORWARD -o docker0 -j DOCKER\n"),
                // A partial table (restore input): not checked.
                "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-POSTROUTING - [0:0]\n-A KUBE-POSTROUTING -j RETURN\nCOMMIT\n",
                // Reached through another chain.
                &format!(
                    "{}{}",
                    nat(
                        ":KUBE-POSTROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n:WRAP - [0:0]\n-A PREROUTING -j WRAP\n-A OUTPUT -j WRAP\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n-A WRAP -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
                    ),
                    filter(FILTER_MODERN)
                ),
                // IPVS mode: its own hooks; no filter KUBE-SERVICES is expected.
                &format!(
                    "{}{}",
                    nat(
                        ":KUBE-LOAD-BALANCER - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-NODE-PORT - [0:0]\n:KUBE-POSTROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n\
                        -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
                        -A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
                        -A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n\
                        -A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\n"
                    ),
                    filter(
                        ":KUBE-FORWARD - [0:0]\n:KUBE-IPVS-FILTER - [0:0]\n\
                        -A INPUT -m comment --comment \"kubernetes ipvs access filter\" -j KUBE-IPVS-FILTER\n\
                        -A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n"
                    )
                ),
            ],
            &[
                // The PREROUTING hook is gone.
                (
                    &without(
                        &modern,
                        "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
                    ),
                    1,
                ),
                // FORWARD flushed: one finding listing its four jumps.
                (
                    &modern
                        .lines()
                        .filter(|l| !l.starts_with("-A FORWARD"))
                        .map(|l| format!("{l}\n"))
                        .collect::<String>(),
                    1,
                ),
                // Service chains without KUBE-SERVICES: PREROUTING and OUTPUT.
                (
                    &format!(
                        "{}{}",
                        nat(&format!(
                            ":KUBE-POSTROUTING - [0:0]\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n{svc}"
                        )),
                        filter(FILTER_MODERN)
                    ),
                    2,
                ),
                // kubelet's OUTPUT jump to KUBE-FIREWALL.
                (&without(&modern, "-A OUTPUT -j KUBE-FIREWALL"), 1),
            ],
        );
    }

    #[test]
    fn messages_name_the_rule() {
        let modern = format!("{}{}", nat(NAT_OK), filter(FILTER_MODERN));
        let found = run(
            &LINT,
            &without(
                &modern,
                "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
            ),
        );
        assert_eq!(
            found[0].message,
            "nat PREROUTING lacks the jump to KUBE-SERVICES that kube-proxy installs: `-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES`"
        );
        let found = run(
            &LINT,
            &without(
                &without(
                    &modern,
                    "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD",
                ),
                "-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES",
            ),
        );
        assert_eq!(
            found[0].message,
            "filter FORWARD lacks 2 jumps that kube-proxy installs: `-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD`, `-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES`"
        );
        assert_eq!(
            found[0].label,
            "nothing in FORWARD leads to KUBE-FORWARD and KUBE-SERVICES"
        );
    }
}
