//! The compact chain document behind the page's chain view.
//!
//! A 250k-rule node has tens of thousands of chains, so the page never receives the parse JSON:
//! it gets one flat array of chains (name, table, rule count, finding counts, distinct callees
//! as indices) and walks the DAG from each hook itself, expanding nodes only on demand.

use rulelint_lint::{ChainGraph, Diagnostic, Severity};
use rulelint_parser::{ChainId, LineIndex, Ruleset};
use serde::Serialize;

/// Format version of the chain document; bumped on an incompatible change.
pub const CHAINS_FORMAT_VERSION: u32 = 1;

/// The chain view of one dump.
#[derive(Debug, Serialize)]
pub struct ChainsDoc<'a> {
    /// [`CHAINS_FORMAT_VERSION`].
    pub format_version: u32,
    /// The input's name.
    pub path: &'a str,
    /// One entry per table, in order of appearance (a chain's `table` indexes this array).
    pub tables: Vec<TableDoc<'a>>,
    /// Every chain of every table; `calls` and `hooks` index this array.
    pub chains: Vec<ChainDoc<'a>>,
}

/// One table: where packets enter and what no hook reaches.
#[derive(Debug, Serialize)]
pub struct TableDoc<'a> {
    /// `filter`, `nat`, ...
    pub name: &'a str,
    /// A later block of the same table replaces this one (`RL106`).
    pub superseded: bool,
    /// The built-in chains, in declaration order.
    pub hooks: Vec<u32>,
    /// User chains no built-in chain of the table reaches, in declaration order.
    pub unreached: Vec<u32>,
}

/// One chain.
#[derive(Debug, Serialize)]
pub struct ChainDoc<'a> {
    /// The chain's name.
    pub name: &'a str,
    /// Index into [`ChainsDoc::tables`].
    pub table: u32,
    /// A built-in chain (an entry point).
    pub builtin: bool,
    /// 1-based line of the declaration, else of the first rule; null for an implicit chain
    /// without rules.
    pub line: Option<u32>,
    /// Number of rules.
    pub rules: u32,
    /// Findings on this chain: `[error, warning, info]`; absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<[u32; 3]>,
    /// Distinct chains this chain jumps or goes to, in order of the first rule naming each;
    /// absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<u32>,
}

/// Builds the document from a ruleset, its graph and the findings of `check` on it.
pub fn chains_doc<'a>(
    path: &'a str,
    set: &'a Ruleset<'a>,
    graph: &ChainGraph,
    diagnostics: &[Diagnostic],
) -> ChainsDoc<'a> {
    let lines = LineIndex::new(set.source());
    let mut findings = vec![[0u32; 3]; set.chains.len()];
    for d in diagnostics {
        if let Some(c) = d.chain
            && let Some(slot) = findings.get_mut(c.index())
        {
            let i = match d.severity {
                Severity::Error => 0,
                Severity::Warning => 1,
                Severity::Info => 2,
            };
            slot[i] += 1;
        }
    }
    let reached = graph.reachable_from_hooks(set);
    // One `seen` stamp per chain instead of a hash set per chain: linear in the jumps.
    let mut seen = vec![u32::MAX; set.chains.len()];
    let chains = set
        .iter_chains()
        .map(|chain| {
            let id = chain.id;
            let mut calls = Vec::new();
            // Jumps in rule order, so the view lists callees as the chain reads.
            let mut jumps: Vec<_> = graph.jumps_from(set, id).collect();
            jumps.sort_by_key(|(_, j)| j.rule);
            for (to, _) in jumps {
                if seen[to.index()] != id.0 {
                    seen[to.index()] = id.0;
                    calls.push(to.0);
                }
            }
            let c = chain.get();
            let start = c
                .declaration()
                .map(|s| s.start)
                .or_else(|| chain.rules().next().map(|r| r.get().span.start));
            let counts = findings[id.index()];
            ChainDoc {
                name: chain.name(),
                table: c.table.0,
                builtin: c.builtin,
                line: start.map(|s| lines.line(s)),
                rules: chain.rule_count() as u32,
                findings: (counts != [0; 3]).then_some(counts),
                calls,
            }
        })
        .collect();
    let tables = set
        .iter_tables()
        .map(|table| {
            let t = table.get();
            let ids = || t.chains.iter().copied();
            TableDoc {
                name: table.name(),
                superseded: t.superseded,
                hooks: ids()
                    .filter(|c| set.chains[c.index()].builtin)
                    .map(|c: ChainId| c.0)
                    .collect(),
                unreached: ids()
                    .filter(|c| !set.chains[c.index()].builtin && !reached[c.index()])
                    .map(|c| c.0)
                    .collect(),
            }
        })
        .collect();
    ChainsDoc {
        format_version: CHAINS_FORMAT_VERSION,
        path,
        tables,
        chains,
    }
}
