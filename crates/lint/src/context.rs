//! What a lint sees: a read-only view of one parsed dump and its chain graph, and the sink its
//! findings go to.

use crate::kube::KubeModel;
use crate::registry::Lint;
use rulelint_parser::{
    ChainGraph, ChainRef, Diagnostic, LineIndex, RuleOp, RuleRef, Ruleset, Span, TableKind,
    TableRef,
};
use std::sync::OnceLock;

/// A read-only view of one dump for the lints. Lints never mutate it and never call each other.
/// It is `Sync`: lints may run on several threads over one context.
pub struct LintContext<'r, 'a> {
    set: &'r Ruleset<'a>,
    graph: &'r ChainGraph,
    // `OnceLock`, not `OnceCell`: the lints of one dump may run on two threads (`crate::check`),
    // and the one that asks first builds these while the other waits.
    lines: OnceLock<LineIndex>,
    kube: OnceLock<KubeModel<'a>>,
}

impl<'r, 'a> LintContext<'r, 'a> {
    /// A context over a ruleset and the graph built from it.
    pub fn new(set: &'r Ruleset<'a>, graph: &'r ChainGraph) -> LintContext<'r, 'a> {
        LintContext {
            set,
            graph,
            lines: OnceLock::new(),
            kube: OnceLock::new(),
        }
    }

    /// The ruleset.
    pub fn ruleset(&self) -> &'r Ruleset<'a> {
        self.set
    }

    /// The chain graph.
    pub fn graph(&self) -> &'r ChainGraph {
        self.graph
    }

    /// What kube-proxy and kubelet wrote, read once and shared by the Kubernetes lints.
    pub fn kube(&self) -> &KubeModel<'a> {
        self.kube
            .get_or_init(|| KubeModel::build(self.set, self.graph))
    }

    /// Whether the Kubernetes model was built (tests of the lint runner's schedule).
    #[cfg(test)]
    pub(crate) fn kube_built(&self) -> bool {
        self.kube.get().is_some()
    }

    /// The tables that are in effect: all but those a later block of the same table replaces
    /// (two dumps pasted back to back, `RL106`). Lints look only at these, so that a doubled
    /// paste does not double every finding.
    pub fn tables(&self) -> impl Iterator<Item = TableRef<'r, 'a>> + 'r {
        self.set.iter_tables().filter(|t| !t.get().superseded)
    }

    /// The chains of the tables in effect.
    pub fn chains(&self) -> impl Iterator<Item = ChainRef<'r, 'a>> + 'r {
        let set = self.set;
        self.tables()
            .flat_map(move |t| t.get().chains.iter().map(move |&c| set.chain(c)))
    }

    /// Whether a table is a whole `iptables-save` table: written with its header, every
    /// built-in chain declared and its COMMIT, as iptables-save always prints them. Truncated
    /// pastes (no COMMIT), headerless fragments and
    /// iptables-restore input (kube-proxy's `--noflush` input declares only its own chains) are
    /// partial: their jumps may lead to chains that exist on the node but not in the text.
    pub fn is_complete(&self, table: TableRef<'_, '_>) -> bool {
        let t = table.get();
        !t.implicit
            // Without COMMIT the paste was cut (RL103): the end of the table is missing.
            && t.commit.is_some()
            && t.kind != TableKind::Other
            && t.kind.builtin_chains().iter().all(|name| {
                table
                    .chain(name)
                    .is_some_and(|c| c.get().declaration().is_some())
            })
    }

    /// Whether every `nat` and `filter` table in effect is complete ([`Self::is_complete`]),
    /// and there is one. Kubernetes lints that conclude from what kube-proxy did *not* write (a
    /// rule, a jump, an endpoint) need this: a truncated paste or a grep fragment leaves out
    /// exactly what they look for.
    pub fn kube_tables_complete(&self) -> bool {
        let mut any = false;
        for table in self.tables() {
            if matches!(table.kind(), TableKind::Nat | TableKind::Filter) {
                if !self.is_complete(table) {
                    return false;
                }
                any = true;
            }
        }
        any
    }

    /// The 1-based line of a byte offset, for messages that point at another rule.
    pub fn line(&self, offset: u32) -> u32 {
        self.lines
            .get_or_init(|| LineIndex::new(self.set.source()))
            .line(offset)
    }

    /// The span of a chain's name where it is declared, or where it first appears.
    pub fn chain_span(&self, chain: ChainRef<'_, '_>) -> Span {
        let c = chain.get();
        c.declaration().unwrap_or(c.name)
    }
}

/// Whether the order of a chain's rules as written is the order the kernel holds them in: true
/// for plain `-A` appends, false once `-I`, `-D` or `-R` (restore input) rearrange them.
pub fn written_in_order(chain: ChainRef<'_, '_>) -> bool {
    chain.rules().all(|r| r.get().op == RuleOp::Append)
}

/// Where a lint's findings go, stamped with the lint's code, name and default severity.
pub struct Findings<'s> {
    lint: &'static Lint,
    out: &'s mut Vec<Diagnostic>,
}

impl<'s> Findings<'s> {
    pub(crate) fn new(lint: &'static Lint, out: &'s mut Vec<Diagnostic>) -> Findings<'s> {
        Findings { lint, out }
    }

    /// A new finding of this lint at `span`; add label, help and location, then [`push`](Self::push) it.
    pub fn diagnostic(&self, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(&self.lint.info, span, message)
    }

    /// A new finding about a rule: located at the rule, in its table and chain.
    pub fn at_rule(&self, rule: RuleRef<'_, '_>, message: impl Into<String>) -> Diagnostic {
        let chain = rule.chain();
        self.diagnostic(rule.get().span, message)
            .in_chain(chain.get().table, chain.id)
    }

    /// Records a finding.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.out.push(diagnostic);
    }
}
