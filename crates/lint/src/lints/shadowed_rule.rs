//! RL303 shadowed-rule: a rule that never matches because an earlier rule of its chain with a
//! final verdict matches every packet it would.

use crate::context::{Findings, LintContext};
use crate::known::owner;
use crate::lints::duplicate_rule::rule_hash;
use crate::lints::shadowed_hook_jump::is_hook_jump;
use crate::lints::unreachable_rule::ends_every_walk;
use crate::matchset::{Addresses, Changes, MatchSet};
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, RuleRef, Severity, TableKind};
use rustc_hash::FxHashMap;
use std::net::IpAddr;

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL303",
        name: "shadowed-rule",
        severity: Severity::Warning,
        summary: "an earlier rule with a final verdict matches every packet of this rule, so it never matches",
        docs: "## What it flags
A rule that never sees a packet because an earlier rule of the same chain matches every packet
it would match and ends the walk through the chain: `ACCEPT`, `DROP`, `REJECT`, `RETURN`, a
`-g` goto, and in the nat table also `MASQUERADE`, `SNAT`, `DNAT`, `REDIRECT` and `NETMAP`. The finding
names the line of the earliest such rule.

Matches are compared by what they mean, not by their text: the protocol (`-p 6` is
`-p tcp`, `-p all` is none), source and destination networks and their negation
(`! -d 10.42.0.0/16` covers `-d 192.168.0.0/16`), interfaces with the `+` wildcard and `!`,
ports and port ranges of `-m tcp`/`-m udp` and `-m multiport` (`--dport 8080` is within
`--dports 80,443,8000:9000`), conntrack states (`-m conntrack --ctstate` and
`-m state --state`, sets of states and `!`), and `-m mark --mark VALUE/MASK`. A `-m comment`
is no match.

A shadowed rule with the same verdict as the rule that shadows it (an `ACCEPT` under an
`ACCEPT` of a wider network) changes nothing: it is reported as **info**, dead weight. Any other
shadowed rule (a `DROP` under an `ACCEPT`, a jump, a `LOG`) is a warning: what it was written
to do never happens.

## Why it matters
The rule looks active but is dead: a port that was meant to be closed stays open, a masquerade
exception never applies, a log line never appears. It usually comes from rules appended
(`iptables -A`) below a wider rule that was already there, or from a network that was widened
later.

## Example
A CNI's masquerade rules; `192.168.0.0/16` is outside `10.42.0.0/16`, so the first rule
masquerades every packet the second one was meant to exempt:
```text
-A POSTROUTING -s 10.42.0.0/16 ! -d 10.42.0.0/16 -j MASQUERADE
-A POSTROUTING -s 10.42.0.0/16 -d 192.168.0.0/16 -j RETURN
```

## Instead
Put the narrower rule first, or delete it if the wider rule already does what it should:
```text
-A POSTROUTING -s 10.42.0.0/16 -d 192.168.0.0/16 -j RETURN
-A POSTROUTING -s 10.42.0.0/16 ! -d 10.42.0.0/16 -j MASQUERADE
```

## Exceptions
A match that is not understood (`-m set`, `-m addrtype`, `-m statistic`, `-m limit`,
`-m recent`, `-m physdev`, `-f`, `--tcp-flags`, `--ctstate DNAT`, `-m multiport --ports`, a host
name, ...) on the earlier rule means it is never taken to cover anything: the lint stays silent
rather than guess. On the later rule such a match only narrows it, so the finding still holds.

Rules after an unconditional `ACCEPT`, `DROP`, `REJECT`, `RETURN` or goto (or, in nat, an
unconditional NAT target) are `RL301 unreachable-rule`'s, copies of an earlier rule are `RL302 duplicate-rule`'s, and jumps
from a built-in chain to a Kubernetes, CNI or Docker chain are `RL403 shadowed-hook-jump`'s:
this lint does not report them again. Chains written with `-I`, `-D` or `-R` (restore input)
are skipped.

