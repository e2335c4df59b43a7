//! The chain graph: one node per chain, one edge per jump or goto, carrying the rule it came from.
//!
//! Stored compactly (issue 16): the jumps grouped by called chain, 8 bytes each, and 4 bytes a
//! chain, where petgraph took 24 bytes per edge and 12 per node. A run of consecutive rules of
//! one chain that all jump to the same chain (`-A X -j X` a million times) is stored as its
//! first jump and one run entry, so a pathological dump does not cost 8 bytes a rule here. The jumps out of a chain are
//! its rules that jump, read from the ruleset (the rules are grouped by chain already), so the
//! walks forward take the ruleset. Every walk is iterative: no recursion on the input's depth.

use crate::model::{ChainId, Rule, RuleId, Ruleset, TableId};
use std::ops::Range;

/// A jump (`-j CHAIN`) or goto (`-g CHAIN`) from one chain to another in the same table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jump {
    /// The rule holding the `-j`/`-g`.
    pub rule: RuleId,
    /// `-g`: the target chain does not return to the caller.
    pub goto: bool,
}

/// One stored jump: the calling chain and the rule, whose top bit says goto. Rule ids fit in 31
/// bits: a rule takes at least 5 bytes and the input is capped far below 10 GB.
#[derive(Clone, Copy, Debug)]
struct Edge {
    from: u32,
    rule_and_goto: u32,
}

const GOTO_BIT: u32 = 1 << 31;

/// `Edge::from` of a run entry: the edge before it stands for `rule_and_goto` more jumps, by the
/// rules that follow its rule, from the same chain and of the same kind. No chain has this id:
/// chains are far fewer than 2^32.
const RUN: u32 = u32::MAX;

impl Edge {
    fn jump(self) -> Jump {
        Jump {
            rule: RuleId(self.rule_and_goto & !GOTO_BIT),
            goto: self.rule_and_goto & GOTO_BIT != 0,
        }
    }

    /// True for a run entry (see [`RUN`]), which names no calling chain.
    fn is_run(self) -> bool {
        self.from == RUN
    }
}

/// Whether rule `i` continues a run: the rule before it is of the same chain and jumps the same
/// way to the same chain, so its jump into that chain was the one stored just before.
fn continues_run(rules: &[Rule], i: usize) -> bool {
    let Some(prev) = i.checked_sub(1).and_then(|p| rules.get(p)) else {
        return false;
    };
    let rule = &rules[i];
    rule.target_chain != Rule::NO_CHAIN
        && prev.target_chain == rule.target_chain
        && prev.chain == rule.chain
        && (prev.flags ^ rule.flags) & Rule::GOTO == 0
}

/// The jumps of stored entries, last first, with runs expanded.
struct JumpsBack<'g> {
    entries: &'g [Edge],
    /// The run being expanded: its first edge, and how many of the rules after it are left.
    run: Option<(Edge, u32)>,
}

impl Iterator for JumpsBack<'_> {
    type Item = (u32, Jump);

    fn next(&mut self) -> Option<(u32, Jump)> {
        loop {
            if let Some((head, left)) = &mut self.run {
                if *left > 0 {
                    let mut jump = head.jump();
                    jump.rule = RuleId(jump.rule.0 + *left);
                    *left -= 1;
                    return Some((head.from, jump));
                }
                self.run = None;
            }
            let (&last, rest) = self.entries.split_last()?;
            self.entries = rest;
            if !last.is_run() {
                return Some((last.from, last.jump()));
            }
            // The run's first edge is stored just before it, and is yielded after the run.
            if let Some(&head) = rest.last()
                && !head.is_run()
            {
                self.run = Some((head, last.rule_and_goto));
            }
        }
    }
}

