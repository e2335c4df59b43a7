//! RL416 empty-kube-chain: a hooked kube-proxy chain that kube-proxy always fills is empty.

use crate::context::{Findings, LintContext};
use crate::kube::ProxyMode;
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainGraph, ChainId, ChainRef, CodeInfo, Ruleset, Severity, TableKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL416",
        name: "empty-kube-chain",
        severity: Severity::Error,
        summary: "a kube-proxy chain that is hooked and that kube-proxy always fills is empty",
        docs: "## What it flags
A chain that kube-proxy writes rules into on every sync, in every version and mode that has
it, which a built-in chain reaches (directly or through other chains) but which holds no rule:

| table | chain | what kube-proxy always writes there |
|-------|-------|-------------------------------------|
| nat | `KUBE-SERVICES` | iptables mode: the last rule `-m addrtype --dst-type LOCAL -j KUBE-NODEPORTS` (\"kubernetes service nodeports; NOTE: this must be the last rule in this chain\"); IPVS mode: `-m addrtype --dst-type LOCAL -j KUBE-NODE-PORT` |
| nat | `KUBE-POSTROUTING` | its `MASQUERADE` rule (\"kubernetes service traffic requiring SNAT\"), since 1.10 after `-m mark ! --mark 0x4000/0x4000 -j RETURN` and `-j MARK --xor-mark 0x4000` |
| filter | `KUBE-FORWARD` | `-m mark --mark 0x4000/0x4000 -j ACCEPT` (\"kubernetes forwarding rules\") and the RELATED,ESTABLISHED `ACCEPT` (since the chain exists, about 1.9) |

The other kube-proxy chains are often empty on a healthy node and are not checked: filter
`KUBE-SERVICES`, `KUBE-EXTERNAL-SERVICES`, `KUBE-NODEPORTS`, `KUBE-PROXY-FIREWALL` (no
Service without endpoints, no node port, no source ranges), nat `KUBE-NODEPORTS` (no node
port) and `KUBE-FIREWALL` of an IPv6 dump. An empty `KUBE-MARK-MASQ` is reported by
`RL410 masquerade-mark-mismatch` (\"KUBE-MARK-MASQ has no MARK rule\"), not here: one fact, one
code. In turn RL410 leaves an entirely empty `KUBE-POSTROUTING` to this lint.

## Why it matters
kube-proxy creates these chains and their jumps from the built-in chains first, then fills
all its chains with one `iptables-restore`. An empty, hooked chain means that restore failed
or was undone (an iptables version or backend mismatch, a lock timeout, a firewall reload that
flushed the chains but kept kube-proxy's jumps): with nat `KUBE-SERVICES` empty no Service and
no node port is reachable; with `KUBE-POSTROUTING` empty nothing is masqueraded; with
`KUBE-FORWARD` empty forwarded Service traffic falls to the `FORWARD` policy.

## Example
```text
*nat
:PREROUTING ACCEPT [0:0]
:KUBE-SERVICES - [0:0]
-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
COMMIT
```

## Instead
```text
-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS
```
after one dispatch rule per Service port. Read kube-proxy's log for the failed
`iptables-restore`, fix its cause, and restart kube-proxy.

## Exceptions
- A table that is not complete is skipped: no `COMMIT` (a paste cut short, `RL103`), no
  header, or not every built-in chain declared (a fragment or restore input). Its chains may
  have lost their rules to the cut.
- A chain nothing reaches from a built-in chain is skipped: that is kube-proxy after
  `--cleanup` or a leftover, not a failed sync.
- Dumps without any kube-proxy chain are skipped.

## Known problems
In iptables mode kube-proxy also leaves nat `KUBE-SERVICES` without its last rule when
`--nodeport-addresses` matches no address of the node (it logs \"Failed to get node ip
address matching nodeport cidrs\"); with no Service port that has endpoints in the dump's IP
family the chain is then empty too. No node port works on such a node either, so the finding
stands, but its cause is the flag, not a failed restore.",
    },
    category: Category::Correctness,
    check,
};

/// The chains checked, with the rule kube-proxy always writes there (for the help text).
const CHAINS: &[(TableKind, &str, &str)] = &[
    (
        TableKind::Nat,
        "KUBE-SERVICES",
        "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS",
    ),
    (
        TableKind::Nat,
        "KUBE-POSTROUTING",
        "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE",
    ),
    (
        TableKind::Filter,
        "KUBE-FORWARD",
        "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT",
    ),
];

const IPVS_SERVICES: &str = "-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT";

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let set = cx.ruleset();
    // Cheap first: an empty candidate chain in a table in effect. Most dumps stop here.
    let mut candidates: Vec<ChainRef<'_, '_>> = Vec::new();
    for table in cx.tables() {
        for &(kind, name, _) in CHAINS {
            if table.kind() != kind {
                continue;
            }
            if let Some(chain) = table.chain(name)
                && chain.rule_count() == 0
                && chain.get().declaration().is_some()
            {
                candidates.push(chain);
            }
        }
    }
    if candidates.is_empty() {
        return;
    }
    let model = cx.kube();
    // Only kube-proxy's iptables and IPVS modes fill these chains (the proxy mode is decided
    // first: `ProxyMode`).
    if !matches!(model.layout.mode, ProxyMode::Iptables | ProxyMode::Ipvs) {
        return;
    }
    let graph = cx.graph();
    for chain in candidates {
        let table = chain.table();
        // A paste cut short, a fragment or restore input: the rules may be missing from the
        // text only.
        if !cx.is_complete(table) {
            continue;
        }
        let Some(path) = hook_path(set, graph, chain.id) else {
            continue;
        };
        let name = chain.name();
        let should = if name == "KUBE-SERVICES" && model.layout.ipvs {
            IPVS_SERVICES
        } else {
            CHAINS
                .iter()
                .find(|(kind, n, _)| *kind == table.kind() && *n == name)
                .map_or("", |(_, _, rule)| rule)
        };
        let effect = match name {
            "KUBE-SERVICES" => "no Service and no node port is reachable through this node",
            "KUBE-POSTROUTING" => "traffic marked for SNAT leaves with its original source",
            _ => "forwarded Service traffic falls to the FORWARD chain's policy",
        };
        let hook = set.rule(path);
        let line = cx.line(hook.get().span.start);
        out.push(
            out.diagnostic(
                cx.chain_span(chain),
                format!(
                    "{} {name} is empty but {} jumps to it (line {line}): kube-proxy failed to write its rules, so {effect}",
                    table.name(),
                    hook.chain().name(),
                ),
            )
            .in_chain(chain.get().table, chain.id)
            .with_label("declared here, no rule follows")
            .with_help(format!(
                "kube-proxy always writes `{should}` here on every sync; read its log for a failed iptables-restore (iptables version or backend mismatch, xtables lock), fix the cause and restart kube-proxy"
            )),
        );
    }
}

/// The rule that jumps to `chain` from a chain a built-in chain reaches, if any: walked
/// backwards from `chain`, each chain visited once.
fn hook_path(
    set: &Ruleset<'_>,
    graph: &ChainGraph,
    chain: ChainId,
) -> Option<rulelint_parser::RuleId> {
    let mut seen = rustc_hash::FxHashSet::default();
    // (chain, the jump into the chain the walk came from that leads on to `chain`)
    let mut stack: Vec<(ChainId, Option<rulelint_parser::RuleId>)> = vec![(chain, None)];
    seen.insert(chain);
    while let Some((at, toward)) = stack.pop() {
        if set.chain(at).get().builtin {
            return toward;
        }
        for (from, jump) in graph.jumps_into(at) {
            if seen.insert(from) {
                // The first hop names the rule into `chain` itself.
                stack.push((from, toward.or(Some(jump.rule))));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    const SERVICES_LAST: &str = "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS\n";
    const POST: &str = "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n";
    const FORWARD: &str = "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n";

    fn dump(services: &str, post: &str, forward: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-NODEPORTS - [0:0]\n:KUBE-POSTROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n{post}{services}COMMIT\n*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-FORWARD - [0:0]\n-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n{forward}COMMIT\n"
        )
    }

    #[test]
    fn cases() {
        let healthy = dump(SERVICES_LAST, POST, FORWARD);
        let unhooked = dump("", POST, FORWARD)
            .replace("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n", "")
            .replace("-A OUTPUT -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n", "");
        // Cut short inside nat: no COMMIT.
        let cut = dump("", POST, FORWARD);
        let cut = cut[..cut.find("COMMIT").unwrap()].to_string();
        // A fragment: no header, built-ins not declared.
        let fragment = "-A PREROUTING -j KUBE-SERVICES\n:KUBE-SERVICES - [0:0]\n".to_string();
        // Hooked through another chain.
        let via_chain = dump(SERVICES_LAST, POST, "")
            .replace(
                "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n",
                "-A FORWARD -j MY-FORWARD\n-A MY-FORWARD -j KUBE-FORWARD\n",
            )
            .replace(
                ":KUBE-FORWARD - [0:0]\n",
                ":KUBE-FORWARD - [0:0]\n:MY-FORWARD - [0:0]\n",
            );
        assert_cases(
            &LINT,
            &[&healthy, &unhooked, &cut, &fragment],
            &[
                (&dump("", POST, FORWARD), 1),
                (&dump(SERVICES_LAST, "", FORWARD), 1),
                (&dump(SERVICES_LAST, POST, ""), 1),
                (&dump("", "", ""), 3),
                (&via_chain, 1),
            ],
        );
    }

    #[test]
    fn message() {
        let found = run(&LINT, &dump("", POST, FORWARD));
        assert_eq!(
            found[0].message,
            "nat KUBE-SERVICES is empty but PREROUTING jumps to it (line 10): kube-proxy failed to write its rules, so no Service and no node port is reachable through this node"
        );
        let found = run(&LINT, &dump(SERVICES_LAST, POST, "").replace(
            "-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n",
            "-A FORWARD -j MY-FORWARD\n-A MY-FORWARD -j KUBE-FORWARD\n",
        ).replace(":KUBE-FORWARD - [0:0]\n", ":KUBE-FORWARD - [0:0]\n:MY-FORWARD - [0:0]\n"));
        assert!(
            found[0].message.contains("MY-FORWARD jumps to it"),
            "{}",
            found[0].message
        );
    }
}
