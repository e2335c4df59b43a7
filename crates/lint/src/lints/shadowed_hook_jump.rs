//! RL403 shadowed-hook-jump: a jump from a built-in chain to a Kubernetes, CNI or Docker chain
//! that an earlier ACCEPT, DROP, REJECT, RETURN or goto takes all the traffic from.

use crate::context::{Findings, LintContext, written_in_order};
use crate::lints::unreachable_rule::ends_walk_in;
use crate::matchset::{Changes, MatchSet};
use crate::registry::{Category, Lint};
use rulelint_parser::{ChainId, ChainRef, CodeInfo, RuleId, RuleRef, Severity, TableKind, Token};
use rustc_hash::{FxHashMap, FxHasher};
use std::collections::hash_map::Entry;
use std::hash::{Hash, Hasher};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL403",
        name: "shadowed-hook-jump",
        severity: Severity::Error,
        summary: "an earlier rule accepts, drops or rejects all the traffic of a Kubernetes, CNI or Docker hook jump",
        docs: "## What it flags
A jump from a built-in chain (`INPUT`, `FORWARD`, `PREROUTING`, ...) to a chain of Kubernetes
(`KUBE-*`, kube-router's `KUBE-ROUTER-*`), a CNI plugin (`FLANNEL-*`, Calico's `cali-*`,
`CNI-*`, `WEAVE*`, Cilium's `CILIUM_*`) or Docker (`DOCKER*`) that an earlier rule of the same
chain takes every packet from: a rule whose target ends the walk through the chain (`ACCEPT`,
`DROP`, `REJECT`, `RETURN`, a `-g` goto, and in the nat table `MASQUERADE`, `SNAT`, `DNAT`,
`REDIRECT` and `NETMAP`) and that matches every packet the jump matches. One finding per
shadowed jump, naming the line of the earliest rule that shadows it.

Matches are compared by what they mean, as `RL303 shadowed-rule` compares them: the protocol,
source and destination networks and their negation, interfaces with the `+` wildcard and `!`,
ports and port ranges (`-m tcp`/`-m udp`, `-m multiport`), conntrack states and
`-m mark --mark`. So `-A FORWARD -s 10.0.0.0/8 -j DROP` shadows
`-A FORWARD -s 10.244.0.0/16 -j KUBE-FORWARD`, `-i eth+` shadows `-i eth0`, and
`--dports 30000:32767` shadows `--dport 30080`. A rule whose matches are all matches of the
jump, written the same way, shadows it too, whatever the matches are (`-m addrtype
--dst-type LOCAL` above a jump with the same match). An unconditional catch-all shadows every
jump after it; `-A FORWARD -i eth0 -j DROP` shadows `-A FORWARD -i eth0 -j KUBE-FORWARD` but
not `-A FORWARD -j KUBE-FORWARD`. A `-m comment` is not a match, and `-m state --state` counts
the same as `-m conntrack --ctstate`.

An unconditional jump to a chain that never returns a packet shadows the jumps after it too:
a host firewall's chain (`-A INPUT -j HOST-FW`, or firewalld's zone chains with a zone target
of `ACCEPT`) that ends in an unconditional `ACCEPT`, `DROP` or `REJECT` (in nat, or a NAT
target) and has no `RETURN`, conditional or not. Jumps inside that chain are followed as far
as they matter: a plain jump returns to it, so any sub-chain is fine; a goto leaves it for
good, so the goto's chain must never return a packet either. Chains are followed 16 levels
deep at most, and a loop counts as returning (unsure, so silent). A conditional jump to such a
chain takes only some packets and shadows nothing.

