//! RL502 unsupported-revision: rules iptables could not print.

use crate::context::{Findings, LintContext};
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, Severity, TokenKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL502",
        name: "unsupported-revision",
        severity: Severity::Error,
        summary: "a rule printed with `[unsupported revision]`: this iptables cannot read what the kernel holds",
        docs: "## What it flags
A rule in which `iptables-save` printed `[unsupported revision]` in place of a match or target.

## Why it matters
The rule was written by a newer iptables (typically a container's: kube-proxy's, a CNI's) than
the one that dumped it. This dump does not show what the rule does, and if this older iptables
ever rewrites the rules (a restore, a save-and-restore by a firewall service) the rule loses
the part it cannot read: a DROP without its match (kubernetes#95409, #112477).

## Example
```text
-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 [unsupported revision] -j DROP
```

## Instead
Dump with the iptables that wrote the rules (`kubectl exec` into kube-proxy and run
`iptables-save` there), and make the host and the containers use the same iptables version and
backend.

## References
- https://github.com/kubernetes/kubernetes/issues/95409",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let version = cx
        .ruleset()
        .generator()
        .map(|g| cx.ruleset().text(g.version))
        .filter(|v| !v.is_empty());
    let who = version.map_or("this iptables".to_string(), |v| format!("iptables v{v}"));
    for chain in cx.chains() {
        for rule in chain.rules() {
            let Some(token) = rule
                .tokens()
                .iter()
                .find(|t| t.kind() == TokenKind::Unsupported)
                .copied()
            else {
                continue;
            };
            out.push(
                out.diagnostic(token.span(), format!("{who} cannot print this rule of chain `{}`: the kernel holds a revision it does not know", chain.name()))
                    .with_label("the part of the rule this iptables cannot read")
                    .with_help("a newer iptables wrote this rule; dump with that one (e.g. inside the kube-proxy container) and align the iptables versions of host and containers before anything rewrites the rules (kubernetes#95409)")
                    .in_chain(chain.get().table, chain.id),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter};

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[&filter(
                "-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n",
            )],
            &[(
                &filter(
                    "-A FORWARD -m conntrack [unsupported revision] -j ACCEPT\n-A INPUT -m mark --mark 0x8000/0x8000 [unsupported revision] -j DROP\n",
                ),
                2,
            )],
        );
    }
}
