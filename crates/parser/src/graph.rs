//! The chain graph: one node per chain, one edge per jump or goto, carrying the rule it came from.

use crate::model::{ChainId, Rule, RuleId, Ruleset, TableId};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, EdgeRef};

/// A jump (`-j CHAIN`) or goto (`-g CHAIN`) from one chain to another in the same table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jump {
    /// The rule holding the `-j`/`-g`.
    pub rule: RuleId,
    /// `-g`: the target chain does not return to the caller.
    pub goto: bool,
}

/// Jumps between the chains of a ruleset, with the built-in chains as entry points.
///
/// Node `i` is chain `ChainId(i)`: the graph has exactly one node per chain, in the same order.
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
/// assert!(graph.reachable_from(prerouting).any(|c| c == svc));
/// assert_eq!(graph.jumps_into(svc).count(), 1);
/// assert!(graph.cycles().is_empty());
/// assert!(graph.is_acyclic());
/// ```
#[derive(Clone, Debug)]
pub struct ChainGraph {
    graph: DiGraph<ChainId, Jump>,
    /// Rules whose `-j`/`-g` names no chain of their table (extension targets included).
    non_chain_targets: Vec<RuleId>,
}

fn node(id: ChainId) -> NodeIndex {
    NodeIndex::new(id.index())
}

impl ChainGraph {
    /// Builds the graph in one pass over the rules, whose targets the parser has resolved.
    pub fn build(set: &Ruleset<'_>) -> ChainGraph {
        let jumps = set
            .rules
            .iter()
            .filter(|r| r.target_chain != Rule::NO_CHAIN)
            .count();
        let mut graph = DiGraph::with_capacity(set.chains.len(), jumps);
        for i in 0..set.chains.len() {
            graph.add_node(ChainId(i as u32));
        }
        let mut non_chain_targets = Vec::new();
        for (i, rule) in set.rules.iter().enumerate() {
            let id = RuleId(i as u32);
            if rule.target_chain != Rule::NO_CHAIN {
                let goto = set
                    .rule_target(i)
                    .is_some_and(|t| set.tokens[t as usize].is_goto());
                let jump = Jump { rule: id, goto };
                graph.add_edge(
                    node(rule.chain),
                    NodeIndex::new(rule.target_chain as usize),
                    jump,
                );
            } else if rule.has_target() {
                non_chain_targets.push(id);
            }
        }
        ChainGraph {
            graph,
            non_chain_targets,
        }
    }

    /// The underlying petgraph graph (node weight: chain id; edge weight: the jump).
    pub fn inner(&self) -> &DiGraph<ChainId, Jump> {
        &self.graph
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

    /// Chains reachable from `start` by jumps and gotos, `start` included.
    pub fn reachable_from(&self, start: ChainId) -> impl Iterator<Item = ChainId> + '_ {
        let mut dfs = Dfs::new(&self.graph, node(start));
        std::iter::from_fn(move || dfs.next(&self.graph).map(|n| ChainId(n.index() as u32)))
    }

    /// For every chain, whether a built-in chain of its table reaches it.
    pub fn reachable_from_hooks(&self, set: &Ruleset<'_>) -> Vec<bool> {
        let mut seen = vec![false; set.chains.len()];
        let mut stack: Vec<NodeIndex> = set
            .chains
            .iter()
            .enumerate()
            .filter(|(_, c)| c.builtin)
            .map(|(i, _)| NodeIndex::new(i))
            .collect();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            stack.extend(self.graph.neighbors(n).filter(|m| !seen[m.index()]));
        }
        seen
    }

    /// The jumps into `chain`: (calling chain, jump).
    pub fn jumps_into(&self, chain: ChainId) -> impl Iterator<Item = (ChainId, Jump)> + '_ {
        self.graph
            .edges_directed(node(chain), Direction::Incoming)
            .map(|e| (ChainId(e.source().index() as u32), *e.weight()))
    }

    /// The jumps out of `chain`: (called chain, jump).
    pub fn jumps_from(&self, chain: ChainId) -> impl Iterator<Item = (ChainId, Jump)> + '_ {
        self.graph
            .edges_directed(node(chain), Direction::Outgoing)
            .map(|e| (ChainId(e.target().index() as u32), *e.weight()))
    }

    /// Cycles of jumps: each strongly connected group of chains that can reach itself, chains in
    /// ascending id order, groups in ascending order of their first chain.
    pub fn cycles(&self) -> Vec<Vec<ChainId>> {
        // Real rulesets have no cycles: prove that cheaply before the full component search.
        if self.is_acyclic() {
            return Vec::new();
        }
        let mut cycles: Vec<Vec<ChainId>> = petgraph::algo::kosaraju_scc(&self.graph)
            .into_iter()
            .filter(|scc| scc.len() > 1 || self.graph.contains_edge(scc[0], scc[0]))
            .map(|scc| {
                let mut ids: Vec<ChainId> =
                    scc.into_iter().map(|n| ChainId(n.index() as u32)).collect();
                ids.sort_unstable();
                ids
            })
            .collect();
        cycles.sort_unstable();
        cycles
    }

    /// True when no chain can reach itself. Kahn's algorithm over a compact copy of the edges
    /// (sorted by source in two sequential passes), which is several times faster on large
    /// graphs than walking petgraph's linked edge lists.
    pub fn is_acyclic(&self) -> bool {
        let n = self.graph.node_count();
        let edges = self.graph.raw_edges();
        let mut offsets = vec![0u32; n + 1];
        let mut in_degree = vec![0u32; n];
        for e in edges {
            offsets[e.source().index() + 1] += 1;
            in_degree[e.target().index()] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut targets = vec![0u32; edges.len()];
        for e in edges {
            let slot = &mut fill[e.source().index()];
            targets[*slot as usize] = e.target().index() as u32;
            *slot += 1;
        }
        let mut ready: Vec<u32> = (0..n as u32)
            .filter(|&i| in_degree[i as usize] == 0)
            .collect();
        let mut removed = 0usize;
        while let Some(node) = ready.pop() {
            removed += 1;
            let i = node as usize;
            for &t in &targets[offsets[i] as usize..offsets[i + 1] as usize] {
                let d = &mut in_degree[t as usize];
                *d -= 1;
                if *d == 0 {
                    ready.push(t);
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
        self.graph.edge_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn graph_of(rules: &str) -> bool {
        let text = format!(
            "*filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n:C - [0:0]\n{rules}COMMIT\n"
        );
        let parsed = parse(&text);
        let graph = ChainGraph::build(&parsed.ruleset);
        let acyclic = graph.is_acyclic();
        // The fast check agrees with the component search it short-cuts.
        let sccs_with_cycle = petgraph::algo::tarjan_scc(&graph.graph)
            .into_iter()
            .any(|scc| scc.len() > 1 || graph.graph.contains_edge(scc[0], scc[0]));
        assert_eq!(acyclic, !sccs_with_cycle, "{rules}");
        acyclic
    }

    #[test]
    fn acyclic_check() {
        assert!(graph_of(""));
        assert!(graph_of(
            "-A INPUT -j A\n-A INPUT -j B\n-A A -j C\n-A B -j C\n"
        ));
        assert!(!graph_of("-A A -j A\n"));
        assert!(!graph_of(
            "-A INPUT -j A\n-A A -j B\n-A B -g C\n-A C -j A\n"
        ));
        assert!(!graph_of(
            "-A INPUT -j A\n-A A -j B\n-A B -j A\n-A INPUT -j C\n"
        ));
    }
}