## Why it matters
The component behind the jump never sees the traffic: Services, pod forwarding or network
policy stop working while every chain looks intact. This is what broke a CentOS 7 kubeadm node
after a reboot: iptables-services restored its saved rules, ending with
`-A FORWARD -j REJECT --reject-with icmp-host-prohibited`, and flanneld appended its
`-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD` after it, so pod traffic
between nodes was rejected (CoreDNS: \"no route to host\").

## Example
```text
-A FORWARD -j REJECT --reject-with icmp-host-prohibited
-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD
```
Through a host firewall's chain that never returns a packet:
```text
-A INPUT -j HOST-FW
-A INPUT -j KUBE-FIREWALL
-A HOST-FW -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A HOST-FW -p tcp -m tcp --dport 22 -j ACCEPT
-A HOST-FW -j DROP
```

## Instead
```text
-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD
-A FORWARD -j REJECT --reject-with icmp-host-prohibited
```
Keep catch-alls last, or let the firewall service manage them below the components' jumps
(with iptables-services, stop saving the components' rules and remove the catch-all from
`/etc/sysconfig/iptables`, or disable the service on Kubernetes nodes).

## Exceptions
Chains written with `-I`, `-D` or `-R` (restore input) are skipped, and so is a called chain
written that way: their order as written is not the order the kernel holds.

A match that is not understood (`-m set`, `-m addrtype`, `-m physdev`, `--tcp-flags`, a host
name, ...) on the earlier rule means it covers nothing by meaning; only a jump that repeats
that match as written can be shadowed by it. Matches with a state of their own
(`-m statistic`, `-m limit`, `-m hashlimit`, `-m quota`, `-m recent`, `-m connlimit`) never
shadow anything, even written alike: each rule draws, counts or limits on its own.

A rule between the two that lets packets go on may change what the jump sees: `MARK` and
`CONNMARK` (and any jump to a chain, which may hold them) change the mark, `CT --notrack` the
conntrack state. Past such a rule, an earlier rule that matches on the mark (or, in raw, the
state) no longer shadows anything. `RL301 unreachable-rule` and `RL303 shadowed-rule` leave
these jumps to this lint.

## Known problems
In a built-in chain the comparisons by meaning get a budget (64 per rule on average, plus a
fixed allowance); the jumps after it is spent are compared by their text only.",
    },
    category: Category::Correctness,
    check,
};

/// Whether a chain is one of Kubernetes, a CNI plugin or Docker, that components hook into
/// the built-in chains.
fn is_hook_target(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "KUBE-", "FLANNEL-", "cali-", "CNI-", "WEAVE", "cilium", "CILIUM_", "DOCKER",
    ];
    name == "FLANNEL" || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// A jump (or goto) from a built-in chain to a Kubernetes, CNI or Docker chain: the rules this
/// lint guards. `RL301 unreachable-rule` leaves these to it.
pub(crate) fn is_hook_jump(rule: RuleRef<'_, '_>) -> bool {
    rule.target().is_some_and(|t| is_hook_target(t.name())) && rule.chain().get().builtin
}

/// One condition of a rule: an option of a match (`-s 10.0.0.0/8`, `conntrack --ctstate NEW`),
/// or a module written without options.
#[derive(Clone, Copy)]
struct Cond<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    module: Option<&'a str>,
    name: &'a str,
    negated: bool,
    args: &'r [Token],
}

impl Cond<'_, '_> {
    fn same(&self, other: &Cond<'_, '_>) -> bool {
        self.module == other.module
            && self.name == other.name
            && self.negated == other.negated
            && self.args.len() == other.args.len()
            && self
                .args
                .iter()
                .zip(other.args)
                .all(|(a, b)| self.rule.token_text(a) == other.rule.token_text(b))
    }

    fn digest(&self) -> u64 {
        let mut h = FxHasher::default();
        self.module.hash(&mut h);
        self.name.hash(&mut h);
        self.negated.hash(&mut h);
        for a in self.args {
            self.rule.token_text(a).hash(&mut h);
        }
        h.finish()
    }
}

/// The conditions of a rule, comments left out, `state` read as `conntrack`, long basic
/// options as short ones.
fn conditions<'r, 'a>(rule: RuleRef<'r, 'a>) -> impl Iterator<Item = Cond<'r, 'a>> {
    rule.matches()
        .filter(|m| m.module() != Some("comment"))
        .flat_map(move |m| {
            let module = m.module().map(|name| match name {
                "state" => "conntrack",
                other => other,
            });
            let bare = (module.is_some() && m.options().next().is_none()).then_some(Cond {
                rule,
                module,
                name: "",
                negated: false,
                args: &[],
            });
            bare.into_iter().chain(m.options().map(move |o| Cond {
                rule,
                module,
                name: match o.name() {
                    "--state" if module == Some("conntrack") => "--ctstate",
                    "--source" => "-s",
                    "--destination" => "-d",
                    "--protocol" => "-p",
                    "--in-interface" => "-i",
                    "--out-interface" => "-o",
                    other => other,
                },
                negated: o.negated(),
                args: o.arg_tokens(),
            }))
        })
}

/// How deep [`Swallowing`] follows jumps and gotos from the chain a hook chain jumps to.
const MAX_DEPTH: u32 = 16;

