//! RL302 duplicate-rule: the same rule more than once in a chain.

use crate::context::{Findings, LintContext};
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, RuleId, RuleRef, Ruleset, Severity, Token, Tokens};
use rustc_hash::{FxHashMap, FxHasher};
use std::collections::hash_map::Entry;
use std::hash::{Hash, Hasher};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL302",
        name: "duplicate-rule",
        severity: Severity::Warning,
        summary: "the same rule (ignoring counters) appears more than once in a chain",
        docs: "## What it flags
A rule that appears again, word for word apart from spacing and `[packets:bytes]` counters, in
the same chain. One finding per repeated rule, on its second copy, with the number of copies.

## Why it matters
The copies change nothing but cost a match per packet and a line per sync. Many copies mean the
program that writes the chain checks for its rule wrongly before appending it, and appends
again on every restart or sync: the rules grow without bound (kubernetes#82361, k3s#3117).

## Example
```text
-A INPUT -j KUBE-ROUTER-INPUT
-A INPUT -j KUBE-ROUTER-INPUT
-A INPUT -j KUBE-ROUTER-INPUT
```

## Instead
Delete the copies (`iptables -D INPUT -j KUBE-ROUTER-INPUT` until one is left) and upgrade the
component that keeps adding them.

## References
- https://github.com/kubernetes/kubernetes/issues/82361
- https://github.com/k3s-io/k3s/issues/3117",
    },
    category: Category::Suspicious,
    check,
};

/// The first copy of a rule and how many there are.
struct Group {
    first: u32,
    second: u32,
    copies: u32,
}

/// A hash of the rule's words (their kinds, negation and text), ignoring spacing and counters.
pub(crate) fn rule_hash(rule: RuleRef<'_, '_>) -> u64 {
    let set = rule.ruleset();
    let mut h = FxHasher::default();
    for t in rule.tokens() {
        (t.kind() as u8, t.negated()).hash(&mut h);
        set.text(t.span()).hash(&mut h);
    }
    h.finish()
}

/// Whether two rules have the same words (kinds, negation and text). Compared from the last
/// word: rules of one chain mostly differ in their target or its options, so most pairs differ
/// at the first word compared.
fn same_rule(a: RuleRef<'_, '_>, b: RuleRef<'_, '_>) -> bool {
    same_words(a.ruleset(), &a.tokens(), &b.tokens())
}

/// [`same_rule`] over the two rules' words.
fn same_words(set: &Ruleset<'_>, a: &[Token], b: &[Token]) -> bool {
    a.len() == b.len()
        && a.iter().rev().zip(b.iter().rev()).all(|(x, y)| {
            x.kind() == y.kind()
                && x.negated() == y.negated()
                && set.text(x.span()) == set.text(y.span())
        })
}

/// A rule's word count and last word (kind, negation, text), hashed: rules with different
/// keys differ. Read at most once per rule of a small chain, so that each pair of its rules is
/// told apart by two numbers (the jumps of a Service chain to its endpoints differ only in
/// their last word) rather than by reading both rules' words again.
fn last_word_key(set: &Ruleset<'_>, words: &[Token]) -> u64 {
    let mut h = FxHasher::default();
    words.len().hash(&mut h);
    if let Some(t) = words.last() {
        (t.kind() as u8, t.negated()).hash(&mut h);
        set.text(t.span()).hash(&mut h);
    }
    h.finish()
}

/// Chains up to this many rules are compared pairwise by hash; larger ones go through a map.
/// Most chains of a kube-proxy node have two or three rules, and clearing a map costs its
/// capacity, so small chains must not touch the map a large chain grew.
const PAIRWISE_MAX: usize = 32;

/// What a rule's target is, as the parser read it: equal for two rules with the same words
/// (the same target name in one table is the same class, flag and chain). Its chain (33 bits,
/// `None` being the 33rd), class and goto flag packed into one number: a small chain's keys are
/// compared pairwise, and a struct of two options compared field by field cost most of this
/// lint's time on a kube-proxy node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct TargetKey(u64);