A rule that lets packets go on may change what a later rule sees: `MARK` and `CONNMARK` (and
any jump to a chain, which may hold them) change the mark, `CT --notrack` the conntrack state.
Past such a rule, an earlier rule that matches on the mark (or the state) no longer covers
anything: Calico follows each jump to a profile chain with the same
`-m mark --mark 0x10000/0x10000 -j RETURN`, and each one is live. A shadowed rule with the same verdict in a chain of kube-proxy, Docker or Flannel
(`KUBE-*`, `DOCKER*`, `FLANNEL-*`) is not reported: the component rewrites the chain, and
kube-proxy 1.17 to 1.21 wrote two `RELATED,ESTABLISHED` ACCEPTs in `KUBE-FORWARD` that differ
only in their comment.

## Known problems
To stay linear on a 25,000-rule `KUBE-SERVICES`, earlier rules are indexed by destination
host, destination port and source host; in each chain only the first 128 rules that have none
of these and the first 16 rules of each index entry are compared, so a rule shadowed only by
a later one of those is not reported. A chain also gets a budget of comparisons (64 per rule
on average, plus a fixed allowance); the rest of a chain that spends it is not checked.

Only the packet's own fields are compared. A rule that jumps to a chain and comes back is
never taken as covering anything, and the mark and state caveats above apply.",
    },
    category: Category::Suspicious,
    check,
};

/// Earlier rules with none of the indexed fields that are compared with every later rule.
const WIDE_MAX: usize = 128;
/// Earlier rules kept per index entry.
const BUCKET_MAX: u32 = 16;
/// Superset tests allowed per chain: this many per rule, plus [`BUDGET_BASE`].
const BUDGET_PER_RULE: usize = 64;
const BUDGET_BASE: usize = 16_384;

/// What a final rule does to its packets, for the message.
fn action(rule: RuleRef<'_, '_>) -> String {
    match rule.target() {
        Some(t) if t.is_goto() => format!("sends to `{}`", t.name()),
        Some(t) => match t.name() {
            "ACCEPT" => "accepts",
            "DROP" => "drops",
            "REJECT" => "rejects",
            "RETURN" => "returns",
            "MASQUERADE" => "masquerades",
            "SNAT" => "source-NATs",
            "DNAT" => "destination-NATs",
            "REDIRECT" => "redirects",
            "NETMAP" => "maps",
            _ => "takes",
        }
        .to_string(),
        None => "takes".to_string(),
    }
}

/// Whether two rules do the same thing to a packet: the same target, written the same way.
fn same_verdict(a: RuleRef<'_, '_>, b: RuleRef<'_, '_>) -> bool {
    match (a.target(), b.target()) {
        (Some(x), Some(y)) => {
            let set = a.ruleset();
            x.is_goto() == y.is_goto()
                && set
                    .text(x.span())
                    .split_ascii_whitespace()
                    .eq(set.text(y.span()).split_ascii_whitespace())
        }
        _ => false,
    }
}

/// Where an earlier final rule is filed: by the destination host and port it requires, or the
/// source host. A later rule can be covered by it only if it requires the same.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    HostPort(IpAddr, u16),
    Host(IpAddr),
    Port(u16),
    Source(IpAddr),
}

fn host(a: &Addresses) -> Option<IpAddr> {
    match a {
        Addresses::In(net) if net.prefix_len() == net.max_prefix_len() => Some(net.addr()),
        _ => None,
    }
}

/// The fields a rule is filed and looked up by.
struct Fields {
    host: Option<IpAddr>,
    port: Option<u16>,
    source: Option<IpAddr>,
}

impl Fields {
    fn of(set: &MatchSet<'_>) -> Fields {
        Fields {
            host: host(&set.destination),
            port: set.destination_ports.as_ref().and_then(|p| p.single()),
            source: host(&set.source),
        }
    }

    /// The entry an earlier rule is filed under; `None`: compared with every later rule.
    fn key(&self) -> Option<Key> {
        match (self.host, self.port, self.source) {
            (Some(h), Some(p), _) => Some(Key::HostPort(h, p)),
            (Some(h), None, _) => Some(Key::Host(h)),
            (None, Some(p), _) => Some(Key::Port(p)),
            (None, None, Some(s)) => Some(Key::Source(s)),
            (None, None, None) => None,
        }
    }

    /// The entries whose rules may cover a later rule with these fields.
    fn lookups(&self) -> impl Iterator<Item = Key> {
        [
            self.host.zip(self.port).map(|(h, p)| Key::HostPort(h, p)),
            self.host.map(Key::Host),
            self.port.map(Key::Port),
            self.source.map(Key::Source),
        ]
        .into_iter()
        .flatten()
    }
}