/// Jumps between the chains of a ruleset, with the built-in chains as entry points.
///
/// Node `i` is chain `ChainId(i)`: the graph has exactly one node per chain, in the same order.
/// The jumps into or out of a chain come in reverse rule order (the order petgraph gave, which
/// outputs such as `chain-loop`'s shortest cycle were written against).
///
/// ```
/// use rulelint_parser::{ChainGraph, TableKind, parse};
/// let text = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-A - [0:0]\n\
///             -A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.0.1/32 -j KUBE-SVC-A\nCOMMIT\n";
/// let parsed = parse(text);
/// let set = &parsed.ruleset;
/// let graph = ChainGraph::build(set);
/// let nat = set.table_by_kind(TableKind::Nat).unwrap();
/// let svc = nat.chain("KUBE-SVC-A").unwrap().id;
/// let prerouting = nat.chain("PREROUTING").unwrap().id;
/// assert!(graph.reachable_from(set, prerouting).any(|c| c == svc));
/// assert_eq!(graph.jumps_into(svc).count(), 1);
/// assert!(graph.cycles().is_empty());
/// assert!(graph.is_acyclic());
/// ```
#[derive(Clone, Debug)]
pub struct ChainGraph {
    /// The jumps into chain `c` are `into[into_start[c]..into_start[c + 1]]`, in rule order.
    into_start: Vec<u32>,
    into: Vec<Edge>,
    /// Number of jumps, runs counted in full.
    jumps: usize,
    /// Rules whose `-j`/`-g` names no chain of their table (extension targets included).
    non_chain_targets: Vec<RuleId>,
}

impl ChainGraph {
    /// Builds the graph in two passes over the rules, whose targets the parser has resolved.
    pub fn build(set: &Ruleset<'_>) -> ChainGraph {
        let n = set.chains.len();
        let rules = &set.rules;
        // Counts first, so that every array is allocated once at its final size. A rule that
        // continues a run takes an entry only when it is the run's second (the run entry).
        let mut into_start = vec![0u32; n + 1];
        let mut entries = 0usize;
        let mut jumps = 0usize;
        let mut in_run = false;
        for (i, rule) in rules.iter().enumerate() {
            let continues = continues_run(rules, i);
            if rule.target_chain != Rule::NO_CHAIN {
                jumps += 1;
                if !continues || !in_run {
                    into_start[rule.target_chain as usize + 1] += 1;
                    entries += 1;
                }
            }
            in_run = continues;
        }
        for i in 0..n {
            into_start[i + 1] += into_start[i];
        }
        let mut into = vec![
            Edge {
                from: 0,
                rule_and_goto: 0
            };
            entries
        ];
        // Fill cursors: where the next jump into each chain goes.
        let mut into_fill: Vec<u32> = into_start[..n].to_vec();
        let mut non_chain_targets = Vec::new();
        let mut in_run = false;
        for (i, rule) in rules.iter().enumerate() {
            let continues = continues_run(rules, i);
            if rule.target_chain != Rule::NO_CHAIN {
                let slot = &mut into_fill[rule.target_chain as usize];
                if continues && in_run {
                    // One more rule for the run entry written last into this chain.
                    into[*slot as usize - 1].rule_and_goto += 1;
                } else if continues {
                    into[*slot as usize] = Edge {
                        from: RUN,
                        rule_and_goto: 1,
                    };
                    *slot += 1;
                } else {
                    let goto = rule.flags & Rule::GOTO != 0;
                    into[*slot as usize] = Edge {
                        from: rule.chain.0,
                        rule_and_goto: i as u32 | if goto { GOTO_BIT } else { 0 },
                    };
                    *slot += 1;
                }
            } else if rule.has_target() {
                non_chain_targets.push(RuleId(i as u32));
            }
            in_run = continues;
        }
        ChainGraph {
            into_start,
            into,
            jumps,
            non_chain_targets,
        }
    }

    fn node_count(&self) -> usize {
        self.into_start.len() - 1
    }

    /// The stored entries for the jumps into chain `c`, in rule order: edges and run entries.
    fn edges_into(&self, c: usize) -> &[Edge] {
        &self.into[self.into_start[c] as usize..self.into_start[c + 1] as usize]
    }

