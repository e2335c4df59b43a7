//! RL201 undefined-jump-target: a `-j`/`-g` to a chain its table does not have.

use crate::context::{Findings, LintContext};
use crate::known::is_extension_target;
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, Severity, TableId, TargetClass};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL201",
        name: "undefined-jump-target",
        severity: Severity::Error,
        summary: "a jump or goto to a chain the table does not declare and that is no known target",
        docs: "## What it flags
A rule whose `-j NAME` or `-g NAME` names neither a chain of the same table nor a built-in or
extension target (`ACCEPT`, `DROP`, `DNAT`, `MARK`, ...). A rule appended to a chain the table
does not declare is reported by the parser as `RL105 undeclared-chain`.

## Why it matters
`iptables-restore` refuses the whole table (\"Couldn't load target `NAME'\"), so nothing of it
is applied. On a live node the dump was usually edited by hand, truncated, or stitched together
from two sources; a typo of a target (`ACCPET`) is the same error.

## Example
```text
*filter
:FORWARD ACCEPT [0:0]
-A FORWARD -j DOCKER-USER
COMMIT
```

## Instead
```text
*filter
:FORWARD ACCEPT [0:0]
:DOCKER-USER - [0:0]
-A FORWARD -j DOCKER-USER
-A DOCKER-USER -j RETURN
COMMIT
```

## Exceptions
Partial tables are not checked: headerless fragments (`iptables-save | grep ...`), whose chains
are in the lines that were filtered out, and iptables-restore input that does not declare the
table's built-in chains (kube-proxy's `--noflush` input), whose chains may already exist.",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let set = cx.ruleset();
    // Whether each table is checked, decided once per table rather than per rule: the rules
    // with an extension target (most of a large node's DNATs) come table by table.
    let mut checked: Option<(TableId, bool)> = None;
    for &id in cx.graph().non_chain_targets() {
        let rule = set.rule(id);
        let chain = rule.chain();
        let table = chain.table();
        let in_effect_and_complete = match checked {
            Some((seen, answer)) if seen == table.id => answer,
            _ => {
                let answer = !table.get().superseded && cx.is_complete(table);
                checked = Some((table.id, answer));
                answer
            }
        };
        // The names of a class are extension targets (most of a large node's rules here are
        // DNATs): told from the parser's class without reading the target.
        if !in_effect_and_complete
            || !matches!(
                rule.target_class(),
                TargetClass::Other | TargetClass::KubeMarkMasq
            )
        {
            continue;
        }
        let Some(target) = rule.target() else {
            continue;
        };
        let name = target.name();
        if is_extension_target(name) {
            continue;
        }
        let verb = if target.is_goto() { "-g" } else { "-j" };
        let elsewhere = set
            .iter_tables()
            .find(|other| other.id != table.id && other.chain(name).is_some());
        let help = if let Some(other) = elsewhere {
            format!(
                "chain `{name}` exists in table `{}`, but jumps stay within their table; declare it in `{}` with `:{name} - [0:0]` or jump to a chain of this table",
                other.name(),
                table.name()
            )
        } else if let Some(similar) = similar_target(name) {
            format!(
                "did you mean `{verb} {similar}`? iptables-restore fails with \"Couldn't load target `{name}'\""
            )
        } else {
            format!(
                "declare the chain with `:{name} - [0:0]` and its rules, or remove the jump; iptables-restore fails with \"Couldn't load target `{name}'\""
            )
        };
        out.push(
            out.diagnostic(
                target.token().name_span(),
                format!(
                    "`{verb} {name}` names no chain of table `{}` and no known target",
                    table.name()
                ),
            )
            .with_label("no chain or target of this name")
            .with_help(help)
            .in_chain(table.id, chain.id),
        );
    }
}

/// A known target the name is a likely typo of: same letters ignoring case, or one edit away.
fn similar_target(name: &str) -> Option<&'static str> {
    [
        "ACCEPT",
        "DROP",
        "REJECT",
        "RETURN",
        "DNAT",
        "SNAT",
        "MASQUERADE",
        "MARK",
        "LOG",
    ]
    .into_iter()
    .find(|t| t.eq_ignore_ascii_case(name) || edit_distance_is_one(t, name))
}

fn edit_distance_is_one(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let prefix = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if short.len() == long.len() {
        // One substitution, or two neighbours swapped.
        let rest = prefix + 1;
        rest >= short.len()
            || short[rest..] == long[rest..]
            || (rest < short.len()
                && short[prefix] == long[rest]
                && short[rest] == long[prefix]
                && short[rest + 1..] == long[rest + 1..])
    } else {
        short[prefix..] == long[prefix + 1..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter, run};

    /// The rules this lint passes over by their class name extension targets.
    #[test]
    fn classed_names_are_extension_targets() {
        for name in [
            "ACCEPT",
            "DROP",
            "REJECT",
            "RETURN",
            "MASQUERADE",
            "SNAT",
            "DNAT",
            "REDIRECT",
            "NETMAP",
            "MARK",
        ] {
            assert_ne!(TargetClass::of_name(name), TargetClass::Other, "{name}");
            assert!(is_extension_target(name), "{name}");
        }
        assert!(!is_extension_target("KUBE-MARK-MASQ"));
    }

    fn in_other_table() -> String {
        format!(
            "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n{}",
            filter("-A INPUT -j KUBE-SERVICES\n")
        )
    }

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                &filter(":ufw-before-input - [0:0]\n-A INPUT -j ufw-before-input\n"),
                &filter(
                    "-A INPUT -p tcp -j REJECT --reject-with tcp-reset\n-A OUTPUT -j NFLOG --nflog-group 100\n",
                ),
                "*raw\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -p udp --dport 53 -j CT --notrack\nCOMMIT\n",
                // A grep'd fragment: the chain it jumps to was filtered out.
                "-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -j KUBE-SVC-NPX46M4PTMTKRN6Y\n",
                // Restore input without the built-in chains: KUBE-MARK-MASQ may exist already.
                "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j KUBE-MARK-MASQ\nCOMMIT\n",
            ],
            &[
                (&filter("-A FORWARD -j DOCKER-USER\n"), 1),
                (
                    &filter("-A INPUT -i lo -j ACCPET\n-A INPUT -g NOWHERE\n"),
                    2,
                ),
                (&in_other_table(), 1),
            ],
        );
    }

    #[test]
    fn help_suggests_the_target_or_the_other_table() {
        let typo = run(&LINT, &filter("-A INPUT -i lo -j ACCPET\n"));
        assert!(
            typo[0]
                .help
                .as_deref()
                .unwrap()
                .contains("did you mean `-j ACCEPT`")
        );
        let other = run(&LINT, &in_other_table());
        assert!(
            other[0]
                .help
                .as_deref()
                .unwrap()
                .contains("exists in table `nat`")
        );
    }

    #[test]
    fn edit_distance() {
        assert!(edit_distance_is_one("ACCEPT", "ACCPET"));
        assert!(edit_distance_is_one("ACCEPT", "ACCEP"));
        assert!(edit_distance_is_one("DROP", "DRAP"));
        assert!(edit_distance_is_one("DROP", "DROPS"));
        assert!(!edit_distance_is_one("DROP", "DOCKER"));
        assert!(!edit_distance_is_one("ACCEPT", "ACC"));
    }
}