/// An earlier final rule whose matches are all understood.
struct Earlier<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    set: MatchSet<'a>,
    /// The next (earlier) rule of the same index entry, or `u32::MAX`.
    next: u32,
    /// False once a rule between it and the rule under test may have changed a field it
    /// matches on (the mark, the conntrack state).
    alive: bool,
}

/// The earlier final rules of one chain, reused from chain to chain.
#[derive(Default)]
struct Index<'r, 'a> {
    rules: Vec<Earlier<'r, 'a>>,
    wide: Vec<u32>,
    /// Index entry -> (last rule filed, rules filed).
    buckets: FxHashMap<Key, (u32, u32)>,
    /// Rule hash -> the first rule of the chain with it; built only when a finding needs it.
    hashes: FxHashMap<u64, RuleRef<'r, 'a>>,
    /// Live filed rules that match on the mark, and on the conntrack state.
    with_mark: Vec<u32>,
    with_state: Vec<u32>,
}

impl<'r, 'a> Index<'r, 'a> {
    /// Empties the index for the next chain. Clearing a map costs its capacity, so the maps a
    /// large chain grew are cleared only when something was filed in them.
    fn clear(&mut self) {
        self.rules.clear();
        self.wide.clear();
        if !self.buckets.is_empty() {
            self.buckets.clear();
        }
        if !self.hashes.is_empty() {
            self.hashes.clear();
        }
        self.with_mark.clear();
        self.with_state.clear();
    }

    /// A rule between filed rules and later ones changes what they see: filed rules that match
    /// on what it may change no longer cover anything.
    fn forget(&mut self, changes: Changes) {
        let lists = [
            (changes.mark, &mut self.with_mark),
            (changes.state, &mut self.with_state),
        ];
        for (changed, list) in lists {
            if changed {
                for i in list.drain(..) {
                    self.rules[i as usize].alive = false;
                }
            }
        }
    }

    fn add(&mut self, rule: RuleRef<'r, 'a>, set: MatchSet<'a>) {
        let id = self.rules.len() as u32;
        let (mark, state) = (set.mark.is_some(), set.states.is_some());
        let before = self.rules.len();
        self.file(rule, set);
        if self.rules.len() > before {
            if mark {
                self.with_mark.push(id);
            }
            if state {
                self.with_state.push(id);
            }
        }
    }

    fn file(&mut self, rule: RuleRef<'r, 'a>, set: MatchSet<'a>) {
        let id = self.rules.len() as u32;
        match Fields::of(&set).key() {
            None if self.wide.len() < WIDE_MAX => self.wide.push(id),
            None => return,
            Some(key) => {
                let entry = self.buckets.entry(key).or_insert((u32::MAX, 0));
                if entry.1 >= BUCKET_MAX {
                    return;
                }
                self.rules.push(Earlier {
                    rule,
                    set,
                    next: entry.0,
                    alive: true,
                });
                *entry = (id, entry.1 + 1);
                return;
            }
        }
        self.rules.push(Earlier {
            rule,
            set,
            next: u32::MAX,
            alive: true,
        });
    }

    /// The earliest filed rule that covers `set`, counting the tests against `budget`; `None`
    /// also when the budget runs out.
    fn covering(&self, set: &MatchSet<'_>, budget: &mut usize) -> Option<RuleRef<'r, 'a>> {
        let mut best: Option<RuleRef<'r, 'a>> = None;
        let fields = Fields::of(set);
        let buckets = fields.lookups().flat_map(|key| {
            let mut i = self.buckets.get(&key).map_or(u32::MAX, |e| e.0);
            std::iter::from_fn(move || {
                let e = self.rules.get(i as usize)?;
                i = e.next;
                Some(e)
            })
        });
        for e in self
            .wide
            .iter()
            .map(|&i| &self.rules[i as usize])
            .chain(buckets)
        {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            if e.alive
                && e.set.is_superset_of(set)
                && best.is_none_or(|b| e.rule.get().span.start < b.get().span.start)
            {
                best = Some(e.rule);
            }
        }
        best
    }

