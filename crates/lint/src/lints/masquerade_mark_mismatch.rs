//! RL410 masquerade-mark-mismatch: the mark `KUBE-MARK-MASQ` sets is not the mark that
//! `KUBE-POSTROUTING` masquerades (or `KUBE-FORWARD` accepts), or one half is missing.

use crate::context::{Findings, LintContext};
use crate::kube::set_mark;
use crate::registry::{Category, Lint};
use rulelint_parser::views::Mark;
use rulelint_parser::{ChainRef, CodeInfo, RuleRef, Severity, TableKind, TableRef};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL410",
        name: "masquerade-mark-mismatch",
        severity: Severity::Error,
        summary: "the mark KUBE-MARK-MASQ sets is not the one KUBE-POSTROUTING or KUBE-FORWARD tests, or one of them lacks its rule",
        docs: "## What it flags
kube-proxy marks traffic that needs source NAT in nat `KUBE-MARK-MASQ` and masquerades marked
traffic in nat `KUBE-POSTROUTING`; filter `KUBE-FORWARD` accepts marked traffic. The lint
compares the three:
- `KUBE-MARK-MASQ` exists and rules jump to it, but it has no `MARK` rule;
- `KUBE-POSTROUTING` tests another mark than `KUBE-MARK-MASQ` sets: in its
  `-m mark ! --mark M -j RETURN`, in its `-j MARK --xor-mark` that clears the bit, or (older
  layout) in the `-m mark --mark M -j MASQUERADE` rule;
- the `RETURN` rule lost its `!`, so that it skips exactly the marked packets;
- `KUBE-POSTROUTING` has no `MASQUERADE` rule while `KUBE-MARK-MASQ` marks traffic;
- the `-m mark --mark M -j ACCEPT` of filter `KUBE-FORWARD` tests another mark.

The mark is not hard-coded: kube-proxy's `--masquerade-bit` (kubelet's
`--iptables-masquerade-bit`) moves it from bit 14 (`0x4000`) to another bit, so the lint
compares the chains with each other. kube-proxy writes `--or-mark 0x4000` and
`--xor-mark 0x4000`, which iptables-save prints as `--set-xmark 0x4000/0x4000` and
`--set-xmark 0x4000/0x0`.

## Why it matters
Traffic that kube-proxy marks for SNAT (pods reaching their own Service, node ports, external
IPs with `externalTrafficPolicy: Cluster`) then leaves with its original source address: replies
go straight back to the client, which drops them, and hairpin and cross-node Service traffic
times out. A mismatched `KUBE-FORWARD` mark leaves forwarded Service traffic to the `FORWARD`
policy, which drops it on hosts with a `DROP` policy. This happens when kubelet and kube-proxy
are configured with different masquerade bits, or when something rewrites one of the chains.

## Example
```text
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x8000/0x8000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x8000/0x0
-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully
```

## Instead
```text
-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000
-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN
-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0
-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully
```
Give kubelet and kube-proxy the same masquerade bit (or leave both at the default), then restart
kube-proxy so that it rewrites its chains.

## Exceptions
A missing `KUBE-MARK-MASQ` is reported by `RL201 undefined-jump-target` at the rules that jump
to it, not here. An empty `KUBE-MARK-MASQ` is reported here (`RL416 empty-kube-chain` leaves
it to this lint); a `KUBE-POSTROUTING` without any rule is `RL416`'s finding, not this one's.",
    },
    category: Category::Correctness,
    check,
};

/// Whether a packet marked with `set` passes the test `--mark test` whatever its other bits:
/// every bit the test looks at is one that `set` decides, with the tested value.
fn satisfies(set: Mark, test: Mark) -> bool {
    test.mask & !set.mask == 0 && set.value & test.mask == test.value
}

fn show(mark: Mark) -> String {
    format!("{:#x}/{:#x}", mark.value, mark.mask)
}

/// The mark a `MARK` rule sets (`--set-xmark`, `--set-mark` or `--or-mark`).
fn marks(rule: RuleRef<'_, '_>) -> Option<Mark> {
    if rule.has_unsupported_revision() {
        return None;
    }
    let target = rule.target()?;
    if target.name() != "MARK" {
        return None;
    }
    set_mark(
        target
            .option_arg("--set-xmark")
            .or_else(|| target.option_arg("--set-mark")),
        target.option_arg("--or-mark"),
    )
}

/// The bit(s) a `-j MARK --xor-mark V` (printed `--set-xmark V/0x0`) flips.
fn flips(rule: RuleRef<'_, '_>) -> Option<u32> {
    let target = rule.target()?;
    if target.name() != "MARK" {
        return None;
    }
    if let Some(v) = target.option_arg("--xor-mark") {
        return Mark::parse(v).map(|m| m.value);
    }
    let m = Mark::parse(target.option_arg("--set-xmark")?)?;
    (m.mask == 0).then_some(m.value)
}

