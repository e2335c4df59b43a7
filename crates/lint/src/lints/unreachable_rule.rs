//! RL301 unreachable-rule: rules after a rule that ends every packet's walk through the chain.

use crate::context::{Findings, LintContext, written_in_order};
use crate::lints::shadowed_hook_jump::is_hook_jump;
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, RuleRef, Severity};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL301",
        name: "unreachable-rule",
        severity: Severity::Warning,
        summary: "rules after an unconditional ACCEPT, DROP, REJECT, RETURN or goto never run",
        docs: "## What it flags
The rules of a chain that follow a rule with no effective match whose target ends the packet's
walk through the chain: `ACCEPT`, `DROP`, `REJECT`, `RETURN`, or a `-g` goto. A
`-m comment` is not a match. One finding per chain, on the first rule that is never reached.

Jumps from a built-in chain to Kubernetes, CNI or Docker chains (`-A FORWARD -j FLANNEL-FWD`
after a catch-all REJECT) are left to `RL403 shadowed-hook-jump`, which reports each of them as
an error: when the dead rules start with such jumps, this lint reports from the first dead rule
that is not one, and nothing when there is none.

## Why it matters
Those rules never see a packet. Often it is a distribution's catch-all
(`-A INPUT -j REJECT --reject-with icmp-host-prohibited`) that ended up above the rules that
components append later (kube-proxy's, a CNI's), which then silently do nothing.

## Example
```text
-A INPUT -j REJECT --reject-with icmp-host-prohibited
-A INPUT -j KUBE-FIREWALL
```

## Instead
Keep catch-alls last: insert later rules above them (`iptables -I`), or give the catch-all the
match it is missing.

## Exceptions
Chains written with `-I`, `-D` or `-R` (iptables-restore input) are skipped: their order as
written is not the order the kernel holds.",
    },
    category: Category::Suspicious,
    check,
};

/// Whether the rule ends the walk through its chain for every packet that reaches it. Runs on
/// every rule, so it allocates nothing. `RL303 shadowed-rule` stops at the same rule.
pub(crate) fn ends_every_walk(rule: RuleRef<'_, '_>) -> bool {
    rule.target()
        .is_some_and(|t| t.is_goto() || matches!(t.name(), "ACCEPT" | "DROP" | "REJECT" | "RETURN"))
        && rule.is_unconditional()
}

/// What a terminating rule does, for the message: `rejects`, "goes to `X` with".
fn action(rule: RuleRef<'_, '_>) -> String {
    match rule.target() {
        Some(t) if t.is_goto() => format!("goes to `{}` with", t.name()),
        Some(t) => match t.name() {
            "ACCEPT" => "accepts",
            "DROP" => "drops",
            "REJECT" => "rejects",
            _ => "returns",
        }
        .to_string(),
        None => "stops".to_string(),
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    for chain in cx.chains() {
        if !written_in_order(chain) {
            continue;
        }
        let mut rules = chain.rules();
        let Some(terminal) = rules.by_ref().find(|&r| ends_every_walk(r)) else {
            continue;
        };
        // Hook jumps are RL403's.
        let Some(first_dead) = rules.by_ref().find(|&r| !is_hook_jump(r)) else {
            continue;
        };
        let after = rules.len();
        let line = cx.line(terminal.get().span.start);
        let action = action(terminal);
        let message = match after {
            0 => format!(
                "rule is never reached: the rule on line {line} {action} every packet first"
            ),
            n => format!(
                "this rule and the {n} after it are never reached: the rule on line {line} {action} every packet first"
            ),
        };
        out.push(
            out.at_rule(first_dead, message)
                .with_label("never reached")
                .with_help(format!(
                    "move these rules above line {line}, or give the rule on line {line} the match it is missing"
                )),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter, run};

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                &filter("-A INPUT -i lo -j ACCEPT\n-A INPUT -j DROP\n"),
                &filter(
                    ":KUBE-FIREWALL - [0:0]\n-A INPUT -j LOG\n-A INPUT -j KUBE-FIREWALL\n-A INPUT -j ACCEPT\n",
                ),
                // The mark match makes the DROP conditional.
                &filter(
                    ":KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n-A KUBE-FIREWALL -j RETURN\n",
                ),
                // Only hook jumps after the catch-all: left to RL403 shadowed-hook-jump.
                &filter(
                    ":FLANNEL-FWD - [0:0]\n:KUBE-FORWARD - [0:0]\n-A FORWARD -j REJECT --reject-with icmp-host-prohibited\n-A FORWARD -j KUBE-FORWARD\n-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD\n-A FLANNEL-FWD -j ACCEPT\n-A KUBE-FORWARD -j ACCEPT\n",
                ),
                // Restore input: -I puts the rule first.
                &filter("-A INPUT -j ACCEPT\n-I INPUT 1 -s 10.0.0.1 -j DROP\n"),
            ],
            &[
                (
                    &filter(
                        "-A INPUT -j REJECT --reject-with icmp-host-prohibited\n-A INPUT -p tcp --dport 22 -j ACCEPT\n-A INPUT -j DROP\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        ":A - [0:0]\n-A INPUT -j A\n-A A -m comment --comment \"default\" -j RETURN\n-A A -j DROP\n",
                    ),
                    1,
                ),
                // The flannel jump is RL403's; the ACCEPT after it is still reported.
                (
                    &filter(
                        ":FLANNEL-FWD - [0:0]\n-A FORWARD -j REJECT --reject-with icmp-host-prohibited\n-A FORWARD -j FLANNEL-FWD\n-A FORWARD -s 10.0.0.0/8 -j ACCEPT\n-A FLANNEL-FWD -j ACCEPT\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        ":A - [0:0]\n-A INPUT -g A\n-A INPUT -j DROP\n-A FORWARD -j DROP\n-A FORWARD -j ACCEPT\n",
                    ),
                    2,
                ),
            ],
        );
    }

    #[test]
    fn message_counts_the_dead_rules() {
        let found = run(
            &LINT,
            &filter(
                "-A INPUT -j REJECT --reject-with icmp-host-prohibited\n-A INPUT -p tcp --dport 22 -j ACCEPT\n-A INPUT -j DROP\n",
            ),
        );
        assert_eq!(
            found[0].message,
            "this rule and the 1 after it are never reached: the rule on line 5 rejects every packet first"
        );
    }
}