impl TargetKey {
    fn of(rule: RuleRef<'_, '_>) -> TargetKey {
        let chain = rule.target_chain().map_or(1 << 32, |c| u64::from(c.0));
        let class = rule.target_class() as u64;
        TargetKey(chain | class << 33 | u64::from(rule.is_goto()) << 41)
    }
}

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    let set = cx.ruleset();
    // Reused across chains. In the map, a hash collision between different rules probes the
    // next hash value, so different rules are never merged.
    let mut index: FxHashMap<u64, u32> = FxHashMap::default();
    // A large chain's rules by a hash of their target and word count: the first such rule
    // while it is the only one (not yet in `index`), `None` once the key's rules are hashed
    // into `index`. Two keys with one hash only make more rules hashed; an entry is no larger
    // than one of `index`, which used to hold every rule.
    let mut unhashed: FxHashMap<u64, Option<RuleId>> = FxHashMap::default();
    let mut rules: Vec<(RuleId, Tokens<'_>)> = Vec::new();
    let mut keys: Vec<Option<u64>> = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut targets: Vec<TargetKey> = Vec::with_capacity(PAIRWISE_MAX);
    for chain in cx.chains() {
        let count = chain.rule_count();
        if count < 2 || !cx.chain_walk(chain).in_order {
            continue;
        }
        groups.clear();
        if count <= PAIRWISE_MAX {
            // Rules with the same words have the same target: a chain whose rules all differ
            // there (a kube-proxy node's Service and endpoint chains) has no copies, told from
            // the parser's target class and chain without reading any rule's words.
            // (A reused vector: filling an array of `PAIRWISE_MAX` keys per chain cost more
            // than reading the keys of a kube-proxy node's chains of two or three rules.)
            targets.clear();
            targets.extend(chain.rules().map(TargetKey::of));
            if !targets
                .iter()
                .enumerate()
                .any(|(i, t)| targets[i + 1..].contains(t))
            {
                continue;
            }
            // Compared directly, without hashing every word of every rule: a pair of
            // different rules is told apart by its word counts, then by its last words' key,
            // read only for rules with a word count some other rule of the chain shares (an
            // endpoint chain's two rules never are).
            rules.clear();
            rules.extend(chain.rules().map(|rule| (rule.id, rule.tokens())));
            keys.clear();
            keys.resize(count, None);
            let mut key = |i: usize, rules: &[(RuleId, Tokens<'_>)]| {
                *keys[i].get_or_insert_with(|| last_word_key(set, &rules[i].1))
            };
            let mut counted = [false; PAIRWISE_MAX];
            for i in 0..count {
                if counted[i] {
                    continue;
                }
                let (first, words) = &rules[i];
                let mut group = Group {
                    first: first.0,
                    second: first.0,
                    copies: 1,
                };
                for j in i + 1..count {
                    let (other, other_words) = &rules[j];
                    if !counted[j]
                        && words.len() == other_words.len()
                        && key(i, &rules) == key(j, &rules)
                        && same_words(set, words, other_words)
                    {
                        counted[j] = true;
                        if group.copies == 1 {
                            group.second = other.0;
                        }
                        group.copies += 1;
                    }
                }
                groups.push(group);
            }
        } else {
            index.clear();
            // Not reserved at the chain's size: a chain of a million copies of one rule holds one
            // key.
            unhashed.clear();
            // A rule's words are hashed only once another rule of the chain has its target and
            // word count: in kube-proxy's large chains (`KUBE-SERVICES`, `KUBE-NODEPORTS`) each
            // rule jumps to a chain of its own, and hashing every word of every rule was most of
            // this lint's time.
            let mut add = |rule: RuleRef<'_, '_>| {
                let mut h = rule_hash(rule);
                loop {
                    match index.get(&h) {
                        None => {
                            index.insert(h, groups.len() as u32);
                            groups.push(Group {
                                first: rule.id.0,
                                second: rule.id.0,
                                copies: 1,
                            });
                            break;
                        }
                        Some(&g) => {
                            let group = &mut groups[g as usize];
                            if same_rule(set.rule(RuleId(group.first)), rule) {
                                if group.copies == 1 {
                                    group.second = rule.id.0;
                                }
                                group.copies += 1;
                                break;
                            }
                            h = h.wrapping_add(1);
                        }
                    }
                }
            };
            for rule in chain.rules() {
                let mut h = FxHasher::default();
                (TargetKey::of(rule), rule.tokens().len()).hash(&mut h);
                match unhashed.entry(h.finish()) {
                    Entry::Vacant(slot) => {
                        slot.insert(Some(rule.id));
                    }
                    Entry::Occupied(mut slot) => {
                        if let Some(first) = slot.get_mut().take() {
                            add(set.rule(first));
                        }
                        add(rule);
                    }
                }
            }
        }
        for g in groups.iter().filter(|g| g.copies > 1) {
            let first_line = cx.line(set.rule(RuleId(g.first)).get().span.start);
            let second = set.rule(RuleId(g.second));
            let message = match g.copies {
                2 => format!(
                    "rule repeated in chain `{}`: the same rule is on line {first_line}",
                    chain.name()
                ),
                n => format!(
                    "rule appears {n} times in chain `{}` (first on line {first_line})",
                    chain.name()
                ),
            };
            out.push(
                out.at_rule(second, message)
                    .with_label(format!("same rule as line {first_line}"))
                    .with_help(
                        "delete the copies (`iptables -D` with the same rule); many copies mean the component that writes this chain appends its rule on every sync without finding the one already there: upgrade it (kubernetes#82361, k3s#3117)",
                    ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter, run};

    /// Two rules' packed target keys are equal exactly when their target chain, class and goto
    /// flag are (what the key's fields were before they were packed), on every lint corpus
    /// dump, a generated node and damaged rules.
    #[test]
    fn packed_target_keys_equal_exactly_when_their_parts_do() {
        let mut texts = crate::check::tests::lint_corpus_dumps();
        texts.push(rulelint_dumpgen::generate(
            &rulelint_dumpgen::Shape::with_rule_target(2_000),
        ));
        texts.push(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:A - [0:0]\n:DNAT - [0:0]\n-A PREROUTING -j A\n-A PREROUTING -g A\n\
             -A PREROUTING -j DNAT\n-A PREROUTING -g DNAT\n-A PREROUTING -j DNAT --to-destination 1.2.3.4\n\
             -A PREROUTING -j\n-A PREROUTING -g\n-A PREROUTING -p tcp\n-A PREROUTING -j B\n-A A -j RETURN\n-A A -j MARK\n\
             -A A -j KUBE-MARK-MASQ\n-A A -j ACCEPT -j A\n-A A -m comment --comment \"x\n"
                .to_string(),
        );
        let mut equal = 0;
        for text in &texts {
            let parsed = rulelint_parser::parse(text);
            let rules: Vec<RuleRef<'_, '_>> = parsed.ruleset.iter_rules().collect();
            let parts = |r: RuleRef<'_, '_>| (r.target_chain(), r.target_class(), r.is_goto());
            // Each rule against its neighbours (all pairs of the small dumps).
            for (i, a) in rules.iter().enumerate() {
                for b in rules.iter().skip(i + 1).take(64) {
                    let same = parts(*a) == parts(*b);
                    assert_eq!(TargetKey::of(*a) == TargetKey::of(*b), same);
                    equal += usize::from(same);
                }
            }
        }
        assert!(equal > 100, "{equal}");
    }

    /// Two rules of a chain with the same words have the same target key (what lets a chain
    /// without two equal keys be passed over), on every lint corpus dump.
    #[test]
    fn same_rules_have_the_same_target_key() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/lints");
        let mut pairs = 0;
        for dir in std::fs::read_dir(corpus).expect("corpus/lints") {
            let dir = dir.expect("entry").path();
            if !dir.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(dir).expect("lint folder") {
                let path = file.expect("entry").path();
                if path.extension().is_none_or(|e| e != "txt") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("dump");
                let parsed = rulelint_parser::parse(&text);
                for chain in parsed.ruleset.iter_chains() {
                    let rules: Vec<RuleRef<'_, '_>> = chain.rules().collect();
                    for (i, a) in rules.iter().enumerate() {
                        for b in &rules[i + 1..] {
                            if same_rule(*a, *b) {
                                assert_eq!(TargetKey::of(*a), TargetKey::of(*b), "{path:?}");
                                pairs += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(pairs > 10, "{pairs}");
    }

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[
                &filter(
                    ":A - [0:0]\n-A INPUT -j A\n-A INPUT -p tcp -j ACCEPT\n-A A -p tcp -j ACCEPT\n",
                ),
                &filter(
                    "-A INPUT -p tcp --dport 22 -j ACCEPT\n-A INPUT -p tcp --dport 23 -j ACCEPT\n",
                ),
                &filter("-A INPUT ! -s 10.0.0.0/8 -j DROP\n-A INPUT -s 10.0.0.0/8 -j DROP\n"),
            ],
            &[
                (
                    &filter(
                        ":KUBE-ROUTER-INPUT - [0:0]\n-A INPUT -j KUBE-ROUTER-INPUT\n-A INPUT -j KUBE-ROUTER-INPUT\n-A INPUT -j KUBE-ROUTER-INPUT\n",
                    ),
                    1,
                ),
                // Counters and spacing do not matter; old-style negation is the same rule.
                (
                    &filter(
                        "[5:300] -A INPUT ! -s 10.0.0.0/8 -j DROP\n[7:420] -A INPUT  -s ! 10.0.0.0/8 -j DROP\n",
                    ),
                    1,
                ),
                (
                    &filter(
                        "-A INPUT -j ACCEPT\n-A INPUT -j ACCEPT\n-A OUTPUT -j DROP\n-A OUTPUT -j DROP\n",
                    ),
                    2,
                ),
            ],
        );
    }

    #[test]
    fn large_chains_use_the_map_and_find_the_same() {
        let mut rules: String = (0..40)
            .map(|i| format!("-A INPUT -s 10.0.0.{i}/32 -j ACCEPT\n"))
            .collect();
        rules.push_str("-A INPUT -s 10.0.0.7/32 -j ACCEPT\n-A INPUT -s 10.0.0.7/32 -j ACCEPT\n");
        let found = run(&LINT, &filter(&rules));
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].message,
            "rule appears 3 times in chain `INPUT` (first on line 12)"
        );
    }

    #[test]
    fn message_counts_copies() {
        let found = run(
            &LINT,
            &filter("-A INPUT -j LOG\n-A INPUT -j LOG\n-A INPUT -j LOG\n"),
        );
        assert_eq!(
            found[0].message,
            "rule appears 3 times in chain `INPUT` (first on line 5)"
        );
        assert_eq!(found[0].span.start, 87, "the second copy, line 6");
    }
}
