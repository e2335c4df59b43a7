//! The chain graph: one node per chain and one per named set or map; an edge per `jump`/`goto`
//! (in a rule, or as an element of an anonymous verdict map such as `numgen ... vmap { 0 : goto
//! a }`), per verdict-map lookup (`vmap @m`: chain -> map) and per verdict element of a named
//! map (`... : goto service-X`: map -> chain). Base chains are the roots.

use crate::model::{ChainId, Expr, RuleId, Ruleset, SetId, Stmt, TableId, Value, Verdict};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::sync::OnceLock;

/// A node: a chain, or a named set/map (only verdict maps have edges).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Node {
    /// A chain.
    Chain(ChainId),
    /// A named set or map.
    Set(SetId),
}

/// What an edge does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    /// `jump`: returns to the caller.
    Jump,
    /// `goto`: does not return.
    Goto,
    /// `vmap @map`: the chain looks the packet up in the map, whose elements jump or go to.
    Vmap,
}

/// Where an edge was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// A statement of a rule (a verdict, or a `vmap @map` lookup).
    Rule {
        /// The rule.
        rule: RuleId,
        /// The statement's index in the rule.
        statement: u32,
    },
    /// An element of an anonymous verdict map in a rule.
    AnonElement {
        /// The rule.
        rule: RuleId,
        /// The statement's index in the rule.
        statement: u32,
        /// The element's index in the map.
        element: u32,
    },
    /// An element of a named verdict map.
    Element {
        /// The map.
        set: SetId,
        /// The element's index.
        element: u32,
    },
}

/// An edge of the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// Jump, goto or map lookup.
    pub kind: EdgeKind,
    /// Where it was written.
    pub via: Via,
}

/// Jumps, gotos and verdict-map lookups between the chains of a ruleset.
///
/// Node `i` is chain `ChainId(i)` for `i < chains`; node `chains + j` is set `SetId(j)`. The
/// edges are stored once, in the order [`ChainGraph::build`] meets them, with an adjacency
/// index (compressed rows, filled from counts) per direction: no per-edge allocation or
/// linked list, which a general graph type needs for edits this graph never makes. The
/// incoming index is built on the first [`ChainGraph::jumps_into`]: of the check's lints only
/// one asks, and only of a chain that has no rules, so the build leaves it out.
#[derive(Clone, Debug)]
pub struct ChainGraph {
    chains: usize,
    nodes: usize,
    /// Every edge, in insertion order.
    edges: Vec<StoredEdge>,
    /// Node `n`'s outgoing edges are `edges[out_edges[out_start[n]..out_start[n + 1]]]`, newest
    /// first (the order a linked-list graph lists them in, which the walks kept so far).
    out_start: Vec<u32>,
    out_edges: Vec<u32>,
    /// The same for incoming edges (start, edges), built on first use.
    incoming: OnceLock<(Vec<u32>, Vec<u32>)>,
    unresolved: Vec<Via>,
    unresolved_sets: Vec<Via>,
}

#[derive(Clone, Copy, Debug)]
struct StoredEdge {
    from: u32,
    to: u32,
    edge: Edge,
}

/// A compressed adjacency index: for each node, the edges whose `key` is that node, newest
/// first. Linear in nodes and edges.
fn adjacency(
    nodes: usize,
    edges: &[StoredEdge],
    key: fn(&StoredEdge) -> u32,
) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; nodes + 1];
    for e in edges {
        start[key(e) as usize + 1] += 1;
    }
    for n in 0..nodes {
        start[n + 1] += start[n];
    }
    let mut fill = start.clone();
    let mut index = vec![0u32; edges.len()];
    for (i, e) in edges.iter().enumerate().rev() {
        let slot = &mut fill[key(e) as usize];
        index[*slot as usize] = i as u32;
        *slot += 1;
    }
    (start, index)
}

/// How many names [`ChainGraph::build`] reads before it resolves them: enough for the walk's
/// and the lookups' memory reads to overlap, few enough to stay in the core's cache.
const RESOLVE_BATCH: usize = 256;

/// Hooks in the order a packet meets them (netdev first, then the IP path).
fn hook_rank(hook: &str) -> u8 {
    match hook {
        "ingress" => 0,
        "prerouting" => 1,
        "input" => 2,
        "forward" => 3,
        "output" => 4,
        "postrouting" => 5,
        "egress" => 6,
        _ => 7,
    }
}

