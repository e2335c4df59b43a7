//! RL301 unreachable-rule: rules after a rule that ends every packet's walk through the chain.

use crate::context::{Findings, LintContext};
use crate::lints::shadowed_hook_jump::is_hook_jump;
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, RuleRef, Severity};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL301",
        name: "unreachable-rule",
        severity: Severity::Warning,
        summary: "rules after an unconditional ACCEPT, DROP, REJECT, RETURN, goto or (in nat) NAT target never run",
        docs: "## What it flags
The rules of a chain that follow a rule with no effective match whose target ends the packet's
walk through the chain: `ACCEPT`, `DROP`, `REJECT`, `RETURN`, or a `-g` goto, and in the nat
table also `MASQUERADE`, `SNAT`, `DNAT`, `REDIRECT` and `NETMAP` (NAT targets are terminating:
once a connection's mapping is set, nat's later rules never see it). A `-m comment` is not a
match. One finding per chain, on the first rule that is never reached.

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
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
```
In nat, every connection leaving the host is masqueraded before the exemption is reached:
```text
-A POSTROUTING -j MASQUERADE
-A POSTROUTING -s 10.8.0.0/24 -d 192.168.0.0/16 -j RETURN
```

## Instead
Keep catch-alls last: insert later rules above them (`iptables -I`), or give the catch-all the
match it is missing (`-A POSTROUTING -o eth0 -j MASQUERADE`).

## Exceptions
Chains written with `-I`, `-D` or `-R` (iptables-restore input) are skipped: their order as
written is not the order the kernel holds.",
    },
    category: Category::Suspicious,
    check,
};

/// Whether the rule's target ends the walk through its chain for the packets it matches:
/// `ACCEPT`, `DROP`, `REJECT`, `RETURN`, a goto, and in the nat table (`nat`: the rule's chain
/// is in it; loops over a chain know it once) the NAT targets (`MASQUERADE`, `SNAT`, `DNAT`,
/// `REDIRECT`, `NETMAP`: each sets up the connection's mapping and returns a verdict, so nat's
/// later rules never see the packet). Runs on every rule, so it allocates nothing.
/// `RL303 shadowed-rule` and `RL403 shadowed-hook-jump` use the same test.
pub(crate) fn ends_walk_in(rule: RuleRef<'_, '_>, nat: bool) -> bool {
    rule.target().is_some_and(|t| {
        t.is_goto()
            || matches!(t.name(), "ACCEPT" | "DROP" | "REJECT" | "RETURN")
            || (nat && is_nat_target(t.name()))
    })
}

/// The targets of the nat table that map a connection and end the walk (iptables-extensions:
/// MASQUERADE, SNAT, DNAT, REDIRECT and NETMAP are valid only in nat, and all are terminating).
fn is_nat_target(name: &str) -> bool {
    matches!(name, "MASQUERADE" | "SNAT" | "DNAT" | "REDIRECT" | "NETMAP")
}

/// Whether the rule, of a chain in the nat table when `nat`, ends the walk through its chain
/// for every packet that reaches it. `RL303 shadowed-rule` stops at the same rule.
pub(crate) fn ends_every_walk(cx: &LintContext<'_, '_>, rule: RuleRef<'_, '_>, nat: bool) -> bool {
    // The same as `ends_walk_in(rule, nat) && rule.is_unconditional()`, read once per dump.
    let facts = cx.target_facts(rule.id);
    facts.ends_walk(nat) && facts.unconditional()
}

/// What a terminating rule does, for the message: `rejects`, "goes to `X` with".
fn action(rule: RuleRef<'_, '_>) -> String {
    match rule.target() {
        Some(t) if t.is_goto() => format!("goes to `{}` with", t.name()),
        Some(t) => match t.name() {
            "ACCEPT" => "accepts",
            "DROP" => "drops",
            "REJECT" => "rejects",
            "MASQUERADE" => "masquerades",
            "SNAT" => "source-NATs",
            "DNAT" => "destination-NATs",
            "REDIRECT" => "redirects",
            "NETMAP" => "maps",
            _ => "returns",
        }
        .to_string(),
        None => "stops".to_string(),
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    for chain in cx.chains() {
        // The first rule that ends every walk, as `ends_every_walk` finds it, read once per
        // chain for this lint and RL303. The last rule has nothing after it (kube-proxy's
        // endpoint DNATs and its KUBE-POSTROUTING MASQUERADE end their chains): it is not
        // looked at.
        let walk = cx.chain_walk(chain);
        let count = chain.rule_count();
        if !walk.in_order || walk.first_terminal as usize + 1 >= count {
            continue;
        }
        let mut rules = chain.rules();
        let Some(terminal) = rules.nth(walk.first_terminal as usize) else {
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
    use crate::lints::testing::{assert_cases, filter, nat, run};

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                &filter("-A INPUT -i lo -j ACCEPT\n-A INPUT -j DROP\n"),
                // A conditional MASQUERADE; NAT targets as the last rule (kube-proxy's
                // KUBE-POSTROUTING and endpoint chains).
                &nat(
                    "-A POSTROUTING -s 10.8.0.0/24 -o eth0 -j MASQUERADE\n-A POSTROUTING -s 10.9.0.0/24 -j SNAT --to-source 192.0.2.1\n",
                ),
                &nat(
                    ":KUBE-POSTROUTING - [0:0]\n:KUBE-SEP-A - [0:0]\n-A POSTROUTING -j KUBE-POSTROUTING\n-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n-A KUBE-POSTROUTING -j MASQUERADE --random-fully\n-A KUBE-SEP-A -s 10.244.1.5/32 -j KUBE-MARK-MASQ\n-A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 10.244.1.5:8080\n",
                ),
                // NAT target names end the walk only in nat (elsewhere they do not load).
                &filter("-A INPUT -j MASQUERADE\n-A INPUT -j DROP\n"),
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
                // In nat, an unconditional MASQUERADE, SNAT, DNAT, REDIRECT or NETMAP ends the walk.
                (
                    &nat(
                        "-A POSTROUTING -j MASQUERADE\n-A POSTROUTING -s 10.8.0.0/24 -d 192.168.0.0/16 -j RETURN\n-A POSTROUTING -o eth0 -j SNAT --to-source 192.0.2.1\n",
                    ),
                    1,
                ),
                (
                    &nat(
                        "-A PREROUTING -m comment --comment \"all to the proxy\" -j DNAT --to-destination 10.0.0.2\n-A PREROUTING -p tcp -j REDIRECT --to-ports 3128\n-A OUTPUT -j REDIRECT --to-ports 3128\n-A OUTPUT -j ACCEPT\n-A POSTROUTING -j NETMAP --to 10.1.0.0/24\n-A POSTROUTING -j MASQUERADE\n-A INPUT -j SNAT --to-source 192.0.2.1\n-A INPUT -j ACCEPT\n",
                    ),
                    4,
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

    #[test]
    fn message_names_the_nat_target() {
        let found = run(
            &LINT,
            &nat(
                "-A POSTROUTING -j MASQUERADE\n-A POSTROUTING -o eth0 -j SNAT --to-source 192.0.2.1\n",
            ),
        );
        assert_eq!(
            found[0].message,
            "rule is never reached: the rule on line 6 masquerades every packet first"
        );
    }
}