/// Which chains take every packet that enters them and never let one come back: memoised per
/// chain, cycle-safe (a chain met again while it is being judged does not swallow) and bounded
/// in depth.
#[derive(Default)]
struct Swallowing {
    /// `None` while the chain is being judged.
    memo: FxHashMap<ChainId, Option<bool>>,
}

impl Swallowing {
    /// An unconditional jump (not a goto: that is already terminal) to a chain that swallows
    /// every packet: the rules after it in the calling chain see none.
    fn takes_every_packet(&mut self, rule: RuleRef<'_, '_>) -> bool {
        let Some(target) = rule.target() else {
            return false;
        };
        let Some(chain) = rule.target_chain() else {
            return false;
        };
        !target.is_goto()
            && rule.is_unconditional()
            && self.swallows(rule.ruleset().chain(chain), 0)
    }

    fn swallows(&mut self, chain: ChainRef<'_, '_>, depth: u32) -> bool {
        match self.memo.get(&chain.id) {
            Some(Some(known)) => return *known,
            // A loop (malformed input, `RL202`): unsure.
            Some(None) => return false,
            None => {}
        }
        if depth >= MAX_DEPTH {
            return false;
        }
        self.memo.insert(chain.id, None);
        let answer = self.judge(chain, depth);
        self.memo.insert(chain.id, Some(answer));
        answer
    }

    /// A user chain swallows every packet when no rule in it can send a packet back: it holds
    /// no `RETURN` at all (a conditional one lets some packets back), every goto in it leads to
    /// a chain that swallows (a `RETURN` there would return to our caller), and its last
    /// reachable rule is an unconditional `ACCEPT`, `DROP` or `REJECT`, or an unconditional
    /// jump or goto to a chain that swallows. Plain jumps to other chains are fine: what they
    /// return comes back to this chain.
    fn judge(&mut self, chain: ChainRef<'_, '_>, depth: u32) -> bool {
        if chain.get().builtin || !written_in_order(chain) {
            return false;
        }
        let set = chain.ruleset();
        let nat = chain.table().kind() == TableKind::Nat;
        for rule in chain.rules() {
            let Some(target) = rule.target() else {
                continue;
            };
            let unconditional = rule.is_unconditional();
            match (rule.target_chain(), target.is_goto()) {
                (Some(next), true) => {
                    if !self.swallows(set.chain(next), depth + 1) {
                        return false;
                    }
                    if unconditional {
                        return true;
                    }
                }
                // A goto to something that is not a chain of the table: unsure.
                (None, true) => return false,
                (Some(next), false) => {
                    if unconditional && self.swallows(set.chain(next), depth + 1) {
                        return true;
                    }
                }
                (None, false) => match target.name() {
                    "RETURN" => return false,
                    // ACCEPT, DROP, REJECT; in nat a NAT target.
                    _ if unconditional && ends_walk_in(rule, nat) => return true,
                    _ => {}
                },
            }
        }
        // Falling off the end returns to the caller.
        false
    }
}

/// Jumps with more conditions than this are checked against unconditional rules only (their
/// subsets are enumerated).
const MAX_CONDITIONS: usize = 8;
/// Superset tests allowed per chain: this many per rule, plus [`BUDGET_BASE`] (as in
/// `RL303 shadowed-rule`).
const BUDGET_PER_RULE: usize = 64;
const BUDGET_BASE: usize = 16_384;

/// Matches whose answer depends on more than the packet: two rules with the same such match
/// answer independently (a random draw each, a rate or quota each), so the earlier one never
/// takes every packet of the later one, whatever their text.
fn is_stateful_module(module: &str) -> bool {
    matches!(
        module,
        "statistic" | "limit" | "hashlimit" | "quota" | "recent" | "connlimit" | "nth" | "random"
    )
}

/// The key of a terminal rule's conditions in [`Terminals::by_conditions`]: their number and an
/// order-independent hash.
type CondKey = (usize, u64);

/// An earlier terminal rule whose matches are all understood, by meaning.
struct Earlier<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    set: MatchSet<'a>,
    /// False once a rule between it and the jump may have changed the mark or the conntrack
    /// state it matches on.
    alive: bool,
}

