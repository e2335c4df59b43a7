//! The chain graph: one node per chain and one per named set or map; an edge per `jump`/`goto`
//! (in a rule, or as an element of an anonymous verdict map such as `numgen ... vmap { 0 : goto
//! a }`), per verdict-map lookup (`vmap @m`: chain -> map) and per verdict element of a named
//! map (`... : goto service-X`: map -> chain). Base chains are the roots.

use crate::model::{ChainId, Expr, RuleId, Ruleset, SetId, Stmt, TableId, Value, Verdict};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, EdgeRef};
use rustc_hash::FxHashMap;
use serde::Serialize;

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
/// Node `i` is chain `ChainId(i)` for `i < chains`; node `chains + j` is set `SetId(j)`.
#[derive(Clone, Debug)]
pub struct ChainGraph {
    graph: DiGraph<Node, Edge>,
    chains: usize,
    unresolved: Vec<Via>,
    unresolved_sets: Vec<Via>,
}

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
    pub fn build(set: &Ruleset<'_>) -> ChainGraph {
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
        let mut g = ChainGraph {
            graph: DiGraph::with_capacity(chains + set.sets.len(), set.rules.len()),
            chains,
            unresolved: Vec::new(),
            unresolved_sets: Vec::new(),
        };
        for i in 0..chains {
            g.graph.add_node(Node::Chain(ChainId(i as u32)));
        }
        for i in 0..set.sets.len() {
            g.graph.add_node(Node::Set(SetId(i as u32)));
        }
        let chain_node = |c: ChainId| NodeIndex::new(c.index());
        let set_node = |s: SetId| NodeIndex::new(chains + s.index());
        let add =
            |g: &mut ChainGraph, from: NodeIndex, table: TableId, v: &Verdict<'_>, via: Via| {
                let kind = match v.kind {
                    crate::VerdictKind::Jump => EdgeKind::Jump,
                    crate::VerdictKind::Goto => EdgeKind::Goto,
                    _ => return,
                };
                let Some(target) = v.target else { return };
                match chain_index.get(&(table, target)) {
                    Some(&c) => {
                        g.graph.add_edge(from, chain_node(c), Edge { kind, via });
                    }
                    None => g.unresolved.push(via),
                }
            };
        for (r, rule) in set.rules.iter().enumerate() {
            let rule_id = RuleId(r as u32);
            let from = chain_node(rule.chain);
            let table = set.chains[rule.chain.index()].table;
            for (s, st) in set.statements_of(rule).iter().enumerate() {
                let statement = s as u32;
                match &st.kind {
                    Stmt::Verdict(v) => add(
                        &mut g,
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
                            let via = Via::Rule {
                                rule: rule_id,
                                statement,
                            };
                            match set_index.get(&(table, *name)) {
                                Some(&m) => {
                                    g.graph.add_edge(
                                        from,
                                        set_node(m),
                                        Edge {
                                            kind: EdgeKind::Vmap,
                                            via,
                                        },
                                    );
                                }
                                None => g.unresolved_sets.push(via),
                            }
                        }
                        Expr::Set(elements) => {
                            for (e, el) in elements.iter().enumerate() {
                                if let Some(Value::Verdict(v)) = &el.value {
                                    let via = Via::AnonElement {
                                        rule: rule_id,
                                        statement,
                                        element: e as u32,
                                    };
                                    add(&mut g, from, table, v, via);
                                }
                            }
                        }
                        _ => {}
                    },
                    _ => {}
                }
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
                    add(&mut g, from, map.table, v, via);
                }
            }
        }
        g
    }

    /// The underlying petgraph graph.
    pub fn inner(&self) -> &DiGraph<Node, Edge> {
        &self.graph
    }

    fn node(&self, n: NodeIndex) -> Node {
        self.graph[n]
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

    /// Chains reachable from `start` through jumps, gotos and verdict maps, `start` included.
    pub fn reachable_from(&self, start: ChainId) -> impl Iterator<Item = ChainId> + '_ {
        let mut dfs = Dfs::new(&self.graph, NodeIndex::new(start.index()));
        std::iter::from_fn(move || {
            loop {
                let n = dfs.next(&self.graph)?;
                if let Node::Chain(c) = self.node(n) {
                    return Some(c);
                }
            }
        })
    }

    /// For every chain, whether a base chain reaches it.
    pub fn reachable_from_roots(&self, set: &Ruleset<'_>) -> Vec<bool> {
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack: Vec<NodeIndex> = set
            .chains
            .iter()
            .enumerate()
            .filter(|(_, c)| c.base.is_some())
            .map(|(i, _)| NodeIndex::new(i))
            .collect();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            stack.extend(self.graph.neighbors(n).filter(|m| !seen[m.index()]));
        }
        seen.truncate(self.chains);
        seen
    }

    /// Edges into `chain`: from chains (rules) and from maps (elements).
    pub fn jumps_into(&self, chain: ChainId) -> impl Iterator<Item = (Node, Edge)> + '_ {
        self.graph
            .edges_directed(NodeIndex::new(chain.index()), Direction::Incoming)
            .map(|e| (self.node(e.source()), *e.weight()))
    }

    /// Edges out of a chain (its jumps, gotos and map lookups) or a map (its elements' jumps and
    /// gotos): target and edge. A name resolved here need not be looked up again.
    pub fn edges_from(&self, node: Node) -> impl Iterator<Item = (Node, Edge)> + '_ {
        let index = match node {
            Node::Chain(c) => c.index(),
            Node::Set(s) => self.chains + s.index(),
        };
        // A node of another ruleset's graph has no edges here (and no panic).
        let index = (index < self.graph.node_count()).then(|| NodeIndex::new(index));
        index
            .into_iter()
            .flat_map(|i| self.graph.edges(i))
            .map(|e| (self.node(e.target()), *e.weight()))
    }

    /// Where `chain` sends packets: its jumps and gotos, and through each verdict map it looks
    /// up, the map's jump and goto elements.
    pub fn targets_of(&self, chain: ChainId) -> Vec<(ChainId, Edge)> {
        let mut out = Vec::new();
        for e in self.graph.edges(NodeIndex::new(chain.index())) {
            match self.node(e.target()) {
                Node::Chain(c) => out.push((c, *e.weight())),
                Node::Set(_) => {
                    for m in self.graph.edges(e.target()) {
                        if let Node::Chain(c) = self.node(m.target()) {
                            out.push((c, *m.weight()));
                        }
                    }
                }
            }
        }
        out
    }

    /// Every edge: source, target and the edge.
    pub fn edges(&self) -> impl Iterator<Item = (Node, Node, Edge)> + '_ {
        self.graph
            .edge_references()
            .map(|e| (self.node(e.source()), self.node(e.target()), *e.weight()))
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
