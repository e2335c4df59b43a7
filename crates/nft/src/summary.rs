//! A compact, serialisable summary of a parsed ruleset and its graph: what the snapshot tests
//! pin and what `rulelint parse` can print. Names instead of ids, counts instead of elements.

use crate::graph::{ChainGraph, EdgeKind, Node};
use crate::model::{Ruleset, Stmt};
use crate::parse::Parsed;
use serde::Serialize;

/// The summary of one parsed text.
#[derive(Clone, Debug, Serialize)]
pub struct Summary<'a> {
    /// Tables in text order.
    pub tables: Vec<TableSummary<'a>>,
    /// Edges, as `from -> to (kind)` with `@map` for maps and `table/` omitted.
    pub edges: Vec<String>,
    /// Base chains in root order, as `family table chain`.
    pub roots: Vec<String>,
    /// Jumps and gotos whose chain is not in the table.
    pub unresolved_jumps: usize,
    /// Statements kept as opaque tokens.
    pub opaque_statements: usize,
    /// Diagnostics as `CODE line:col message`.
    pub diagnostics: Vec<String>,
}

/// A table.
#[derive(Clone, Debug, Serialize)]
pub struct TableSummary<'a> {
    /// `ip`, `ip6`, ... (`null` for a fragment).
    pub family: Option<&'static str>,
    /// Name (`null` for a fragment).
    pub name: Option<&'a str>,
    /// The closing `}` was read.
    pub closed: bool,
    /// Named objects as `kind name`.
    pub objects: Vec<String>,
    /// Sets and maps.
    pub sets: Vec<SetSummary<'a>>,
    /// Chains.
    pub chains: Vec<ChainSummary<'a>>,
}

/// A set or map.
#[derive(Clone, Debug, Serialize)]
pub struct SetSummary<'a> {
    /// Name.
    pub name: &'a str,
    /// `set` or `map`.
    pub kind: &'static str,
    /// `type ...` as one line.
    pub key_type: Option<String>,
    /// Flags.
    pub flags: Vec<&'a str>,
    /// Number of elements.
    pub elements: usize,
}

/// A chain.
#[derive(Clone, Debug, Serialize)]
pub struct ChainSummary<'a> {
    /// Name.
    pub name: &'a str,
    /// `type hook priority (value) policy` for a base chain.
    pub base: Option<String>,
    /// One line per rule: the statement kinds (`match match verdict:jump`).
    pub rules: Vec<String>,
}

fn stmt_name(s: &Stmt<'_>) -> String {
    match s {
        Stmt::Verdict(v) => format!("verdict:{}", v.kind.as_str()),
        Stmt::Nat(nat) => format!("nat:{}", nat.kind),
        Stmt::Keyword { keyword, .. } => format!("keyword:{keyword}"),
        other => other.kind_name().to_string(),
    }
}

/// Summarises `parsed` with its `graph`.
pub fn summarize<'a>(parsed: &Parsed<'a>, graph: &ChainGraph, text: &str) -> Summary<'a> {
    let set: &Ruleset<'a> = &parsed.ruleset;
    let index = rulelint_parser::LineIndex::new(text);
    let tables = set
        .tables
        .iter()
        .map(|t| TableSummary {
            family: t.family.map(|f| f.as_str()),
            name: t.name,
            closed: t.closed,
            objects: t
                .objects
                .iter()
                .map(|o| format!("{} {}", o.kind, o.name))
                .collect(),
            sets: t
                .sets
                .iter()
                .map(|s| {
                    let s = &set.sets[s.index()];
                    SetSummary {
                        name: s.name,
                        kind: if s.is_map { "map" } else { "set" },
                        key_type: s.key_type.as_ref().map(|k| {
                            let mut line = k.key.join(" . ");
                            if let Some(d) = &k.data {
                                line.push_str(" : ");
                                line.push_str(&d.join(" . "));
                            }
                            line
                        }),
                        flags: s.flags.clone(),
                        elements: s.elements.len(),
                    }
                })
                .collect(),
            chains: t
                .chains
                .iter()
                .map(|c| {
                    let chain = &set.chains[c.index()];
                    ChainSummary {
                        name: chain.name,
                        base: chain.base.as_ref().map(|b| {
                            format!(
                                "{} {} {} ({}) {}",
                                b.kind,
                                b.hook,
                                b.priority.text,
                                b.priority.value.map_or("?".to_string(), |v| v.to_string()),
                                b.policy.unwrap_or("-")
                            )
                        }),
                        rules: set
                            .rules_of(*c)
                            .map(|r| {
                                set.statements_of(r)
                                    .iter()
                                    .map(|s| stmt_name(&s.kind))
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            })
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect();
    let node_name = |n: Node| match n {
        Node::Chain(c) => set.chains[c.index()].name.to_string(),
        Node::Set(s) => format!("@{}", set.sets[s.index()].name),
    };
    let edges = graph
        .edges()
        .map(|(a, b, e)| {
            let kind = match e.kind {
                EdgeKind::Jump => "jump",
                EdgeKind::Goto => "goto",
                EdgeKind::Vmap => "vmap",
            };
            format!("{} -> {} ({kind})", node_name(a), node_name(b))
        })
        .collect();
    let roots = graph
        .roots(set)
        .into_iter()
        .map(|c| {
            let chain = &set.chains[c.index()];
            let t = &set.tables[chain.table.index()];
            format!(
                "{} {} {}",
                t.family.map_or("?", |f| f.as_str()),
                t.name.unwrap_or("?"),
                chain.name
            )
        })
        .collect();
    let opaque_statements = set
        .rules
        .iter()
        .flat_map(|r| set.statements_of(r))
        .filter(|s| matches!(s.kind, Stmt::Opaque { .. }))
        .count();
    let diagnostics = parsed
        .diagnostics
        .iter()
        .map(|d| {
            let lc = index.line_col(text, d.span.start);
            format!("{} {}:{} {}", d.code, lc.line, lc.column, d.message)
        })
        .collect();
    Summary {
        tables,
        edges,
        roots,
        unresolved_jumps: graph.unresolved_jumps().len(),
        opaque_statements,
        diagnostics,
    }
}