/// The terminal rules seen so far in one built-in chain, reused from chain to chain: by their
/// conditions as written, and by meaning.
#[derive(Default)]
struct Terminals<'r, 'a> {
    /// Conditions -> the first terminal rule with exactly these conditions.
    by_conditions: FxHashMap<CondKey, RuleId>,
    /// Keys whose rule matches on the mark (`mark`, `connmark`, `conntrack --ctmark`), and on
    /// the conntrack state (`conntrack`, `state`).
    keys_with_mark: Vec<CondKey>,
    keys_with_state: Vec<CondKey>,
    /// Terminal rules in chain order, their matches read by [`MatchSet`].
    earlier: Vec<Earlier<'r, 'a>>,
    with_mark: Vec<u32>,
    with_state: Vec<u32>,
}

impl<'r, 'a> Terminals<'r, 'a> {
    fn clear(&mut self) {
        if !self.by_conditions.is_empty() {
            self.by_conditions.clear();
        }
        self.keys_with_mark.clear();
        self.keys_with_state.clear();
        self.earlier.clear();
        self.with_mark.clear();
        self.with_state.clear();
    }

    fn is_empty(&self) -> bool {
        self.by_conditions.is_empty() && self.earlier.is_empty()
    }

    /// Files a terminal rule; `set`: its match set, when the jumps after it need one.
    fn add(&mut self, rule: RuleRef<'r, 'a>, set: Option<MatchSet<'a>>) {
        let (mut n, mut h) = (0, 0u64);
        let (mut mark, mut state, mut stateful) = (false, false, false);
        for c in conditions(rule) {
            n += 1;
            h = h.wrapping_add(c.digest());
            match (c.module, c.name) {
                (Some("mark" | "connmark"), _) => mark = true,
                // `state` is read as `conntrack --ctstate`.
                (Some("conntrack"), "--ctstate") => state = true,
                // `--ctmark`, `--ctstatus`, ...: the connection mark, or unsure.
                (Some("conntrack"), _) => {
                    mark = true;
                    state = true;
                }
                (Some(m), _) if is_stateful_module(m) => stateful = true,
                _ => {}
            }
        }
        if n <= MAX_CONDITIONS
            && !stateful
            && let Entry::Vacant(v) = self.by_conditions.entry((n, h))
        {
            v.insert(rule.id);
            if mark {
                self.keys_with_mark.push((n, h));
            }
            if state {
                self.keys_with_state.push((n, h));
            }
        }
        if let Some(set) = set.filter(|s| s.exact) {
            let id = self.earlier.len() as u32;
            if set.mark.is_some() {
                self.with_mark.push(id);
            }
            if set.states.is_some() {
                self.with_state.push(id);
            }
            self.earlier.push(Earlier {
                rule,
                set,
                alive: true,
            });
        }
    }

    /// A rule between terminal rules and later jumps changes what they see: terminal rules
    /// that match on what it may change no longer take anything from the jumps after it.
    fn forget(&mut self, changes: Changes) {
        for (changed, keys) in [
            (changes.mark, &mut self.keys_with_mark),
            (changes.state, &mut self.keys_with_state),
        ] {
            if changed {
                for k in keys.drain(..) {
                    self.by_conditions.remove(&k);
                }
            }
        }
        for (changed, list) in [
            (changes.mark, &mut self.with_mark),
            (changes.state, &mut self.with_state),
        ] {
            if changed {
                for i in list.drain(..) {
                    self.earlier[i as usize].alive = false;
                }
            }
        }
    }