impl ChainGraph {
    /// Builds the graph: names resolve within the table that holds the rule or map. Linear in
    /// the rules, statements and elements.
    pub fn build<'a>(set: &Ruleset<'a>) -> ChainGraph {
        let mut chain_index: FxHashMap<(TableId, &str), ChainId> =
            FxHashMap::with_capacity_and_hasher(set.chains.len(), Default::default());
        for (i, c) in set.chains.iter().enumerate() {
            chain_index
                .entry((c.table, c.name))
                .or_insert(ChainId(i as u32));
        }
        let mut set_index: FxHashMap<(TableId, &str), SetId> =
            FxHashMap::with_capacity_and_hasher(set.sets.len(), Default::default());
        for (i, s) in set.sets.iter().enumerate() {
            set_index
                .entry((s.table, s.name))
                .or_insert(SetId(i as u32));
        }
        let chains = set.chains.len();
        let nodes = chains + set.sets.len();
        // Most rules jump at most once, and most map elements are verdicts: one allocation.
        let elements: usize = set.sets.iter().map(|s| s.elements.len()).sum();
        let mut edges: Vec<StoredEdge> = Vec::with_capacity(set.rules.len() + elements);
        // The walk writes each edge with its table in `to` and its target's name beside it; a
        // second loop resolves the names, a batch at a time. Apart, the walk's reads of the
        // statements and the hash table's of its buckets overlap in the processor, where
        // interleaved they wait on each other; batched, the names stay in the core's cache
        // instead of taking 16 bytes per edge (a megabyte written and read back on a
        // 5,000-Service node).
        const UNRESOLVED: u32 = u32::MAX;
        let set_node = |s: SetId| (chains + s.index()) as u32;
        let mut names: Vec<&'a str> = Vec::with_capacity(RESOLVE_BATCH);
        let mut resolved = 0;
        let mut unresolved = Vec::new();
        let mut unresolved_sets = Vec::new();
        // The last `jump` resolved: most jumps of a kube-proxy node name one chain
        // (`mark-for-masquerade`), which is then compared rather than hashed and looked up.
        let mut last_jump: Option<(u32, &'a str, Option<u32>)> = None;
        let mut resolve = |edges: &mut Vec<StoredEdge>, names: &mut Vec<&'a str>| {
            for (e, &name) in edges[resolved..].iter_mut().zip(names.iter()) {
                let key = (TableId(e.to), name);
                let (to, unresolved) = match e.edge.kind {
                    EdgeKind::Vmap => (
                        set_index.get(&key).map(|&m| set_node(m)),
                        &mut unresolved_sets,
                    ),
                    EdgeKind::Jump => {
                        let to = match last_jump {
                            Some((table, last, to)) if table == e.to && last == name => to,
                            _ => {
                                let to = chain_index.get(&key).map(|c| c.0);
                                last_jump = Some((e.to, name, to));
                                to
                            }
                        };
                        (to, &mut unresolved)
                    }
                    EdgeKind::Goto => (chain_index.get(&key).map(|c| c.0), &mut unresolved),
                };
                e.to = to.unwrap_or_else(|| {
                    unresolved.push(e.edge.via);
                    UNRESOLVED
                });
            }
            resolved = edges.len();
            names.clear();
        };
        let add = |edges: &mut Vec<StoredEdge>,
                   names: &mut Vec<&'a str>,
                   from: u32,
                   table: TableId,
                   v: &Verdict<'a>,
                   via: Via| {
            let kind = match v.kind {
                crate::VerdictKind::Jump => EdgeKind::Jump,
                crate::VerdictKind::Goto => EdgeKind::Goto,
                _ => return,
            };
            let Some(target) = v.target else { return };
            edges.push(StoredEdge {
                from,
                to: table.0,
                edge: Edge { kind, via },
            });
            names.push(target);
        };
        for (r, rule) in set.rules.iter().enumerate() {
            let rule_id = RuleId(r as u32);
            let from = rule.chain.0;
            let Some(table) = set.chains.get(rule.chain.index()).map(|c| c.table) else {
                continue;
            };
            for (s, st) in set.statements_of(rule).iter().enumerate() {
                let statement = s as u32;
                match &st.kind {
                    Stmt::Verdict(v) => add(
                        &mut edges,
                        &mut names,
                        from,
                        table,
                        v,
                        Via::Rule {
                            rule: rule_id,
                            statement,
                        },
                    ),
                    Stmt::Vmap { map, .. } => match map {
                        Expr::SetRef(name) => {
                            edges.push(StoredEdge {
                                from,
                                to: table.0,
                                edge: Edge {
                                    kind: EdgeKind::Vmap,
                                    via: Via::Rule {
                                        rule: rule_id,
                                        statement,
                                    },
                                },
                            });
                            names.push(name);
                        }
                        Expr::Set(elements) => {
                            for (e, el) in elements.iter().enumerate() {
                                if let Some(Value::Verdict(v)) = &el.value {
                                    let via = Via::AnonElement {
                                        rule: rule_id,
                                        statement,
                                        element: e as u32,
                                    };
                                    add(&mut edges, &mut names, from, table, v, via);
                                }
                            }
                        }
                        _ => {}
                    },
                    _ => {}
                }
            }
            if names.len() >= RESOLVE_BATCH {
                resolve(&mut edges, &mut names);
            }
        }
        for (m, map) in set.sets.iter().enumerate() {
            let from = set_node(SetId(m as u32));
            for (e, el) in map.elements.iter().enumerate() {
                if let Some(Value::Verdict(v)) = &el.value {
                    let via = Via::Element {
                        set: SetId(m as u32),
                        element: e as u32,
                    };
                    add(&mut edges, &mut names, from, map.table, v, via);
                }
            }
            if names.len() >= RESOLVE_BATCH {
                resolve(&mut edges, &mut names);
            }
        }
        resolve(&mut edges, &mut names);
        if !(unresolved.is_empty() && unresolved_sets.is_empty()) {
            edges.retain(|e| e.to != UNRESOLVED);
        }
        let (out_start, out_edges) = adjacency(nodes, &edges, |e| e.from);
        ChainGraph {
            chains,
            nodes,
            edges,
            out_start,
            out_edges,
            incoming: OnceLock::new(),
            unresolved,
            unresolved_sets,
        }
    }

    fn node(&self, n: u32) -> Node {
        let n = n as usize;
        if n < self.chains {
            Node::Chain(ChainId(n as u32))
        } else {
            Node::Set(SetId((n - self.chains) as u32))
        }
    }

    fn index_of(&self, node: Node) -> Option<usize> {
        let index = match node {
            Node::Chain(c) => c.index(),
            Node::Set(s) => self.chains + s.index(),
        };
        // A node of another ruleset's graph has no edges here (and no panic).
        (index < self.nodes).then_some(index)
    }

    /// The edges out of node `n` (an index), newest first.
    fn out_of(&self, n: usize) -> impl Iterator<Item = &StoredEdge> + '_ {
        rows(&self.out_start, &self.out_edges, n)
            .iter()
            .map(|&i| &self.edges[i as usize])
    }

    /// The edges into node `n` (an index), newest first.
    fn into(&self, n: usize) -> impl Iterator<Item = &StoredEdge> + '_ {
        let (start, index) = self
            .incoming
            .get_or_init(|| adjacency(self.nodes, &self.edges, |e| e.to));
        rows(start, index, n)
            .iter()
            .map(|&i| &self.edges[i as usize])
    }

    /// Base chains (where packets enter), ordered by family, hook (in packet order: ingress,
    /// prerouting, input, forward, output, postrouting, egress), priority value, then text order.
    pub fn roots(&self, set: &Ruleset<'_>) -> Vec<ChainId> {
        let mut roots: Vec<ChainId> = set
            .chains
            .iter()
            .enumerate()
            .filter(|(_, c)| c.base.is_some())
            .map(|(i, _)| ChainId(i as u32))
            .collect();
        roots.sort_by_key(|c| {
            let chain = &set.chains[c.index()];
            let base = chain.base.as_ref().expect("filtered");
            (
                set.tables[chain.table.index()].family,
                hook_rank(base.hook),
                base.hook,
                base.priority.value.unwrap_or(i32::MAX),
                *c,
            )
        });
        roots
    }

    /// Chains reachable from `start` through jumps, gotos and verdict maps, `start` included,
    /// depth first (an explicit stack: no recursion on the graph's depth).
    pub fn reachable_from(&self, start: ChainId) -> impl Iterator<Item = ChainId> + '_ {
        let start = self.index_of(Node::Chain(start)).map(|n| n as u32);
        DepthFirst::new(self, start.into_iter().collect()).filter_map(|n| match self.node(n) {
            Node::Chain(c) => Some(c),
            Node::Set(_) => None,
        })
    }

    /// For every chain, whether a base chain reaches it.
    pub fn reachable_from_roots(&self, set: &Ruleset<'_>) -> Vec<bool> {
        let roots = set
            .chains
            .iter()
            .enumerate()
            .filter(|(i, c)| c.base.is_some() && *i < self.nodes)
            .map(|(i, _)| i as u32)
            .collect();
        let mut walk = DepthFirst::new(self, roots);
        walk.by_ref().for_each(drop);
        let mut seen = walk.seen;
        seen.truncate(self.chains);
        seen
    }

    /// Edges into `chain`: from chains (rules) and from maps (elements).
    pub fn jumps_into(&self, chain: ChainId) -> impl Iterator<Item = (Node, Edge)> + '_ {
        self.index_of(Node::Chain(chain))
            .into_iter()
            .flat_map(|n| self.into(n))
            .map(|e| (self.node(e.from), e.edge))
    }

    /// Edges out of a chain (its jumps, gotos and map lookups) or a map (its elements' jumps and
    /// gotos): target and edge. A name resolved here need not be looked up again.
    pub fn edges_from(&self, node: Node) -> impl Iterator<Item = (Node, Edge)> + '_ {
        self.index_of(node)
            .into_iter()
            .flat_map(|n| self.out_of(n))
            .map(|e| (self.node(e.to), e.edge))
    }

    /// Where `chain` sends packets: its jumps and gotos, and through each verdict map it looks
    /// up, the map's jump and goto elements.
    pub fn targets_of(&self, chain: ChainId) -> Vec<(ChainId, Edge)> {
        let mut out = Vec::new();
        let Some(n) = self.index_of(Node::Chain(chain)) else {
            return out;
        };
        for e in self.out_of(n) {
            match self.node(e.to) {
                Node::Chain(c) => out.push((c, e.edge)),
                Node::Set(_) => {
                    for m in self.out_of(e.to as usize) {
                        if let Node::Chain(c) = self.node(m.to) {
                            out.push((c, m.edge));
                        }
                    }
                }
            }
        }
        out
    }

    /// Every edge: source, target and the edge, in the order the build met them.
    pub fn edges(&self) -> impl Iterator<Item = (Node, Node, Edge)> + '_ {
        self.edges
            .iter()
            .map(|e| (self.node(e.from), self.node(e.to), e.edge))
    }

    /// `jump`/`goto`s whose chain is not in the table (a partial paste, or an error).
    pub fn unresolved_jumps(&self) -> &[Via] {
        &self.unresolved
    }

    /// `vmap @name` lookups whose map is not in the table.
    pub fn unresolved_maps(&self) -> &[Via] {
        &self.unresolved_sets
    }
}