fn table<'r, 'a>(cx: &LintContext<'r, 'a>, kind: TableKind) -> Option<TableRef<'r, 'a>> {
    cx.tables().filter(|t| t.kind() == kind).last()
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    // A MARK or MASQUERADE rule may be in the part of a truncated paste that is missing.
    if !cx.kube_tables_complete() {
        return;
    }
    let Some(nat) = table(cx, TableKind::Nat) else {
        return;
    };
    let postrouting = nat.chain("KUBE-POSTROUTING");
    let Some(mark_masq) = nat.chain("KUBE-MARK-MASQ") else {
        return;
    };
    // Every MARK rule of the chain: kubelet and kube-proxy may each have written one.
    let mut setter: Option<(Mark, RuleRef<'_, '_>)> = None;
    for rule in mark_masq.rules() {
        let Some(m) = marks(rule) else {
            continue;
        };
        setter = Some(match setter {
            None => (m, rule),
            Some((before, first)) => (
                Mark {
                    value: (before.value & !m.mask) | (m.value & m.mask),
                    mask: before.mask | m.mask,
                },
                first,
            ),
        });
    }
    let Some((set, set_rule)) = setter else {
        empty_mark_masq(cx, out, mark_masq, postrouting);
        return;
    };
    // Counted only for a finding: the line index of a large dump costs a pass over its text.
    let set_line = || cx.line(set_rule.get().span.start);
    if let Some(chain) = postrouting {
        check_postrouting(cx, out, chain, set, set_line);
    }
    if let Some(forward) = table(cx, TableKind::Filter).and_then(|t| t.chain("KUBE-FORWARD")) {
        for rule in forward.rules() {
            if rule.target().is_none_or(|t| t.name() != "ACCEPT") || rule.has_unsupported_revision()
            {
                continue;
            }
            let Some(test) = rule.mark().filter(|m| !m.negated).map(|m| m.value) else {
                continue;
            };
            if !satisfies(set, test) {
                out.push(
                    out.at_rule(
                        rule,
                        format!(
                            "KUBE-FORWARD accepts mark {} but KUBE-MARK-MASQ sets {}: forwarded Service traffic is not accepted here",
                            show(test),
                            show(set)
                        ),
                    )
                    .with_label(format!("another mark than line {} sets", set_line()))
                    .with_help(format!(
                        "kube-proxy writes `-m mark --mark {0} -j ACCEPT` here, with the mark of KUBE-MARK-MASQ; unaccepted traffic falls to the FORWARD chain's policy. Give kubelet and kube-proxy the same masquerade bit and restart kube-proxy",
                        show(Mark { value: set.value, mask: set.value })
                    )),
                );
            }
        }
    }
}

/// `KUBE-MARK-MASQ` without a `MARK` rule, when something jumps to it.
fn empty_mark_masq(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    chain: ChainRef<'_, '_>,
    postrouting: Option<ChainRef<'_, '_>>,
) {
    let jumps = cx.graph().jumps_into(chain.id).count();
    if jumps == 0 {
        return;
    }
    // The mark KUBE-POSTROUTING expects, if it says.
    let expected = postrouting
        .and_then(|c| c.rules().find_map(|r| r.mark().map(|m| m.value)))
        .map_or(0x4000, |m| m.value);
    out.push(
        out.diagnostic(
            cx.chain_span(chain),
            format!(
                "KUBE-MARK-MASQ has no MARK rule: the {jumps} rule{} that jump to it mark nothing, so that traffic is never masqueraded",
                if jumps == 1 { "" } else { "s" }
            ),
        )
        .in_chain(chain.get().table, chain.id)
        .with_label("empty: marks nothing")
        .with_help(format!(
            "kube-proxy writes `-A KUBE-MARK-MASQ -j MARK --or-mark {expected:#x}` (iptables-save shows `--set-xmark {expected:#x}/{expected:#x}`); restart kube-proxy so that it writes the rule again"
        )),
    );
}