    /// The earliest terminal rule that takes every packet of the jump: by its conditions as
    /// written (a subset of the jump's), or by meaning (its match set holds the jump's). The
    /// comparisons by meaning count against `budget`.
    fn shadowing(
        &self,
        cx: &LintContext<'r, 'a>,
        jump: RuleRef<'_, '_>,
        conds: &[Cond<'_, '_>],
        budget: &mut usize,
    ) -> Option<RuleRef<'r, 'a>> {
        let mut best = shadowing(cx, &self.by_conditions, conds);
        if !self.earlier.is_empty() && *budget > 0 {
            let set = MatchSet::of(jump);
            for e in &self.earlier {
                if best.is_some_and(|b| b.get().span.start <= e.rule.get().span.start) {
                    break;
                }
                if *budget == 0 {
                    break;
                }
                *budget -= 1;
                if e.alive && e.set.is_superset_of(&set) {
                    best = Some(e.rule);
                    break;
                }
            }
        }
        best
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let mut terminals = Terminals::default();
    let mut conds: Vec<Cond<'_, '_>> = Vec::new();
    let mut swallowing = Swallowing::default();
    for chain in cx.chains() {
        if !chain.get().builtin || !written_in_order(chain) {
            continue;
        }
        // Rules after the last hook jump shadow nothing this lint reports.
        let Some(last_jump) = chain
            .rules()
            .enumerate()
            .filter(|&(_, r)| is_hook_jump(r))
            .map(|(i, _)| i)
            .last()
        else {
            continue;
        };
        let nat = chain.table().kind() == TableKind::Nat;
        let raw = chain.table().kind() == TableKind::Raw;
        terminals.clear();
        let mut budget = BUDGET_BASE + BUDGET_PER_RULE * chain.rule_count();
        for rule in chain.rules().take(last_jump + 1) {
            if is_hook_jump(rule) && !terminals.is_empty() {
                conds.clear();
                conds.extend(conditions(rule));
                if let Some(shadow) = terminals.shadowing(cx, rule, &conds, &mut budget) {
                    report(cx, out, rule, shadow);
                }
            }
            if ends_walk_in(rule, nat) || swallowing.takes_every_packet(rule) {
                terminals.add(rule, Some(MatchSet::of(rule)));
            } else {
                terminals.forget(Changes::of(rule, raw));
            }
        }
    }
}

/// The first terminal rule whose conditions are a subset of `conds`.
fn shadowing<'r, 'a>(
    cx: &LintContext<'r, 'a>,
    terminals: &FxHashMap<CondKey, RuleId>,
    conds: &[Cond<'_, '_>],
) -> Option<RuleRef<'r, 'a>> {
    let set = cx.ruleset();
    let subsets: u32 = if conds.len() <= MAX_CONDITIONS {
        1 << conds.len()
    } else {
        1
    };
    let mut best: Option<RuleRef<'r, 'a>> = None;
    for mask in 0..subsets {
        // The key of a set of conditions: its size and an order-independent hash.
        let k = conds
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .fold((0usize, 0u64), |(n, h), (_, c)| {
                (n + 1, h.wrapping_add(c.digest()))
            });
        let Some(&id) = terminals.get(&k) else {
            continue;
        };
        let candidate = set.rule(id);
        if best.is_some_and(|b| b.get().span.start <= candidate.get().span.start) {
            continue;
        }
        // The key is a hash: confirm that every condition is one of the jump's.
        if conditions(candidate).all(|c| conds.iter().any(|j| c.same(j))) {
            best = Some(candidate);
        }
    }
    best
}

fn report(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    jump: RuleRef<'_, '_>,
    shadow: RuleRef<'_, '_>,
) {
    let Some(target) = jump.target() else {
        return;
    };
    let line = cx.line(shadow.get().span.start);
    let swallowing_jump = shadow
        .target()
        .is_some_and(|t| !t.is_goto() && shadow.target_chain().is_some());
    let action = match shadow.target() {
        Some(t) if t.is_goto() => format!("sends to {}", t.name()),
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
        None => return,
    };
    let what = if shadow.is_unconditional() {
        "every packet"
    } else {
        "all of its packets"
    };
    let chain = jump.chain();
    let table = chain.table();
    let verb = if target.is_goto() { "goto" } else { "jump" };
    // The jump as an iptables command that puts it right above the shadowing rule.
    let position = chain
        .rules()
        .position(|r| r.id == shadow.id)
        .map_or(1, |i| i + 1);
    let spec = rule_spec(jump);
    out.push(
        out.at_rule(
            jump,
            match shadow.target() {
                Some(called) if swallowing_jump => format!(
                    "the {verb} to {} is never taken: the rule on line {line} sends every packet to {} first, and that chain returns none",
                    target.name(),
                    called.name()
                ),
                _ => format!(
                    "the {verb} to {} is never taken: the rule on line {line} {action} {what} first",
                    target.name()
                ),
            },
        )
        .with_label(format!("shadowed by line {line}"))
        .with_help(format!(
            "`{}` on line {line} ends the walk through {} for every packet this {verb} matches{}: move that rule below the {verb}, or move the {verb} above it (`iptables -t {table} -D {chain} {spec}`, then `iptables -t {table} -I {chain} {position} {spec}`); the usual cause is a firewall service or script (iptables-services, a saved ruleset) that puts its rules above the jumps components append",
            shadow.text(),
            chain.name(),
            if swallowing_jump {
                " (the chain it jumps to ends in an unconditional ACCEPT, DROP or REJECT and never returns a packet)"
            } else {
                ""
            },
            table = table.name(),
            chain = chain.name(),
        )),
    );
}

/// A rule's text after `-A CHAIN`.
fn rule_spec<'a>(rule: RuleRef<'_, 'a>) -> &'a str {
    let text = rule.text();
    let mut words = text.splitn(3, ' ');
    match (words.next(), words.next(), words.next()) {
        (Some(_), Some(_), Some(rest)) => rest,
        _ => text,
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
                // The jump comes first.
                &filter(
                    ":FLANNEL-FWD - [0:0]\n-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD\n-A FORWARD -j REJECT --reject-with icmp-host-prohibited\n-A FLANNEL-FWD -s 10.244.0.0/16 -j ACCEPT\n",
                ),
                // Earlier rules with a match the jump lacks.
                &filter(
                    ":KUBE-FIREWALL - [0:0]\n-A INPUT -i wt0 -j ACCEPT\n-A INPUT -m state --state RELATED,ESTABLISHED -j ACCEPT\n-A INPUT -j KUBE-FIREWALL\n",
                ),
                &filter(
                    ":DOCKER - [0:0]\n-A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n-A FORWARD -o docker0 -j DOCKER\n",
                ),
                // Not a terminal verdict; not a hook chain.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n:MY-CHAIN - [0:0]\n-A FORWARD -j LOG\n-A FORWARD -j MY-CHAIN\n-A FORWARD -j KUBE-FORWARD\n-A MY-CHAIN -j RETURN\n",
                ),
                // A user chain is not a built-in chain.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n:MY - [0:0]\n-A FORWARD -j MY\n-A MY -j ACCEPT\n-A MY -j KUBE-FORWARD\n",
                ),
                // Restore input: -I puts the jump first.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -j DROP\n-I FORWARD 1 -j KUBE-FORWARD\n",
                ),
                // The called chain lets packets back: a conditional RETURN, falling off the end,
                // a goto to a chain that returns; or the jump to it is conditional.
                &filter(
                    ":HOST-FW - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j HOST-FW\n-A INPUT -j KUBE-FIREWALL\n-A HOST-FW -s 10.0.0.0/8 -j RETURN\n-A HOST-FW -j ACCEPT\n-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n",
                ),
                &filter(
                    ":HOST-FW - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j HOST-FW\n-A INPUT -j KUBE-FIREWALL\n-A HOST-FW -p tcp -j ACCEPT\n-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n",
                ),
                &filter(
                    ":HOST-FW - [0:0]\n:ZONE - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j HOST-FW\n-A INPUT -j KUBE-FIREWALL\n-A HOST-FW -i eth0 -g ZONE\n-A HOST-FW -j ACCEPT\n-A ZONE -p tcp -j ACCEPT\n-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n",
                ),
                &filter(
                    ":HOST-FW - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -i eth0 -j HOST-FW\n-A INPUT -j KUBE-FIREWALL\n-A HOST-FW -j ACCEPT\n-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n",
                ),
                // Chains that loop (malformed): unsure, silent, and no hang.
                &filter(
                    ":A - [0:0]\n:B - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j A\n-A INPUT -j KUBE-FIREWALL\n-A A -g B\n-A B -g A\n-A KUBE-FIREWALL -j DROP\n",
                ),
                &filter(
                    ":A - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j A\n-A INPUT -j KUBE-FIREWALL\n-A A -j A\n-A KUBE-FIREWALL -j DROP\n",
                ),
                // Different arguments.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -i eth0 -j DROP\n-A FORWARD -i eth1 -j KUBE-FORWARD\n",
                ),
                // By meaning: overlapping but not covering (a narrower network, another port
                // range, a wildcard below a name, a negation that lets the jump's packets by).
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -s 10.244.1.0/24 -j DROP\n-A FORWARD -i eth+ -o eth0 -j DROP\n-A FORWARD -p tcp -m tcp --dport 1000:2000 -j DROP\n-A FORWARD ! -s 10.0.0.0/8 -j DROP\n-A FORWARD -s 10.244.0.0/16 -i eth0 -p tcp -m multiport --dports 1500:2500 -j KUBE-FORWARD\n",
                ),
                // A match not understood on the earlier rule: never a superset.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -s 10.0.0.0/8 -m set --match-set blocked src -j DROP\n-A FORWARD -s 10.244.0.0/16 -j KUBE-FORWARD\n",
                ),
                // A MARK (or a jump to a chain) between the rules may set the mark the earlier
                // rule tests; the same for a conntrack state and a NOTRACK in raw.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -m mark --mark 0x1/0x1 -j ACCEPT\n-A FORWARD -s 10.244.0.0/16 -j MARK --set-xmark 0x1/0x1\n-A FORWARD -m mark --mark 0x1/0x1 -j KUBE-FORWARD\n",
                ),
                &filter(
                    ":MY - [0:0]\n:KUBE-FORWARD - [0:0]\n-A FORWARD -m mark --mark 0x4000/0xc000 -j ACCEPT\n-A FORWARD -j MY\n-A FORWARD -m mark --mark 0x4000/0x4000 -j KUBE-FORWARD\n-A MY -j MARK --set-xmark 0x4000/0xc000\n",
                ),
                "*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:cali-PREROUTING - [0:0]\n-A PREROUTING -m conntrack --ctstate UNTRACKED -j ACCEPT\n-A PREROUTING -p udp -m udp --dport 53 -j CT --notrack\n-A PREROUTING -m conntrack --ctstate UNTRACKED -j cali-PREROUTING\nCOMMIT\n",
                // Matches with a state of their own answer independently, even written alike.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -m statistic --mode random --probability 0.5 -j DROP\n-A FORWARD -m statistic --mode random --probability 0.5 -j KUBE-FORWARD\n-A FORWARD -m limit --limit 5/sec -j ACCEPT\n-A FORWARD -m limit --limit 5/sec -j KUBE-FORWARD\n",
                ),
                // NAT targets end the walk only in nat; a conditional MASQUERADE in nat.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -j MASQUERADE\n-A FORWARD -j KUBE-FORWARD\n",
                ),
                "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-POSTROUTING - [0:0]\n-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE\n-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n-A KUBE-POSTROUTING -j MASQUERADE\nCOMMIT\n",
            ],
            &[
                (
                    &filter(
                        ":FLANNEL-FWD - [0:0]\n-A FORWARD -j REJECT --reject-with icmp-host-prohibited\n-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD\n-A FLANNEL-FWD -s 10.244.0.0/16 -j ACCEPT\n",
                    ),
                    1,
                ),
                // A subset of the jump's matches; `state` is `conntrack`.
                (
                    &filter(
                        ":KUBE-SERVICES - [0:0]\n-A OUTPUT -m state --state NEW -j ACCEPT\n-A OUTPUT -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        ":KUBE-FORWARD - [0:0]\n:cali-FORWARD - [0:0]\n-A FORWARD -i eth0 -j DROP\n-A FORWARD -p tcp -i eth0 -j cali-FORWARD\n-A FORWARD -j RETURN\n-A FORWARD -j KUBE-FORWARD\n",
                    ),
                    2,
                ),
                // A host firewall chain that ends in DROP; one whose sub-chain jumps return to
                // it, and whose goto leads to a chain ending in ACCEPT.
                (
                    &filter(
                        ":HOST-FW - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j HOST-FW\n-A INPUT -m comment --comment \"x\" -j KUBE-FIREWALL\n-A HOST-FW -p tcp -m tcp --dport 22 -j ACCEPT\n-A HOST-FW -j DROP\n-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n",
                    ),
                    1,
                ),
                // By meaning: a wider network, an interface wildcard, a port range, a negation
                // that excludes none of the jump's packets; the earliest is named.
                (
                    &filter(
                        ":KUBE-FORWARD - [0:0]\n-A FORWARD -s 10.0.0.0/8 -j DROP\n-A FORWARD -s 10.244.0.0/16 -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        ":DOCKER-USER - [0:0]\n:KUBE-FORWARD - [0:0]\n:cali-FORWARD - [0:0]\n-A FORWARD -i eth+ -j ACCEPT\n-A FORWARD -p tcp -m multiport --dports 30000:32767 -j DROP\n-A FORWARD ! -d 192.168.0.0/16 -j REJECT\n-A FORWARD -i eth0 -j DOCKER-USER\n-A FORWARD -p tcp -m tcp --dport 30080 -j KUBE-FORWARD\n-A FORWARD -d 10.244.0.0/16 -j cali-FORWARD\n",
                    ),
                    3,
                ),
                // A mark test survives rules that change no mark; a state test survives a jump
                // outside raw.
                (
                    &filter(
                        ":KUBE-FORWARD - [0:0]\n:KUBE-SERVICES - [0:0]\n-A FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT\n-A FORWARD -j LOG\n-A FORWARD -m mark --mark 0x4000/0xffff -j KUBE-FORWARD\n-A FORWARD -m conntrack --ctstate NEW -j DROP\n-A FORWARD -j KUBE-FORWARD\n-A FORWARD -m conntrack --ctstate NEW -j KUBE-SERVICES\n",
                    ),
                    2,
                ),
                // In nat, an unconditional MASQUERADE; a chain that ends in one and never
                // returns.
                (
                    "*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:KUBE-POSTROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n:NAT-ALL - [0:0]\n-A PREROUTING -j NAT-ALL\n-A PREROUTING -j KUBE-SERVICES\n-A POSTROUTING -o eth0 -j MASQUERADE\n-A POSTROUTING -o eth0 -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING\n-A NAT-ALL -p tcp -j DNAT --to-destination 10.0.0.2\n-A NAT-ALL -j DNAT --to-destination 10.0.0.3\n-A KUBE-POSTROUTING -j MASQUERADE\nCOMMIT\n",
                    2,
                ),
                (
                    &filter(
                        ":FW - [0:0]\n:FW-LOG - [0:0]\n:FW-ZONE - [0:0]\n:KUBE-FORWARD - [0:0]\n-A FORWARD -m comment --comment \"host firewall\" -j FW\n-A FORWARD -j KUBE-FORWARD\n-A FW -j FW-LOG\n-A FW -i eth0 -g FW-ZONE\n-A FW -j FW-ZONE\n-A FW-LOG -j RETURN\n-A FW-ZONE -p icmp -j ACCEPT\n-A FW-ZONE -j ACCEPT\n-A KUBE-FORWARD -j ACCEPT\n",
                    ),
                    1,
                ),
            ],
        );
    }

    #[test]
    fn a_swallowing_jump_is_named_in_the_message() {
        let found = run(
            &LINT,
            &filter(
                ":HOST-FW - [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j HOST-FW\n-A INPUT -j KUBE-FIREWALL\n-A HOST-FW -j ACCEPT\n-A KUBE-FIREWALL -m mark --mark 0x8000/0x8000 -j DROP\n",
            ),
        );
        assert_eq!(
            found[0].message,
            "the jump to KUBE-FIREWALL is never taken: the rule on line 7 sends every packet to HOST-FW first, and that chain returns none"
        );
    }

    #[test]
    fn deep_and_long_chains_of_jumps_stay_bounded() {
        // 2,000 chains, each going to the next: beyond the depth bound, unsure and silent.
        let mut rules = String::new();
        for i in 0..2_000 {
            rules.push_str(&format!(":C{i} - [0:0]\n"));
        }
        rules.push_str(":KUBE-FIREWALL - [0:0]\n-A INPUT -j C0\n-A INPUT -j KUBE-FIREWALL\n");
        for i in 0..1_999 {
            rules.push_str(&format!("-A C{i} -g C{}\n", i + 1));
        }
        rules.push_str("-A C1999 -j ACCEPT\n-A KUBE-FIREWALL -j DROP\n");
        assert!(run(&LINT, &filter(&rules)).is_empty());
    }

    #[test]
    fn a_superset_by_meaning_is_named() {
        let found = run(
            &LINT,
            &filter(
                ":KUBE-FORWARD - [0:0]\n-A FORWARD -s 10.0.0.0/8 -j DROP\n-A FORWARD -s 10.244.0.0/16 -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n",
            ),
        );
        assert_eq!(
            found[0].message,
            "the jump to KUBE-FORWARD is never taken: the rule on line 6 drops all of its packets first"
        );
    }

    #[test]
    fn message_names_the_shadowing_line() {
        let found = run(
            &LINT,
            &filter(
                ":FLANNEL-FWD - [0:0]\n-A FORWARD -j REJECT --reject-with icmp-host-prohibited\n-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD\n",
            ),
        );
        assert_eq!(
            found[0].message,
            "the jump to FLANNEL-FWD is never taken: the rule on line 6 rejects every packet first"
        );
        assert!(is_hook_target("KUBE-ROUTER-FORWARD") && is_hook_target("FLANNEL"));
        assert!(!is_hook_target("ufw-before-input") && !is_hook_target("LOGDROP"));
    }
}
