//! The chain graph: one node per chain and one per named set or map; an edge per `jump`/`goto`
//! (in a rule, or as an element of an anonymous verdict map such as `numgen ... vmap { 0 : goto
//! a }`), per verdict-map lookup (`vmap @m`: chain -> map) and per verdict element of a named
//! map (`... : goto service-X`: map -> chain). Base chains are the roots.

use crate::model::{Chain, ChainId, Expr, RuleId, Ruleset, SetId, Stmt, TableId, Value, Verdict};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::hash_map::Entry;
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

/// The edges [`ChainGraph::build`] has written, and the names it has still to look up.
struct EdgeWalk<'a, 's> {
    chains: &'s [Chain<'a>],
    /// Chains whose name an earlier chain of their table has (never a name's target).
    shadowed: &'s [bool],
    edges: Vec<StoredEdge>,
    /// Edges whose target is still their table, and the name to look up there.
    queued: Vec<(u32, &'a str)>,
}

impl<'a> EdgeWalk<'a, '_> {
    /// A `jump` or `goto` (other verdicts make no edge) from node `from` in `table`.
    ///
    /// The target is first compared with the one chain kube-proxy declares for it
    /// (`guess`): a Service chain's endpoint chains precede it in the order of its `numgen
    /// ... vmap` elements, and its external chain's `goto` names the chain declared just
    /// before. That chain's name is a few lines before the rule in the text, where a lookup
    /// reads a hash bucket and the named chain's text at random places of a large listing. A
    /// wrong guess costs a comparison of table and length, seldom of the names.
    #[inline(always)]
    fn verdict(
        &mut self,
        from: u32,
        table: TableId,
        v: &Verdict<'a>,
        via: Via,
        guess: Option<usize>,
    ) {
        let kind = match v.kind {
            crate::VerdictKind::Jump => EdgeKind::Jump,
            crate::VerdictKind::Goto => EdgeKind::Goto,
            _ => return,
        };
        let Some(target) = v.target else { return };
        if let Some(k) = guess
            && let Some(c) = self.chains.get(k)
            && c.table == table
            && c.name.len() == target.len()
            && c.name == target
            && !self.shadowed[k]
        {
            let edge = Edge { kind, via };
            self.edges.push(StoredEdge {
                from,
                to: k as u32,
                edge,
            });
            return;
        }
        self.queue(from, table, kind, via, target);
    }

    /// An edge whose target `name` is looked up in `table` later.
    #[inline(always)]
    fn queue(&mut self, from: u32, table: TableId, kind: EdgeKind, via: Via, name: &'a str) {
        self.queued.push((self.edges.len() as u32, name));
        self.edges.push(StoredEdge {
            from,
            to: table.0,
            edge: Edge { kind, via },
        });
    }
}