fn check_postrouting(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    chain: ChainRef<'_, '_>,
    set: Mark,
    set_line: impl Fn() -> u32,
) {
    let mut masquerades = false;
    let mismatch = |rule: RuleRef<'_, '_>, what: String, label: &str| {
        out.at_rule(rule, what)
            .with_label(format!("{label} than line {} sets", set_line()))
            .with_help(format!(
                "kube-proxy tests the mark KUBE-MARK-MASQ sets ({}); the masquerade bit differs between the components that wrote these chains: give kubelet (--iptables-masquerade-bit) and kube-proxy (--masquerade-bit) the same bit, or leave both at the default 14, and restart kube-proxy",
                show(set)
            ))
    };
    let mut found = Vec::new();
    for rule in chain.rules() {
        let Some(target) = rule.target() else {
            continue;
        };
        if rule.has_unsupported_revision() {
            // What iptables could not print is RL502's finding; a MASQUERADE is still one.
            masquerades |= matches!(target.name(), "MASQUERADE" | "SNAT");
            continue;
        }
        match target.name() {
            "MASQUERADE" | "SNAT" => {
                masquerades = true;
                if let Some(test) = rule.mark().filter(|m| !m.negated).map(|m| m.value)
                    && !satisfies(set, test)
                {
                    found.push(mismatch(
                        rule,
                        format!(
                            "KUBE-POSTROUTING masquerades mark {} but KUBE-MARK-MASQ sets {}: traffic marked for SNAT is never masqueraded",
                            show(test),
                            show(set)
                        ),
                        "another mark",
                    ));
                }
            }
            "RETURN" => {
                let Some(test) = rule.mark() else {
                    continue;
                };
                if !satisfies(set, test.value) {
                    if test.negated {
                        found.push(mismatch(
                            rule,
                            format!(
                                "KUBE-POSTROUTING skips packets without mark {} but KUBE-MARK-MASQ sets {}: traffic marked for SNAT is never masqueraded",
                                show(test.value),
                                show(set)
                            ),
                            "another mark",
                        ));
                    }
                } else if !test.negated {
                    found.push(
                        out.at_rule(
                            rule,
                            format!(
                                "KUBE-POSTROUTING skips the packets that carry the masquerade mark {}: the `!` of this RETURN is lost",
                                show(test.value)
                            ),
                        )
                        .with_label("returns marked packets: they are never masqueraded, and all others are")
                        .with_help(format!(
                            "kube-proxy writes `-m mark ! --mark {} -j RETURN`; the negation was lost when the rule was rewritten: restart kube-proxy and align the iptables versions of the host and the kube-proxy image",
                            show(test.value)
                        )),
                    );
                }
            }
            "MARK" => {
                if let Some(bits) = flips(rule)
                    && bits & !(set.value & set.mask) != 0
                {
                    found.push(mismatch(
                        rule,
                        format!(
                            "KUBE-POSTROUTING clears mark bits {bits:#x} but KUBE-MARK-MASQ sets {}: the masquerade mark stays and another bit flips",
                            show(set)
                        ),
                        "flips other bits",
                    ));
                }
            }
            _ => {}
        }
    }
    for d in found {
        out.push(d);
    }
    // An entirely empty KUBE-POSTROUTING is RL416 empty-kube-chain's finding.
    if !masquerades && chain.rule_count() > 0 && cx.graph().jumps_into(chain.id).next().is_some() {
        out.push(
            out.diagnostic(
                cx.chain_span(chain),
                "KUBE-POSTROUTING has no MASQUERADE rule: traffic that KUBE-MARK-MASQ marks leaves with its original source address",
            )
            .in_chain(chain.get().table, chain.id)
            .with_label("no MASQUERADE")
            .with_help(format!(
                "kube-proxy ends this chain with `-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully` after `-m mark ! --mark {0} -j RETURN` and `-j MARK --xor-mark {1:#x}`; restart kube-proxy so that it rewrites the chain",
                show(set),
                set.value
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, run};

    const MASQ: &str = "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000\n";
    const POST: &str = "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n";
    const OLD_POST: &str = "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -m mark --mark 0x4000/0x4000 -j MASQUERADE\n";
    const FORWARD: &str = "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark 0x4000/0x4000 -j ACCEPT\n";

    fn dump(masq: &str, post: &str, forward: &str) -> String {
        format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-POSTROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-MARK-MASQ\n{masq}{post}COMMIT\n*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-FORWARD - [0:0]\n-A FORWARD -j KUBE-FORWARD\n{forward}COMMIT\n"
        )
    }

    #[test]
    fn cases() {
        let bit12 = |s: &str| s.replace("0x4000", "0x1000");
        assert_cases(
            &LINT,
            &[
                &dump(MASQ, POST, FORWARD),
                &dump(MASQ, OLD_POST, FORWARD),
                // --masquerade-bit=12 everywhere.
                &dump(&bit12(MASQ), &bit12(POST), &bit12(FORWARD)),
                // kube-proxy's own spelling (restore input), and a 32-bit mark.
                &dump("-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000\n", &POST.replace("--set-xmark 0x4000/0x0", "--xor-mark 0x4000"), FORWARD),
                &dump("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4d415351/0xffffffff\n", "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -m mark --mark 0x4d415351 -j MASQUERADE\n", ""),
                // kubelet (bit 14) and kube-proxy (bit 12) both mark; each test passes.
                &dump(&format!("{MASQ}{}", bit12(MASQ)), &bit12(POST), FORWARD),
                // Nothing jumps to an empty KUBE-MARK-MASQ.
                &dump(MASQ, POST, FORWARD).replace("-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j KUBE-MARK-MASQ\n", "").replace(MASQ, ""),
            ],
            &[
                (&dump(MASQ, &POST.replace("0x4000", "0x8000"), FORWARD), 2),
                (&dump(MASQ, &bit12(OLD_POST), &bit12(FORWARD)), 2),
                (&dump(MASQ, &POST.replace("! --mark", "--mark"), FORWARD), 1),
                (&dump("", POST, FORWARD), 1),
                (&dump(MASQ, "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN\n-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0\n", FORWARD), 1),
            ],
        );
    }

    #[test]
    fn message() {
        let found = run(
            &LINT,
            &dump(MASQ, &POST.replace("0x4000", "0x8000"), FORWARD),
        );
        assert_eq!(
            found[0].message,
            "KUBE-POSTROUTING skips packets without mark 0x8000/0x8000 but KUBE-MARK-MASQ sets 0x4000/0x4000: traffic marked for SNAT is never masqueraded"
        );
    }
}