    /// The jumps out of chain `c` in reverse rule order: (called chain, jump), read from the
    /// rules of `set`. Empty for a chain `set` does not have, and called chains outside the
    /// graph are left out: a ruleset other than the graph's gives wrong jumps, never a panic.
    fn edges_out<'s>(
        &self,
        set: &'s Ruleset<'_>,
        c: usize,
    ) -> impl Iterator<Item = (u32, Jump)> + 's {
        let n = self.node_count() as u32;
        let range: Range<usize> = set.chain_rule_range(c);
        range.rev().filter_map(move |at| {
            let id = set.chain_rules.at(at);
            let rule = set.rules.get(id.index())?;
            (rule.target_chain < n).then(|| {
                let goto = rule.flags & Rule::GOTO != 0;
                (rule.target_chain, Jump { rule: id, goto })
            })
        })
    }

    /// The chains that chain `c` calls, in reverse rule order, one per run of jumps to the same
    /// chain: a walk's stack then holds one entry for a million `-j X` in a row, and visits
    /// chains in the same order as with one entry per jump.
    fn successors<'s>(&self, set: &'s Ruleset<'_>, c: usize) -> impl Iterator<Item = u32> + 's {
        let mut last = None;
        self.edges_out(set, c)
            .map(|(to, _)| to)
            .filter(move |&to| last.replace(to) != Some(to))
    }

    /// The built-in chains of a table: where packets enter.
    pub fn hooks<'s>(
        &self,
        set: &'s Ruleset<'_>,
        table: TableId,
    ) -> impl Iterator<Item = ChainId> + 's {
        set.tables[table.index()]
            .chains
            .iter()
            .copied()
            .filter(move |c| set.chains[c.index()].builtin)
    }

    /// Chains reachable from `start` by jumps and gotos, `start` included, depth first with an
    /// explicit stack. `set` is the ruleset the graph was built from.
    pub fn reachable_from<'s>(
        &'s self,
        set: &'s Ruleset<'_>,
        start: ChainId,
    ) -> impl Iterator<Item = ChainId> + 's {
        let mut seen = vec![false; self.node_count()];
        let mut stack: Vec<u32> = (start.index() < seen.len())
            .then_some(start.0)
            .into_iter()
            .collect();
        std::iter::from_fn(move || {
            while let Some(c) = stack.pop() {
                if std::mem::replace(&mut seen[c as usize], true) {
                    continue;
                }
                stack.extend(
                    self.successors(set, c as usize)
                        .filter(|&m| !seen[m as usize]),
                );
                return Some(ChainId(c));
            }
            None
        })
    }

    /// For every chain, whether a built-in chain of its table reaches it. `set` is the ruleset
    /// the graph was built from.
    pub fn reachable_from_hooks(&self, set: &Ruleset<'_>) -> Vec<bool> {
        let mut seen = vec![false; self.node_count()];
        let mut stack: Vec<u32> = set
            .chains
            .iter()
            .enumerate()
            .filter(|&(i, c)| c.builtin && i < seen.len())
            .map(|(i, _)| i as u32)
            .collect();
        while let Some(c) = stack.pop() {
            if std::mem::replace(&mut seen[c as usize], true) {
                continue;
            }
            stack.extend(
                self.successors(set, c as usize)
                    .filter(|&m| !seen[m as usize]),
            );
        }
        seen
    }

    /// The jumps into `chain`: (calling chain, jump), in reverse rule order.
    pub fn jumps_into(&self, chain: ChainId) -> impl Iterator<Item = (ChainId, Jump)> + '_ {
        let entries = if chain.index() < self.node_count() {
            self.edges_into(chain.index())
        } else {
            &[]
        };
        JumpsBack { entries, run: None }.map(|(from, jump)| (ChainId(from), jump))
    }

    /// The jumps out of `chain`: (called chain, jump), in reverse rule order. `set` is the
    /// ruleset the graph was built from.
    pub fn jumps_from<'s>(
        &self,
        set: &'s Ruleset<'_>,
        chain: ChainId,
    ) -> impl Iterator<Item = (ChainId, Jump)> + 's {
        self.edges_out(set, chain.index())
            .map(|(to, jump)| (ChainId(to), jump))
    }

    /// Cycles of jumps: each strongly connected group of chains that can reach itself, chains in
    /// ascending id order, groups in ascending order of their first chain.
    pub fn cycles(&self) -> Vec<Vec<ChainId>> {
        // Real rulesets have no cycles: prove that cheaply before the full component search.
        if self.is_acyclic() {
            return Vec::new();
        }
        // The components that loop, by number, with their sizes; their chains are gathered
        // after the search, when its scratch is freed (on a loop of a million chains a copy
        // made during the search was part of the peak).
        let mut looping: Vec<(u32, u32)> = Vec::new();
        let component_of = self.strongly_connected(|component, group| {
            let c = group[0];
            if group.len() > 1 || self.edges_into(c as usize).iter().any(|e| e.from == c) {
                looping.push((component, group.len() as u32));
            }
        });
        looping.sort_unstable();
        let mut cycles: Vec<Vec<ChainId>> = looping
            .iter()
            .map(|&(_, len)| Vec::with_capacity(len as usize))
            .collect();
        if !looping.is_empty() {
            // In ascending chain order, so each group comes out sorted.
            for (c, component) in component_of.iter().enumerate() {
                if let Ok(at) = looping.binary_search_by_key(component, |&(k, _)| k) {
                    cycles[at].push(ChainId(c as u32));
                }
            }
        }
        cycles.sort_unstable();
        cycles
    }

    /// Strongly connected components over the jumps taken backwards (a graph and its reverse
    /// have the same components, and the backward lists are the ones stored with their other
    /// end). Calls `found` with each component's number and chains; returns every chain's
    /// component number.
    ///
    /// Pearce's space-efficient variant of Tarjan ("A space-efficient algorithm for finding
    /// strongly connected components", 2016), without recursion: one word a chain holds both
    /// the visit index and the lowest index reached, and one array holds both the walk's path
    /// and the chains waiting for their component (a chain is on one of them at most). A path
    /// entry is the position of the next jump to follow; the chain it belongs to is where the
    /// jump its parent followed comes from. About 8 bytes a chain in all, where Tarjan's two
    /// indexes, flags and two stacks took 22: on a loop of a million chains this scratch was
    /// the peak of `check`.
    fn strongly_connected(&self, mut found: impl FnMut(u32, &[u32])) -> Vec<u32> {
        let n = self.node_count();
        // 0: not visited. While a chain is on the path or waiting: the lowest visit index it
        // reaches (visit indexes count up from 1). Once in a component: that component's
        // number, counting down from u32::MAX, so always above every visit index.
        let mut rindex = vec![0u32; n];
        // Per chain: still the root of its component as far as the walk has seen.
        let mut root = vec![0u64; n.div_ceil(64)];
        // The path grows up from the front (per chain on it: the position of the next jump
        // into it to follow), the waiting chains down from the back.
        let mut stacks = vec![0u32; n];
        let mut path_len = 0usize;
        let mut waiting_from = n;
        let mut index = 1u32;
        let mut component = u32::MAX;
        for start in 0..n as u32 {
            if rindex[start as usize] != 0 {
                continue;
            }
            // The chain at level `k` of the path: the walk's start, or where the jump its
            // parent last followed comes from.
            let chain_at = |stacks: &[u32], k: usize| -> u32 {
                if k == 0 {
                    start
                } else {
                    self.into[stacks[k - 1] as usize - 1].from
                }
            };
            // Puts chain `c` on the path with the next visit index.
            macro_rules! visit {
                ($c:expr) => {{
                    let ci = $c as usize;
                    rindex[ci] = index;
                    index += 1;
                    root[ci / 64] |= 1 << (ci % 64);
                    stacks[path_len] = self.into_start[ci];
                    path_len += 1;
                }};
            }
            visit!(start);
            while path_len > 0 {
                let c = chain_at(&stacks, path_len - 1);
                let ci = c as usize;
                let at = stacks[path_len - 1];
                if at < self.into_start[ci + 1] {
                    stacks[path_len - 1] = at + 1;
                    let edge = self.into[at as usize];
                    if edge.is_run() {
                        continue; // the same calling chain as the edge before
                    }
                    let w = edge.from as usize;
                    if rindex[w] == 0 {
                        visit!(w);
                    } else if rindex[w] < rindex[ci] {
                        rindex[ci] = rindex[w];
                        root[ci / 64] &= !(1 << (ci % 64));
                    }
                    continue;
                }
                // `c` is finished: off the path.
                path_len -= 1;
                if root[ci / 64] & (1 << (ci % 64)) != 0 {
                    // Its component: the waiting chains that reached no lower than it, and
                    // itself, put in the free slot just below them.
                    let mut end = waiting_from;
                    while end < n && rindex[stacks[end] as usize] >= rindex[ci] {
                        rindex[stacks[end] as usize] = component;
                        end += 1;
                    }
                    index -= (end - waiting_from) as u32 + 1;
                    rindex[ci] = component;
                    waiting_from -= 1;
                    stacks[waiting_from] = c;
                    found(component, &stacks[waiting_from..end]);
                    component -= 1;
                    waiting_from = end;
                } else {
                    waiting_from -= 1;
                    stacks[waiting_from] = c;
                }
                // The chain below on the path reaches whatever `c` reached (a finished
                // component's number is above every index, so it changes nothing).
                if path_len > 0 {
                    let pi = chain_at(&stacks, path_len - 1) as usize;
                    if rindex[ci] < rindex[pi] {
                        rindex[pi] = rindex[ci];
                        root[pi / 64] &= !(1 << (pi % 64));
                    }
                }
            }
        }
        rindex
    }

    /// True when no chain can reach itself: Kahn's algorithm on the jumps taken backwards,
    /// removing chains that call nothing left.
    pub fn is_acyclic(&self) -> bool {
        let n = self.node_count();
        let mut calls_left = vec![0u32; n];
        // Each stored edge counts once, a run entry not at all: added and taken away alike.
        for e in self.into.iter().filter(|e| !e.is_run()) {
            calls_left[e.from as usize] += 1;
        }
        let mut ready: Vec<u32> = (0..n as u32)
            .filter(|&c| calls_left[c as usize] == 0)
            .collect();
        let mut removed = 0usize;
        while let Some(c) = ready.pop() {
            removed += 1;
            for e in self.edges_into(c as usize).iter().filter(|e| !e.is_run()) {
                let left = &mut calls_left[e.from as usize];
                *left -= 1;
                if *left == 0 {
                    ready.push(e.from);
                }
            }
        }
        removed == n
    }

    /// Rules whose target is not a chain of their table: extension targets (`ACCEPT`, `DNAT`,
    /// ...) and targets that name a chain that does not exist.
    pub fn non_chain_targets(&self) -> &[RuleId] {
        &self.non_chain_targets
    }

    /// Number of jump edges.
    pub fn jump_count(&self) -> usize {
        self.jumps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;
    use petgraph::Direction;
    use petgraph::graph::{DiGraph, NodeIndex};
    use petgraph::visit::{Dfs, EdgeRef};
    use proptest::prelude::*;

    const CHAINS: [&str; 6] = ["INPUT", "A", "B", "C", "D", "E"];

    /// The graph as petgraph held it before the compact form: the reference the compact one
    /// must agree with, order of iteration included.
    fn reference(set: &Ruleset<'_>) -> DiGraph<ChainId, Jump> {
        let mut graph = DiGraph::new();
        for i in 0..set.chains.len() {
            graph.add_node(ChainId(i as u32));
        }
        for (i, rule) in set.rules.iter().enumerate() {
            if rule.target_chain != Rule::NO_CHAIN {
                let goto = set.target_token(i).is_some_and(|t| t.is_goto());
                let jump = Jump {
                    rule: RuleId(i as u32),
                    goto,
                };
                graph.add_edge(
                    NodeIndex::new(rule.chain.index()),
                    NodeIndex::new(rule.target_chain as usize),
                    jump,
                );
            }
        }
        graph
    }

    fn dump(rules: &[(usize, usize, u8)]) -> String {
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
        for c in &CHAINS[1..] {
            text.push_str(&format!(":{c} - [0:0]\n"));
        }
        for &(from, to, how) in rules {
            let verb = match how % 3 {
                0 => "-j",
                1 => "-g",
                _ => "-p tcp -j",
            };
            let to = if how % 5 == 4 { "ACCEPT" } else { CHAINS[to] };
            text.push_str(&format!("-A {} {verb} {to}\n", CHAINS[from]));
        }
        text + "COMMIT\n"
    }

    fn check_against_reference(text: &str) {
        let parsed = parse(text);
        let set = &parsed.ruleset;
        let graph = ChainGraph::build(set);
        let old = reference(set);
        assert_eq!(graph.jump_count(), old.edge_count());
        for c in 0..set.chains.len() {
            let id = ChainId(c as u32);
            let n = NodeIndex::new(c);
            let into: Vec<_> = graph.jumps_into(id).collect();
            let old_into: Vec<_> = old
                .edges_directed(n, Direction::Incoming)
                .map(|e| (ChainId(e.source().index() as u32), *e.weight()))
                .collect();
            assert_eq!(into, old_into, "jumps into {c}\n{text}");
            let from: Vec<_> = graph.jumps_from(set, id).collect();
            let old_from: Vec<_> = old
                .edges_directed(n, Direction::Outgoing)
                .map(|e| (ChainId(e.target().index() as u32), *e.weight()))
                .collect();
            assert_eq!(from, old_from, "jumps from {c}\n{text}");
            let reached: Vec<_> = graph.reachable_from(set, id).collect();
            let mut dfs = Dfs::new(&old, n);
            let old_reached: Vec<_> = std::iter::from_fn(|| dfs.next(&old))
                .map(|n| ChainId(n.index() as u32))
                .collect();
            assert_eq!(reached, old_reached, "reachable from {c}\n{text}");
        }
        let mut old_cycles: Vec<Vec<ChainId>> = petgraph::algo::tarjan_scc(&old)
            .into_iter()
            .filter(|scc| scc.len() > 1 || old.contains_edge(scc[0], scc[0]))
            .map(|scc| {
                let mut ids: Vec<_> = scc.iter().map(|n| ChainId(n.index() as u32)).collect();
                ids.sort_unstable();
                ids
            })
            .collect();
        old_cycles.sort_unstable();
        assert_eq!(graph.is_acyclic(), old_cycles.is_empty(), "{text}");
        assert_eq!(graph.cycles(), old_cycles, "{text}");
        let mut hooks = vec![false; set.chains.len()];
        let mut dfs = Dfs::new(&old, NodeIndex::new(0));
        while let Some(n) = dfs.next(&old) {
            hooks[n.index()] = true;
        }
        assert_eq!(graph.reachable_from_hooks(set), hooks, "{text}");
    }

    #[test]
    fn examples_agree_with_petgraph() {
        for rules in [
            &[][..],
            &[(0, 1, 0), (0, 2, 0), (1, 3, 0), (2, 3, 0)],
            &[(1, 1, 0)],
            &[(0, 1, 0), (1, 2, 0), (2, 3, 1), (3, 1, 0)],
            &[
                (0, 1, 0),
                (1, 2, 0),
                (2, 1, 0),
                (0, 3, 0),
                (4, 4, 2),
                (5, 4, 1),
            ],
            // Runs of the same jump, broken by a goto, another chain and another target.
            &[
                (1, 1, 0),
                (1, 1, 0),
                (1, 1, 0),
                (1, 1, 1),
                (1, 1, 1),
                (1, 1, 0),
                (2, 1, 0),
                (2, 1, 0),
                (1, 2, 0),
                (1, 2, 0),
                (0, 1, 0),
                (0, 1, 0),
                (0, 1, 0),
            ],
        ] {
            check_against_reference(&dump(rules));
        }
    }

    proptest! {
        /// Any jumps and gotos among six chains: the same edges, orders, reach and cycles as
        /// petgraph gave.
        #[test]
        fn random_graphs_agree_with_petgraph(
            rules in prop::collection::vec((0usize..6, 0usize..6, 0u8..15), 0..24),
        ) {
            check_against_reference(&dump(&rules));
        }
    }

    #[test]
    fn a_run_of_jumps_is_stored_once() {
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n:X - [0:0]\n");
        text.push_str(&"-A X -j X\n".repeat(1000));
        text.push_str(&"-A INPUT -j X\n".repeat(1000));
        text.push_str("COMMIT\n");
        let parsed = parse(&text);
        let set = &parsed.ruleset;
        let graph = ChainGraph::build(set);
        // Two runs, each its first edge and a run entry.
        assert_eq!(graph.into.len(), 4);
        assert_eq!(graph.jump_count(), 2000);
        let into: Vec<_> = graph.jumps_into(ChainId(1)).collect();
        assert_eq!(into.len(), 2000);
        let rules: Vec<u32> = into.iter().map(|(_, j)| j.rule.0).collect();
        assert_eq!(rules, (0..2000).rev().collect::<Vec<_>>());
        assert!(into[..1000].iter().all(|(from, _)| *from == ChainId(0)));
        assert!(into[1000..].iter().all(|(from, _)| *from == ChainId(1)));
        assert_eq!(graph.cycles(), vec![vec![ChainId(1)]]);
        assert_eq!(graph.reachable_from_hooks(set), vec![true, true]);
        check_against_reference(&text);
    }

    #[test]
    fn long_cycle_needs_no_recursion() {
        let n = 200_000;
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
        for i in 0..n {
            text.push_str(&format!(":C{i} - [0:0]\n"));
        }
        text.push_str("-A INPUT -j C0\n");
        for i in 0..n {
            text.push_str(&format!("-A C{i} -j C{}\n", (i + 1) % n));
        }
        text.push_str("COMMIT\n");
        let parsed = parse(&text);
        let graph = ChainGraph::build(&parsed.ruleset);
        assert!(!graph.is_acyclic());
        let cycles = graph.cycles();
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].len(), n);
        assert_eq!(
            graph.reachable_from(&parsed.ruleset, ChainId(0)).count(),
            n + 1
        );
    }
}