    /// Whether `rule` is a copy of an earlier rule of `chain` (`RL302`'s), or might be.
    fn is_copy(&mut self, chain: rulelint_parser::ChainRef<'r, 'a>, rule: RuleRef<'r, 'a>) -> bool {
        if self.hashes.is_empty() {
            for r in chain.rules() {
                self.hashes.entry(rule_hash(r)).or_insert(r);
            }
        }
        // The first rule of the chain with this hash is an earlier rule: the same rule, or a
        // different one with the same hash (unsure: also a copy).
        self.hashes
            .get(&rule_hash(rule))
            .is_some_and(|first| first.id != rule.id)
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let mut index = Index::default();
    for chain in cx.chains() {
        let count = chain.rule_count();
        // Until the first rule whose target may end the walk, there is nothing to compare
        // with; that rule as the last one has nothing to shadow.
        let walk = cx.chain_walk(chain);
        let first_final = walk.first_final as usize;
        if !walk.in_order || first_final + 1 >= count {
            continue;
        }
        let nat = chain.table().kind() == TableKind::Nat;
        let raw = chain.table().kind() == TableKind::Raw;
        index.clear();
        let mut budget = BUDGET_BASE + BUDGET_PER_RULE * count;
        for (i, rule) in chain.rules().enumerate().skip(first_final) {
            let is_final = cx.target_facts(rule.id).ends_walk(nat);
            // Nothing to compare with, and nothing to file: a rule that is not final, or the
            // last rule (a kube-proxy endpoint chain's DNAT).
            if index.rules.is_empty() && (!is_final || i + 1 == count) {
                continue;
            }
            let set = MatchSet::of(rule);
            if !index.rules.is_empty() && !is_hook_jump(rule) {
                if let Some(earlier) = index.covering(&set, &mut budget)
                    && !index.is_copy(chain, rule)
                {
                    report(cx, out, rule, earlier);
                }
                if budget == 0 {
                    break;
                }
            }
            // Everything after this is RL301's.
            if ends_every_walk(cx, rule, nat) {
                break;
            }
            if is_final && set.exact {
                index.add(rule, set);
            } else if !is_final {
                index.forget(Changes::of(rule, raw));
            }
        }
    }
}

fn report(
    cx: &LintContext<'_, '_>,
    out: &mut Findings<'_>,
    rule: RuleRef<'_, '_>,
    earlier: RuleRef<'_, '_>,
) {
    let same = same_verdict(earlier, rule);
    // Dead weight in a chain a component rewrites on every sync (kube-proxy 1.17 to 1.21 wrote
    // two conntrack ACCEPTs that differ in their comment) is not the user's to remove.
    if same && owner(rule.chain().name()).is_some() {
        return;
    }
    // Only now: the first line number builds the dump's line index.
    let line = cx.line(earlier.get().span.start);
    let action = action(earlier);
    let what = if earlier.is_unconditional() {
        "every packet"
    } else {
        "every packet it matches"
    };
    let d = if same {
        let mut d = out
            .at_rule(
                rule,
                format!("rule never matches: the rule on line {line} already {action} {what}"),
            )
            .with_label(format!("shadowed by line {line}, which does the same"))
            .with_help(format!(
                "`{}` on line {line} already does the same to every packet this rule matches: remove this rule",
                earlier.text()
            ));
        d.severity = Severity::Info;
        d
    } else {
        out.at_rule(
            rule,
            format!("rule never matches: the rule on line {line} {action} {what} first"),
        )
        .with_label(format!("shadowed by line {line}"))
        .with_help(format!(
            "`{}` on line {line} matches every packet this rule matches, so this rule never takes effect: move it above line {line} if it should win, or remove it",
            earlier.text()
        ))
    };
    out.push(d);
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
                // The narrower rule first.
                &nat(
                    "-A POSTROUTING -s 10.42.0.0/16 -d 192.168.0.0/16 -j RETURN\n-A POSTROUTING -s 10.42.0.0/16 ! -d 10.42.0.0/16 -j MASQUERADE\n",
                ),
                // Not a superset: the later destination overlaps the excluded network.
                &nat(
                    "-A POSTROUTING -s 10.42.0.0/16 ! -d 10.42.0.0/16 -j MASQUERADE\n-A POSTROUTING -s 10.42.0.0/16 -d 10.0.0.0/8 -j RETURN\n",
                ),
                // A match not understood on the earlier rule.
                &filter(
                    "-A INPUT -p tcp -m set --match-set trusted src -j ACCEPT\n-A INPUT -p tcp -m tcp --dport 22 -j DROP\n",
                ),
                &filter(
                    "-A INPUT -p tcp -m limit --limit 5/min -j ACCEPT\n-A INPUT -p tcp -m tcp --dport 22 -j DROP\n",
                ),
                // The earlier rule is not final.
                &filter("-A INPUT -p tcp -j LOG\n-A INPUT -p tcp -m tcp --dport 22 -j DROP\n"),
                // MASQUERADE ends the walk only in nat.
                &filter(
                    "-A INPUT -s 10.0.0.0/8 -j MARK --set-mark 1\n-A INPUT -s 10.1.0.0/16 -j DROP\n",
                ),
                // After an unconditional ACCEPT: RL301's.
                &filter("-A INPUT -j ACCEPT\n-A INPUT -p tcp -j DROP\n"),
                // A copy of an earlier rule: RL302's.
                &filter("-A INPUT -p tcp -j ACCEPT\n-A INPUT -p tcp -j ACCEPT\n"),
                // A hook jump in a built-in chain: RL403's.
                &filter(
                    ":KUBE-FORWARD - [0:0]\n-A FORWARD -s 10.0.0.0/8 -j ACCEPT\n-A FORWARD -s 10.244.0.0/16 -j KUBE-FORWARD\n-A KUBE-FORWARD -j ACCEPT\n",
                ),
                // Different interfaces, different ports, different protocols.
                &filter(
                    "-A INPUT -i eth0 -j DROP\n-A INPUT -i eth1 -p tcp -j ACCEPT\n-A INPUT -p udp -j DROP\n-A INPUT -p tcp -m tcp --dport 80 -j ACCEPT\n-A INPUT -p tcp -m tcp --dport 443 -j ACCEPT\n",
                ),
                // Calico: the profile chain may set the mark the second RETURN tests.
                &filter(
                    ":cali-fw-x - [0:0]\n:cali-pro-a - [0:0]\n:cali-pro-b - [0:0]\n-A FORWARD -j cali-fw-x\n-A cali-fw-x -j MARK --set-xmark 0x0/0x10000\n-A cali-fw-x -j cali-pro-a\n-A cali-fw-x -m comment --comment \"Return if profile accepted\" -m mark --mark 0x10000/0x10000 -j RETURN\n-A cali-fw-x -j cali-pro-b\n-A cali-fw-x -m comment --comment \"Return if profile accepted\" -m mark --mark 0x10000/0x10000 -j RETURN\n-A cali-fw-x -j DROP\n-A cali-pro-a -p tcp -j MARK --set-xmark 0x10000/0x10000\n-A cali-pro-b -p udp -j MARK --set-xmark 0x10000/0x10000\n",
                ),
                // A MARK between the rules; in raw, a NOTRACK between state matches.
                &filter(
                    "-A INPUT -m mark --mark 0x1/0x1 -j ACCEPT\n-A INPUT -p tcp -j MARK --set-xmark 0x1/0x1\n-A INPUT -p tcp -m mark --mark 0x1/0x1 -j DROP\n",
                ),
                "*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A PREROUTING -m conntrack --ctstate UNTRACKED -j ACCEPT\n-A PREROUTING -p udp -m udp --dport 53 -j NOTRACK\n-A PREROUTING -p udp -m conntrack --ctstate UNTRACKED -j DROP\nCOMMIT\n",
                // Restore input.
                &filter("-A INPUT -p tcp -j ACCEPT\n-I INPUT 1 -p tcp -m tcp --dport 22 -j DROP\n"),
            ],
            &[
                (
                    &nat(
                        "-A POSTROUTING -s 10.42.0.0/16 ! -d 10.42.0.0/16 -j MASQUERADE\n-A POSTROUTING -s 10.42.0.0/16 -d 192.168.0.0/16 -j RETURN\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        "-A INPUT -p tcp -m multiport --dports 22,80,8000:9000 -j ACCEPT\n-A INPUT -p 6 -m tcp --dport 8080 -j DROP\n-A INPUT -p tcp -m tcp --dport 22 -m comment --comment \"ssh\" -j ACCEPT\n",
                    ),
                    2,
                ),
                (
                    &filter(
                        "-A FORWARD -i veth+ -j ACCEPT\n-A FORWARD -i vethab12 -m set --match-set blocked src -j DROP\n",
                    ),
                    1,
                ),
                // A LOG between the rules changes nothing; a MARK changes no address.
                (
                    &filter(
                        "-A INPUT -s 10.0.0.0/8 -j DROP\n-A INPUT -j LOG\n-A INPUT -j MARK --set-mark 1\n-A INPUT -s 10.1.0.0/16 -j ACCEPT\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        "-A INPUT -m state --state RELATED,ESTABLISHED -j ACCEPT\n-A INPUT -p tcp -m conntrack --ctstate ESTABLISHED -m tcp --dport 22 -j LOG\n",
                    ),
                    1,
                ),
            ],
        );
    }

    #[test]
    fn same_verdict_is_info_and_names_the_line() {
        let found = run(
            &LINT,
            &filter(
                "-A INPUT -s 10.0.0.0/8 -j ACCEPT\n-A INPUT -s 10.1.0.0/16 -j ACCEPT\n-A INPUT -s 10.2.0.0/16 -j DROP\n",
            ),
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].severity, Severity::Info);
        assert_eq!(
            found[0].message,
            "rule never matches: the rule on line 5 already accepts every packet it matches"
        );
        assert_eq!(found[1].severity, Severity::Warning);
        assert_eq!(
            found[1].message,
            "rule never matches: the rule on line 5 accepts every packet it matches first"
        );
    }

    #[test]
    fn the_earliest_shadowing_rule_is_named() {
        let rules: String = (0..300)
            .map(|i| {
                format!(
                    "-A INPUT -d 10.0.{}.{}/32 -p tcp -m tcp --dport 80 -j ACCEPT\n",
                    i / 250,
                    i % 250
                )
            })
            .chain([
                "-A INPUT -p tcp -j ACCEPT\n".to_string(),
                "-A INPUT -s 10.9.0.0/16 -d 10.0.1.7/32 -p tcp -m tcp --dport 80 -j DROP\n"
                    .to_string(),
            ])
            .collect();
        let found = run(&LINT, &filter(&rules));
        // The 258th rule (10.0.1.7) is on line 262; the wide `-p tcp` comes later.
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].message.contains("line 262"),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn generated_nodes_are_clean() {
        use rulelint_dumpgen::{Layout, Shape, generate};
        for layout in [Layout::Legacy, Layout::Modern] {
            for ipv6 in [false, true] {
                for counters in [false, true] {
                    let shape = Shape {
                        layout,
                        ipv6,
                        counters,
                        ..Shape::default()
                    };
                    let found = run(&LINT, &generate(&shape));
                    assert!(found.is_empty(), "{layout:?} ipv6={ipv6}: {found:#?}");
                }
            }
        }
        assert!(run(&LINT, &generate(&Shape::with_rule_target(30_000))).is_empty());
    }

    #[test]
    fn a_large_kube_services_of_rejects_is_indexed() {
        // 25,000 "has no endpoints" REJECTs, each for its own cluster IP and port, then one
        // that repeats an earlier address and port with a narrower source: found through the
        // index, not by comparing all pairs.
        let mut rules = String::from(":KUBE-SERVICES - [0:0]\n-A OUTPUT -j KUBE-SERVICES\n");
        for i in 0..25_000u32 {
            rules.push_str(&format!(
                "-A KUBE-SERVICES -d 10.{}.{}.{}/32 -p tcp -m comment --comment \"ns/svc{i}:http has no endpoints\" -m tcp --dport {} -j REJECT --reject-with icmp-port-unreachable\n",
                96 + i / 65_536,
                (i / 256) % 256,
                i % 256,
                80 + i % 7
            ));
        }
        rules.push_str("-A KUBE-SERVICES -s 10.244.0.0/16 -d 10.96.0.7/32 -p tcp -m tcp --dport 80 -j ACCEPT\n");
        let found = run(&LINT, &filter(&rules));
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("line 14"), "{}", found[0].message);
    }

    #[test]
    fn many_rules_stay_within_the_budget() {
        // 20,000 wide rules with distinct sources, none covering the next: bounded work.
        let rules: String = (0..20_000)
            .map(|i| format!("-A INPUT -s 10.{}.{}.0/24 -j ACCEPT\n", i / 256, i % 256))
            .collect();
        assert!(run(&LINT, &filter(&rules)).is_empty());
    }
}