impl ChainGraph {
    /// Builds the graph: names resolve within the table that holds the rule or map. Linear in
    /// the rules, statements and elements.
    pub fn build<'a>(set: &Ruleset<'a>) -> ChainGraph {
        let mut chain_index: FxHashMap<(TableId, &str), ChainId> =
            FxHashMap::with_capacity_and_hasher(set.chains.len(), Default::default());
        // A chain whose name an earlier chain of its table already has: a name never
        // resolves to it, so a guess of it is wrong.
        let mut shadowed = vec![false; set.chains.len()];
        for (i, c) in set.chains.iter().enumerate() {
            match chain_index.entry((c.table, c.name)) {
                Entry::Occupied(_) => shadowed[i] = true,
                Entry::Vacant(v) => {
                    v.insert(ChainId(i as u32));
                }
            }
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
        let edges: Vec<StoredEdge> = Vec::with_capacity(set.rules.len() + elements);
        // The walk writes each edge, with its table in `to` when it has not guessed its target
        // (`EdgeWalk::verdict`), and queues the target's name; a second loop resolves the queued
        // names, a batch at a time. Apart, the walk's reads of the statements and the hash
        // table's of its buckets overlap in the processor, where interleaved they wait on each
        // other; batched, the names stay in the core's cache instead of taking 16 bytes per
        // edge (a megabyte written and read back on a 5,000-Service node).
        const UNRESOLVED: u32 = u32::MAX;
        let set_node = |s: SetId| (chains + s.index()) as u32;
        let mut unresolved = Vec::new();
        let mut unresolved_sets = Vec::new();
        // The last `jump` resolved: most jumps of a kube-proxy node name one chain
        // (`mark-for-masquerade`), which is then compared rather than hashed and looked up.
        let mut last_jump: Option<(u32, &'a str, Option<u32>)> = None;
        let mut resolve = |edges: &mut Vec<StoredEdge>, queued: &mut Vec<(u32, &'a str)>| {
            for &(at, name) in queued.iter() {
                let e = &mut edges[at as usize];
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
            queued.clear();
        };
        let mut walk = EdgeWalk {
            chains: &set.chains,
            shadowed: &shadowed,
            edges,
            queued: Vec::with_capacity(RESOLVE_BATCH),
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
                    Stmt::Verdict(v) => {
                        let via = Via::Rule {
                            rule: rule_id,
                            statement,
                        };
                        walk.verdict(from, table, v, via, (from as usize).checked_sub(1));
                    }
                    Stmt::Vmap { map, .. } => match map {
                        Expr::SetRef(name) => {
                            let via = Via::Rule {
                                rule: rule_id,
                                statement,
                            };
                            walk.queue(from, table, EdgeKind::Vmap, via, name);
                        }
                        Expr::Set(elements) => {
                            for (e, el) in elements.iter().enumerate() {
                                if let Some(Value::Verdict(v)) = &el.value {
                                    let via = Via::AnonElement {
                                        rule: rule_id,
                                        statement,
                                        element: e as u32,
                                    };
                                    let guess = (from as usize + e).checked_sub(elements.len());
                                    walk.verdict(from, table, v, via, guess);
                                }
                            }
                        }
                        _ => {}
                    },
                    _ => {}
                }
            }
            if walk.queued.len() >= RESOLVE_BATCH {
                resolve(&mut walk.edges, &mut walk.queued);
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
                    walk.verdict(from, map.table, v, via, None);
                }
            }
            if walk.queued.len() >= RESOLVE_BATCH {
                resolve(&mut walk.edges, &mut walk.queued);
            }
        }
        resolve(&mut walk.edges, &mut walk.queued);
        let mut edges = walk.edges;
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

    /// The chain of `table` named `name` that a lookup by name finds: the first declared.
    fn first_named(set: &Ruleset<'_>, table: TableId, name: &str) -> Option<Node> {
        set.chains
            .iter()
            .position(|c| c.table == table && c.name == name)
            .map(|i| Node::Chain(ChainId(i as u32)))
    }

    /// Every jump and goto goes to the first chain of its table with the name written, whether
    /// the build guessed it from the chains declared just before the rule or looked it up, and
    /// every name without such a chain is unresolved: on kube-proxy nodes (where most guesses
    /// hit), the corpus, and a ruleset whose guessed chain repeats an earlier chain's name.
    #[test]
    fn every_jump_goes_to_the_first_chain_of_its_name() {
        let mut texts: Vec<String> =
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../corpus/nft/ok"))
                .expect("corpus folder")
                .map(|e| std::fs::read_to_string(e.expect("entry").path()).expect("corpus file"))
                .collect();
        for ipv6 in [false, true] {
            let shape = rulelint_dumpgen::Shape {
                ipv6,
                ..rulelint_dumpgen::Shape::with_services(200)
            };
            texts.push(rulelint_dumpgen::generate_nft(
                &shape,
                rulelint_dumpgen::NftForm::List,
            ));
        }
        // Chain 1 (`b`, renamed `a` below) is where the build looks for `c`'s targets first.
        let shadowing = "table ip t {\n\tchain a {\n\t}\n\tchain b {\n\t}\n\tchain c {\n\
            \t\tgoto a\n\t\tnumgen random mod 2 vmap { 0 : jump b, 1 : goto a }\n\t}\n}\n";
        texts.push(shadowing.to_string());
        let mut guessed = 0;
        for text in &texts {
            let mut parsed = crate::parse(text);
            if text == shadowing {
                parsed.ruleset.chains[1].name = "a";
            }
            let set = &parsed.ruleset;
            let graph = ChainGraph::build(set);
            let mut expected = Vec::new();
            let mut unresolved = Vec::new();
            for (r, rule) in set.rules.iter().enumerate() {
                let table = set.chains[rule.chain.index()].table;
                let from = Node::Chain(rule.chain);
                for (s, st) in set.statements_of(rule).iter().enumerate() {
                    let mut verdicts: Vec<(&Verdict<'_>, Via)> = Vec::new();
                    let statement = s as u32;
                    let rule = RuleId(r as u32);
                    match &st.kind {
                        Stmt::Verdict(v) => verdicts.push((v, Via::Rule { rule, statement })),
                        Stmt::Vmap {
                            map: Expr::Set(elements),
                            ..
                        } => {
                            for (e, el) in elements.iter().enumerate() {
                                if let Some(Value::Verdict(v)) = &el.value {
                                    let element = e as u32;
                                    let via = Via::AnonElement {
                                        rule,
                                        statement,
                                        element,
                                    };
                                    verdicts.push((v, via));
                                }
                            }
                        }
                        _ => {}
                    }
                    for (v, via) in verdicts {
                        let Some(name) = v.target.filter(|_| v.kind.takes_chain()) else {
                            continue;
                        };
                        match first_named(set, table, name) {
                            Some(to) => expected.push((from, to, via)),
                            None => unresolved.push(via),
                        }
                    }
                }
            }
            for (m, map) in set.sets.iter().enumerate() {
                let set_id = SetId(m as u32);
                for (e, el) in map.elements.iter().enumerate() {
                    if let Some(Value::Verdict(v)) = &el.value
                        && let Some(name) = v.target.filter(|_| v.kind.takes_chain())
                    {
                        let via = Via::Element {
                            set: set_id,
                            element: e as u32,
                        };
                        match first_named(set, map.table, name) {
                            Some(to) => expected.push((Node::Set(set_id), to, via)),
                            None => unresolved.push(via),
                        }
                    }
                }
            }
            let found: Vec<(Node, Node, Via)> = graph
                .edges()
                .filter(|(_, _, e)| e.kind != EdgeKind::Vmap)
                .map(|(from, to, e)| (from, to, e.via))
                .collect();
            assert_eq!(found, expected);
            assert_eq!(graph.unresolved_jumps(), &unresolved[..]);
            guessed += expected
                .iter()
                .filter(|(from, to, _)| match (from, to) {
                    (Node::Chain(f), Node::Chain(t)) => t.0 < f.0 && f.0 - t.0 <= 8,
                    _ => false,
                })
                .count();
            if text == shadowing {
                let a = Node::Chain(ChainId(0));
                assert_eq!(
                    expected.iter().filter(|e| e.1 == a).count(),
                    2,
                    "{expected:?}"
                );
                assert_eq!(unresolved.len(), 1, "{unresolved:?}");
            }
        }
        assert!(guessed > 1000, "{guessed}");
    }
}