/// Row `n` of a compressed adjacency index (empty for a node it does not have).
fn rows<'g>(start: &[u32], index: &'g [u32], n: usize) -> &'g [u32] {
    match (start.get(n), start.get(n + 1)) {
        (Some(&a), Some(&b)) => index.get(a as usize..b as usize).unwrap_or(&[]),
        _ => &[],
    }
}

/// A depth-first walk of a [`ChainGraph`]'s nodes from a stack of starts, each node once: an
/// explicit stack, so no recursion on the graph's depth.
struct DepthFirst<'g> {
    graph: &'g ChainGraph,
    seen: Vec<bool>,
    stack: Vec<u32>,
}

impl<'g> DepthFirst<'g> {
    fn new(graph: &'g ChainGraph, stack: Vec<u32>) -> Self {
        DepthFirst {
            graph,
            seen: vec![false; graph.nodes],
            stack,
        }
    }
}

impl Iterator for DepthFirst<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while let Some(n) = self.stack.pop() {
            if std::mem::replace(&mut self.seen[n as usize], true) {
                continue;
            }
            let seen = &self.seen;
            self.stack.extend(
                self.graph
                    .out_of(n as usize)
                    .map(|e| e.to)
                    .filter(|&m| !seen[m as usize]),
            );
            return Some(n);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The adjacency rows agree with the edge list: each node's edges out and in, newest
    /// first, the walks in the order of a linked-list graph, and unresolved names kept apart;
    /// on a listing and on a transaction whose rules interleave chains.
    #[test]
    fn adjacency_agrees_with_the_edge_list() {
        let listing = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../corpus/nft/ok/01-overall-rules.txt"
        ))
        .expect("corpus file");
        let transaction = "add table ip t\nadd chain ip t a\nadd chain ip t b\nadd chain ip t c\n\
            add map ip t m { type ipv4_addr : verdict ; }\n\
            add rule ip t a jump b\nadd rule ip t b goto c\nadd rule ip t a jump c\n\
            add rule ip t c jump a\nadd rule ip t a jump missing\nadd rule ip t b ip daddr vmap @m\n\
            add rule ip t c ip daddr vmap @gone\nadd rule ip t a numgen random mod 2 vmap { 0 : goto b, 1 : jump nowhere }\n\
            add element ip t m { 10.0.0.1 : goto c, 10.0.0.2 : jump absent }\n";
        for text in [listing.as_str(), transaction] {
            let strings = crate::Strings::default();
            let (_, parsed) = crate::parse_any(text, &strings);
            let set = &parsed.ruleset;
            let graph = ChainGraph::build(set);
            let edges: Vec<(Node, Node, Edge)> = graph.edges().collect();
            assert!(!edges.is_empty());
            let nodes = (0..set.chains.len())
                .map(|c| Node::Chain(ChainId(c as u32)))
                .chain((0..set.sets.len()).map(|s| Node::Set(SetId(s as u32))));
            for node in nodes {
                let out: Vec<(Node, Edge)> = edges
                    .iter()
                    .rev()
                    .filter(|e| e.0 == node)
                    .map(|e| (e.1, e.2))
                    .collect();
                assert_eq!(graph.edges_from(node).collect::<Vec<_>>(), out);
                let Node::Chain(c) = node else { continue };
                let into: Vec<(Node, Edge)> = edges
                    .iter()
                    .rev()
                    .filter(|e| e.1 == node)
                    .map(|e| (e.0, e.2))
                    .collect();
                assert_eq!(graph.jumps_into(c).collect::<Vec<_>>(), into);
                // Depth first as a linked-list graph's walk: successors newest first, pushed.
                let mut seen = std::collections::HashSet::new();
                let mut stack = vec![node];
                let mut order = Vec::new();
                while let Some(n) = stack.pop() {
                    if !seen.insert(n) {
                        continue;
                    }
                    stack.extend(
                        graph
                            .edges_from(n)
                            .map(|(m, _)| m)
                            .filter(|m| !seen.contains(m)),
                    );
                    if let Node::Chain(c) = n {
                        order.push(c);
                    }
                }
                assert_eq!(graph.reachable_from(c).collect::<Vec<_>>(), order);
            }
            // Reached from the roots: what some base chain's walk reaches.
            let mut from_roots = vec![false; set.chains.len()];
            for (i, chain) in set.chains.iter().enumerate() {
                if chain.base.is_some() {
                    for c in graph.reachable_from(ChainId(i as u32)) {
                        from_roots[c.index()] = true;
                    }
                }
            }
            assert_eq!(graph.reachable_from_roots(set), from_roots);
            if text == listing {
                assert!(from_roots.iter().any(|&r| r));
            }
            if text == transaction {
                assert_eq!(graph.unresolved_jumps().len(), 3, "{edges:?}");
                assert_eq!(graph.unresolved_maps().len(), 1);
                assert_eq!(edges.len(), 7, "{edges:?}");
            }
        }
        // A node of another graph has no edges and walks nowhere.
        let empty = ChainGraph::build(&crate::parse("").ruleset);
        assert_eq!(empty.edges_from(Node::Chain(ChainId(3))).count(), 0);
        assert_eq!(empty.jumps_into(ChainId(3)).count(), 0);
        assert_eq!(empty.reachable_from(ChainId(3)).count(), 0);
        assert!(empty.targets_of(ChainId(3)).is_empty());
    }
}
