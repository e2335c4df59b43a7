//! What a lint sees: a read-only view of one parsed dump and its chain graph, and the sink its
//! findings go to.

use crate::kube::{EndpointDnats, KubeModel};
use crate::registry::Lint;
use rulelint_parser::{
    ChainGraph, ChainRef, Diagnostic, LineIndex, RuleId, RuleOp, RuleRef, Ruleset, Span, TableKind,
    TableRef, TargetClass, Token, TokenKind,
};
use std::sync::OnceLock;

/// The word the parser makes RL502's `[unsupported revision]` token of.
pub(crate) const UNSUPPORTED_MARKER: &[u8] = b"[unsupported";

/// A read-only view of one dump for the lints. Lints never mutate it and never call each other.
/// It is `Sync`: lints may run on several threads over one context.
pub struct LintContext<'r, 'a> {
    set: &'r Ruleset<'a>,
    /// Given by the caller, or built by the first lint (or lint thread) that asks for it.
    given_graph: Option<&'r ChainGraph>,
    graph: OnceLock<ChainGraph>,
    // `OnceLock`, not `OnceCell`: the lints of one dump may run on two threads (`crate::check`),
    // and the one that asks first builds these while the other waits.
    lines: OnceLock<LineIndex>,
    kube: OnceLock<KubeModel<'a>>,
    endpoint_dnats: OnceLock<EndpointDnats<'a>>,
    target_facts: OnceLock<Vec<TargetFacts>>,
    chain_walks: OnceLock<ChainWalks>,
    unsupported_marker: OnceLock<bool>,
}

impl<'r, 'a> LintContext<'r, 'a> {
    /// A context over a ruleset and the graph built from it.
    pub fn new(set: &'r Ruleset<'a>, graph: &'r ChainGraph) -> LintContext<'r, 'a> {
        LintContext {
            set,
            given_graph: Some(graph),
            graph: OnceLock::new(),
            lines: OnceLock::new(),
            kube: OnceLock::new(),
            endpoint_dnats: OnceLock::new(),
            target_facts: OnceLock::new(),
            chain_walks: OnceLock::new(),
            unsupported_marker: OnceLock::new(),
        }
    }

    /// A context whose chain graph is built when a lint first asks for it: on two threads the
    /// Kubernetes model (which does not read the graph) is built meanwhile (`crate::check`).
    pub(crate) fn with_graph_on_demand(set: &'r Ruleset<'a>) -> LintContext<'r, 'a> {
        LintContext {
            set,
            given_graph: None,
            graph: OnceLock::new(),
            lines: OnceLock::new(),
            kube: OnceLock::new(),
            endpoint_dnats: OnceLock::new(),
            target_facts: OnceLock::new(),
            chain_walks: OnceLock::new(),
            unsupported_marker: OnceLock::new(),
        }
    }

    /// The ruleset.
    pub fn ruleset(&self) -> &'r Ruleset<'a> {
        self.set
    }

    /// The chain graph.
    pub fn graph(&self) -> &ChainGraph {
        match self.given_graph {
            Some(graph) => graph,
            None => self.graph.get_or_init(|| ChainGraph::build(self.set)),
        }
    }

    /// What kube-proxy and kubelet wrote, read once and shared by the Kubernetes lints.
    pub fn kube(&self) -> &KubeModel<'a> {
        self.kube.get_or_init(|| {
            KubeModel::build_with(self.set, || {
                self.endpoint_dnats
                    .get_or_init(|| EndpointDnats::read(self.set))
            })
        })
    }

    /// Gives the context `model` as its Kubernetes model (a test's variant of the one
    /// [`kube`](Self::kube) would build); no-op once that is built.
    #[cfg(test)]
    pub(crate) fn set_kube_for_tests(&self, model: KubeModel<'a>) {
        let _ = self.kube.set(model);
    }

    /// Reads the endpoints' DNAT rules for [`kube`](Self::kube) ahead of it: a second thread
    /// calls this while the first builds the rest of the model, which then waits for it (or,
    /// when this was never called, reads them itself).
    pub(crate) fn read_endpoint_dnats(&self) {
        self.endpoint_dnats
            .get_or_init(|| EndpointDnats::read(self.set));
    }

    /// Whether the Kubernetes model was built (tests of the lint runner's schedule).
    #[cfg(test)]
    pub(crate) fn kube_built(&self) -> bool {
        self.kube.get().is_some()
    }

    /// What a rule's target does, read once for every rule and shared by the lints that walk
    /// every rule (`RL301`, `RL303`, `RL401`, `RL403`, `RL413`): each of them used to read every
    /// rule's target text itself.
    pub fn target_facts(&self, rule: RuleId) -> TargetFacts {
        self.all_target_facts()[rule.index()]
    }

    /// Every rule's [`TargetFacts`], indexed by rule.
    fn all_target_facts(&self) -> &[TargetFacts] {
        self.target_facts
            .get_or_init(|| TargetFacts::read_all(self.set))
    }

    /// Whether a chain's rules are written in order, and where the walk through it may first
    /// stop: read once for every chain and shared by the lints that walk every chain (`RL301`,
    /// `RL302`, `RL303`, `RL407`), each of which used to read every rule of every chain again.
    ///
    /// Inlined, with the rest out of line: four lints ask it of every chain, and as a call it
    /// cost about 37 instructions a chain.
    #[inline]
    pub fn chain_walk(&self, chain: ChainRef<'_, '_>) -> ChainWalk {
        match self
            .chain_walks
            .get()
            .and_then(|walks| walks.get(chain.id.index()))
        {
            Some(walk) => walk,
            None => self.chain_walk_reading(chain),
        }
    }

    /// [`chain_walk`](Self::chain_walk) when the walks are not read yet, or the chain's is not
    /// kept (a chain of less than two rules in a dump of mostly such chains).
    #[cold]
    #[inline(never)]
    fn chain_walk_reading(&self, chain: ChainRef<'_, '_>) -> ChainWalk {
        self.chain_walks
            .get_or_init(|| ChainWalks::read_all(self))
            .get(chain.id.index())
            .unwrap_or_else(|| ChainWalk::of(self, chain))
    }

    /// Whether the dump's text holds the word `[unsupported` (RL502's marker, the only word the
    /// parser makes an `Unsupported` token of): one search of the whole text, made once.
    pub fn has_unsupported_marker(&self) -> bool {
        *self.unsupported_marker.get_or_init(|| {
            memchr::memmem::find(self.set.source().as_bytes(), UNSUPPORTED_MARKER).is_some()
        })
    }

    /// This context with [`has_unsupported_marker`](Self::has_unsupported_marker) already
    /// known: `check_source` searches a large text for it on its second thread during the
    /// parse, which otherwise leaves that core idle.
    pub(crate) fn knowing_unsupported_marker(self, found: bool) -> Self {
        let _ = self.unsupported_marker.set(found);
        self
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

/// [`RuleRef::is_unconditional`] of a rule whose target is the word `target`, read from its
/// words without building its matches: every match before the target is a `-m comment` (a
/// module's match runs to the next module, target or basic option; any other word opens a match
/// of its own, which is not a comment). Most rules with a verdict or NAT target (an endpoint's
/// `-p tcp -m tcp -j DNAT`) are told by their first word.
fn unconditional_before(rule: RuleRef<'_, '_>, target: Token) -> bool {
    let words = rule.tokens();
    let Some(end) = words.iter().rposition(|&t| t == target) else {
        return rule.is_unconditional();
    };
    let mut in_comment = false;
    for word in &words[..end] {
        match word.kind() {
            TokenKind::Module if rule.token_text(word) == "comment" => in_comment = true,
            TokenKind::Module | TokenKind::Target => return false,
            TokenKind::Option if word.is_basic() => return false,
            _ if !in_comment => return false,
            _ => {}
        }
    }
    true
}

/// [`unconditional_before`] the rule's target, found only when the first word does not settle
/// it: a basic option or a match other than `comment` before everything else restricts the
/// rule whatever its target is (kube-proxy's `-p tcp -m tcp -j DNAT` of every endpoint, most of
/// the rules with a verdict or NAT target of a node).
fn unconditional(rule: RuleRef<'_, '_>) -> bool {
    if let Some(first) = rule.tokens().first() {
        match first.kind() {
            TokenKind::Option if first.is_basic() => return false,
            TokenKind::Module if rule.token_text(first) != "comment" => return false,
            _ => {}
        }
    }
    rule.target()
        .is_some_and(|target| unconditional_before(rule, target.token()))
}

/// What a rule's target does, as the lints that walk every rule ask it: whether it ends the
/// walk through the chain, and for the rules that may, whether they match every packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetFacts(u8);

impl TargetFacts {
    const GOTO: u8 = 1;
    /// `ACCEPT`, `DROP`, `REJECT` or `RETURN`.
    const VERDICT: u8 = 2;
    /// `MASQUERADE`, `SNAT`, `DNAT`, `REDIRECT` or `NETMAP`: terminating in nat.
    const NAT: u8 = 4;
    const DROP_OR_REJECT: u8 = 8;
    /// No match but comments; read only for the rules with one of the bits above.
    const UNCONDITIONAL: u8 = 16;

    /// The facts of one rule, as [`RuleRef::target`] and [`RuleRef::is_unconditional`] give them.
    pub fn of(rule: RuleRef<'_, '_>) -> TargetFacts {
        let Some(target) = rule.target() else {
            return TargetFacts(0);
        };
        let mut bits = if target.is_goto() { Self::GOTO } else { 0 };
        bits |= Self::name_bits(target.name());
        if bits != 0 && unconditional_before(rule, target.token()) {
            bits |= Self::UNCONDITIONAL;
        }
        TargetFacts(bits)
    }

    fn name_bits(name: &str) -> u8 {
        Self::class_bits(TargetClass::of_name(name))
    }

    fn class_bits(class: TargetClass) -> u8 {
        match class {
            TargetClass::Drop | TargetClass::Reject => Self::VERDICT | Self::DROP_OR_REJECT,
            TargetClass::Accept | TargetClass::Return => Self::VERDICT,
            TargetClass::Masquerade
            | TargetClass::Snat
            | TargetClass::Dnat
            | TargetClass::Redirect
            | TargetClass::Netmap => Self::NAT,
            _ => 0,
        }
    }

    /// Every rule's facts, in rule order, from the target class and goto flag the parser
    /// keeps for each rule: the target itself is found only to read the matches before it,
    /// for the few rules whose target may end the walk.
    fn read_all(set: &Ruleset<'_>) -> Vec<TargetFacts> {
        set.iter_rules()
            .map(|rule| {
                let mut bits = Self::class_bits(rule.target_class());
                if rule.is_goto() {
                    bits |= Self::GOTO;
                }
                if bits != 0 && unconditional(rule) {
                    bits |= Self::UNCONDITIONAL;
                }
                TargetFacts(bits)
            })
            .collect()
    }

    /// A `-g` goto.
    pub fn is_goto(self) -> bool {
        self.0 & Self::GOTO != 0
    }

    /// `DROP` or `REJECT` (jumped to, or gone to).
    pub fn is_drop_or_reject(self) -> bool {
        self.0 & Self::DROP_OR_REJECT != 0
    }

    /// Whether the target ends the walk through the chain for the packets the rule matches:
    /// `ACCEPT`, `DROP`, `REJECT`, `RETURN`, a goto, and in nat (`nat`) its NAT targets.
    pub fn ends_walk(self, nat: bool) -> bool {
        self.0 & (Self::GOTO | Self::VERDICT) != 0 || (nat && self.0 & Self::NAT != 0)
    }

    /// Whether the rule has no match but comments. Known only for the rules whose target may
    /// end the walk (a goto, a verdict, a NAT target); false for the others.
    pub fn unconditional(self) -> bool {
        self.0 & Self::UNCONDITIONAL != 0
    }
}

/// What [`LintContext::chain_walk`] knows of a chain: whether its rules are
/// [`written_in_order`], and the positions of its first rule whose target may end the walk
/// ([`TargetFacts::ends_walk`]) and of its first rule that ends every walk (that target, and
/// [`TargetFacts::unconditional`]); a position is the rule count when there is none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainWalk {
    /// [`written_in_order`].
    pub in_order: bool,
    /// The position of the first rule whose target may end the walk through the chain.
    pub first_final: u32,
    /// The position of the first rule that ends the walk for every packet.
    pub first_terminal: u32,
    /// Whether a rule jumps (not goes) to `DROP` or `REJECT` with no match but comments
    /// (`RL401 bare-drop`'s rules, wherever they are in the chain).
    pub bare_drop_or_reject: bool,
}

impl ChainWalk {
    /// The walk facts of one chain, from its rules' target facts (`nat`: the chain is in nat).
    pub fn of(cx: &LintContext<'_, '_>, chain: ChainRef<'_, '_>) -> ChainWalk {
        Self::of_facts(chain, cx.all_target_facts())
    }

    /// [`ChainWalk::of`] with every rule's target facts at hand: [`ChainWalks`] reads every
    /// chain, and asked the context for the facts once a rule.
    fn of_facts(chain: ChainRef<'_, '_>, all_facts: &[TargetFacts]) -> ChainWalk {
        let nat = chain.table().kind() == TableKind::Nat;
        let count = chain.rule_count() as u32;
        let mut walk = ChainWalk {
            in_order: true,
            first_final: count,
            first_terminal: count,
            bare_drop_or_reject: false,
        };
        for (at, rule) in (0u32..).zip(chain.rules()) {
            walk.in_order &= rule.get().op == RuleOp::Append;
            walk.read_rule(at, all_facts[rule.id.index()], nat, count);
        }
        walk
    }

    /// Takes in the rule at `at` of a chain of `count` rules (`nat`: in the nat table), whose
    /// target facts are `facts` (both ways of reading the walks).
    #[inline(always)]
    fn read_rule(&mut self, at: u32, facts: TargetFacts, nat: bool, count: u32) {
        self.bare_drop_or_reject |=
            !facts.is_goto() && facts.is_drop_or_reject() && facts.unconditional();
        if self.first_terminal == count && facts.ends_walk(nat) {
            self.first_final = self.first_final.min(at);
            if facts.unconditional() {
                self.first_terminal = at;
            }
        }
    }
}

/// The walk facts of the chains, found by chain id in O(1). Kept for every chain when at least
/// half of them have two rules or more (a Kubernetes node: 12 bytes a chain, less than its
/// rules take). Otherwise kept only for those (a dump of millions of empty chains, issue 16's
/// memory rows): a bit per chain says whether it is kept, and a running count per 64 chains
/// plus a popcount gives its place among the kept ones, about 1.5 bits for a chain not kept;
/// a chain of 0 or 1 rule is then read again when asked, which is O(1).
enum ChainWalks {
    Every(Vec<ChainWalk>),
    Some {
        kept: Vec<u64>,
        /// The number of kept chains before each word of `kept`.
        kept_before: Vec<u32>,
        walks: Vec<ChainWalk>,
    },
}

impl ChainWalks {
    fn read_all(cx: &LintContext<'_, '_>) -> ChainWalks {
        let kept_chain = |chain: &ChainRef<'_, '_>| chain.rule_count() >= 2;
        let all_facts = cx.all_target_facts();
        let walks_of = |capacity: usize, keep: &dyn Fn(&ChainRef<'_, '_>) -> bool| {
            // Counted first so that the one allocation is exact.
            let mut walks = Vec::with_capacity(capacity);
            walks.extend(
                cx.set
                    .iter_chains()
                    .filter(keep)
                    .map(|chain| ChainWalk::of_facts(chain, all_facts)),
            );
            walks
        };
        // Counted alone first: a Kubernetes node keeps every chain, and the bits of the kept
        // ones are then never needed.
        let chains = cx.set.chains.len();
        let count = cx.set.iter_chains().filter(kept_chain).count();
        if count * 2 >= chains {
            return ChainWalks::Every(
                Self::read_in_rule_order(cx.set, all_facts)
                    .unwrap_or_else(|| walks_of(chains, &|_| true)),
            );
        }
        let (mut kept, mut kept_before) = (Vec::new(), Vec::new());
        let (mut word, mut count) = (0u64, 0u32);
        for (at, chain) in cx.set.iter_chains().enumerate() {
            if at % 64 == 0 {
                if at > 0 {
                    kept.push(std::mem::take(&mut word));
                }
                kept_before.push(count);
            }
            if kept_chain(&chain) {
                word |= 1 << (at % 64);
                count += 1;
            }
        }
        kept.push(word);
        ChainWalks::Some {
            kept,
            kept_before,
            walks: walks_of(count as usize, &kept_chain),
        }
    }

    /// Every chain's walk in one pass over the rules in rule order, reading of each rule only
    /// its chain, verb and target facts, when the rules are written chain by chain (as
    /// iptables-save writes them: each chain's rules are then the rules from its first on, and
    /// a rule's place in its chain is its id less the first's); `None` when they are not.
    /// Reading the walks chain by chain through each chain's rules cost 50 instructions a rule
    /// on a 250k-rule node.
    fn read_in_rule_order(set: &Ruleset<'_>, all_facts: &[TargetFacts]) -> Option<Vec<ChainWalk>> {
        let unread = ChainWalk {
            in_order: true,
            first_final: 0,
            first_terminal: 0,
            bare_drop_or_reject: false,
        };
        // A chain without rules keeps `unread`; the others are written when their last rule
        // is read (kept in locals meanwhile: a store per rule cost more than the rest).
        let mut walks = vec![unread; set.chains.len()];
        let rules = &set.rules;
        let all_facts = all_facts.get(..rules.len())?;
        // The chain of the rules being read, its first rule, rule count and table.
        let (mut chain, mut first, mut count, mut nat) = (None, 0u32, 0u32, false);
        let mut walk = unread;
        for (id, (rule, facts)) in (0u32..).zip(rules.iter().zip(all_facts)) {
            if chain != Some(rule.chain) {
                if let Some(done) = chain {
                    // A chain's rules written after another chain's: not chain by chain.
                    if done > rule.chain {
                        return None;
                    }
                    *walks.get_mut(done.index())? = walk;
                }
                chain = Some(rule.chain);
                first = id;
                let of = set.chain(rule.chain);
                count = of.rule_count() as u32;
                nat = of.table().kind() == TableKind::Nat;
                walk = ChainWalk {
                    in_order: true,
                    first_final: count,
                    first_terminal: count,
                    bare_drop_or_reject: false,
                };
            }
            walk.in_order &= rule.op == RuleOp::Append;
            if facts.0 == 0 {
                continue;
            }
            walk.read_rule(id - first, *facts, nat, count);
        }
        if let Some(done) = chain {
            *walks.get_mut(done.index())? = walk;
        }
        Some(walks)
    }

    /// The kept walk facts of the chain at `index`, if kept.
    #[inline]
    fn get(&self, index: usize) -> Option<ChainWalk> {
        match self {
            ChainWalks::Every(walks) => walks.get(index).copied(),
            ChainWalks::Some {
                kept,
                kept_before,
                walks,
            } => {
                let word = *kept.get(index / 64)?;
                let bit = 1u64 << (index % 64);
                if word & bit == 0 {
                    return None;
                }
                let before = *kept_before.get(index / 64)? as usize;
                walks
                    .get(before + (word & (bit - 1)).count_ones() as usize)
                    .copied()
            }
        }
    }

    /// How many chains' walk facts are kept.
    #[cfg(test)]
    fn kept_count(&self) -> usize {
        match self {
            ChainWalks::Every(walks) | ChainWalks::Some { walks, .. } => walks.len(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::unreachable_rule::ends_walk_in;
    use rulelint_dumpgen::{Shape, generate};

    /// Every rule's shared facts equal what the rule's own target and matches say.
    fn assert_facts_match_rules(text: &str) {
        let parsed = rulelint_parser::parse(text);
        let set = &parsed.ruleset;
        let graph = ChainGraph::build(set);
        let cx = LintContext::new(set, &graph);
        let mut checked = 0;
        for rule in set.iter_rules() {
            let facts = cx.target_facts(rule.id);
            assert_eq!(
                facts,
                TargetFacts::of(rule),
                "{}",
                set.text(rule.get().span)
            );
            let name = rule.target().map(|t| t.name());
            assert_eq!(facts.is_goto(), rule.target().is_some_and(|t| t.is_goto()));
            assert_eq!(
                facts.is_drop_or_reject(),
                name.is_some_and(crate::known::is_drop_or_reject)
            );
            for nat in [false, true] {
                assert_eq!(facts.ends_walk(nat), ends_walk_in(rule, nat));
            }
            if facts.ends_walk(true) || facts.is_drop_or_reject() {
                assert_eq!(facts.unconditional(), rule.is_unconditional());
                checked += 1;
            }
        }
        assert!(checked > 0, "no rule that ends the walk");
    }

    #[test]
    fn target_facts_read_once_equal_each_rule_read_alone() {
        assert_facts_match_rules(
            "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:DROP - [0:0]\n:X - [0:0]\n\
             -A INPUT -j DROP\n-A INPUT -g DROP\n-A INPUT -g X\n-A INPUT -j X\n-A INPUT -p tcp -j REJECT\n\
             -A INPUT -m comment --comment \"c\" -j ACCEPT\n-A INPUT -j LOG\n-A INPUT -s 10.0.0.0/8\n\
             -A X -m comment --comment \"x\" -j RETURN\n-A X -j DNAT --to-destination 10.0.0.1\n\
             -A X -m comment --comment \"a\" -m comment --comment \"b\" -j ACCEPT\n-A X -m comment --comment \"a\" -p tcp -j ACCEPT\n\
             -A X -m comment --comment \"a\" -m tcp --dport 80 -j DROP\n-A X -m comment --comment \"a\" [unsupported revision] -j DROP\n\
             -A X [unsupported revision] -j DROP\n-A X --dport 80 -j DROP\n-A X -m comment --comment \"a\" -j X -j ACCEPT\n\
             -A X ! -m comment --comment \"a\" -j DROP\n-A X -m comment -j REJECT\nCOMMIT\n\
             *nat\n:PREROUTING ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\n:MASQUERADE - [0:0]\n\
             -A POSTROUTING -j MASQUERADE\n-A POSTROUTING -g MASQUERADE\n-A POSTROUTING -o eth0 -j SNAT --to-source 1.2.3.4\n\
             -A PREROUTING -p tcp -j DNAT --to-destination 10.0.0.1:80\n-A MASQUERADE -j NETMAP --to 10.0.0.0/8\nCOMMIT\n",
        );
        assert_facts_match_rules(&generate(&Shape::with_rule_target(3_000)));
    }

    /// Where most chains have less than two rules, the walk store keeps only the others and
    /// finds each by its id across many 64-chain words: chains of 0, 1, 2 and 3 rules,
    /// interleaved, 300 of them, 100 kept.
    #[test]
    fn chain_walks_keep_only_chains_of_two_rules_or_more() {
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
        for at in 0..300 {
            text.push_str(&format!(":C{at} - [0:0]\n"));
        }
        for at in 0..300 {
            let rules = if at % 3 == 0 { 2 + at % 2 } else { at % 2 };
            for rule in 0..rules {
                // Where the walk first ends differs between neighbouring kept chains.
                let verdict = if (at + rule) % 5 == 0 {
                    "DROP"
                } else {
                    "ACCEPT"
                };
                let source = if (at / 4 + rule) % 3 == 0 {
                    ""
                } else {
                    "-s 10.0.0.1 "
                };
                text.push_str(&format!("-A C{at} {source}-j {verdict}\n"));
            }
        }
        text.push_str("COMMIT\n");
        let parsed = rulelint_parser::parse(&text);
        let set = &parsed.ruleset;
        let graph = ChainGraph::build(set);
        let cx = LintContext::new(set, &graph);
        for chain in set.iter_chains() {
            assert_eq!(cx.chain_walk(chain), ChainWalk::of(&cx, chain));
        }
        let store = cx.chain_walks.get().expect("built by the first chain");
        let kept = set.iter_chains().filter(|c| c.rule_count() >= 2).count();
        assert!(matches!(store, ChainWalks::Some { .. }));
        assert_eq!((store.kept_count(), kept), (100, 100));
        assert!(
            set.iter_chains()
                .any(|c| c.rule_count() >= 2 && c.id.index() >= 256)
        );
    }

    /// Every chain's shared walk facts equal what its rules say one by one (the order, the
    /// first rule that may end the walk and that ends every walk, as RL301 and RL303 used to
    /// find them, and RL401's bare verdicts), on every lint corpus dump and a generated node.
    #[test]
    fn chain_walks_read_once_equal_each_chain_read_alone() {
        let mut texts = crate::check::tests::lint_corpus_dumps();
        texts.push(generate(&Shape::with_rule_target(3_000)));
        // Chains whose rules are interleaved (restore input), read chain by chain.
        texts.push(
            "*filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n-A A -s 10.0.0.1 -j DROP\n-A INPUT -j A\n-A A -j ACCEPT\n-A INPUT -j DROP\n-A A -j DROP\nCOMMIT\n"
                .to_string(),
        );
        // Restore input that rearranges a chain.
        texts.push(
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\n-I INPUT 1 -s 10.0.0.1 -j DROP\n-A INPUT -j DROP\nCOMMIT\n"
                .to_string(),
        );
        let (mut terminals, mut out_of_order, mut bare) = (0, 0, 0);
        for text in &texts {
            let parsed = rulelint_parser::parse(text);
            let set = &parsed.ruleset;
            let graph = ChainGraph::build(set);
            let cx = LintContext::new(set, &graph);
            for chain in set.iter_chains() {
                let nat = chain.table().kind() == TableKind::Nat;
                let count = chain.rule_count() as u32;
                let position = |found: &dyn Fn(RuleRef<'_, '_>) -> bool| {
                    (0u32..)
                        .zip(chain.rules())
                        .find(|&(_, r)| found(r))
                        .map_or(count, |(at, _)| at)
                };
                let walk = cx.chain_walk(chain);
                assert_eq!(walk.in_order, written_in_order(chain));
                assert_eq!(walk.first_final, position(&|r| ends_walk_in(r, nat)));
                assert_eq!(
                    walk.first_terminal,
                    position(&|r| ends_walk_in(r, nat) && r.is_unconditional())
                );
                assert_eq!(
                    walk.bare_drop_or_reject,
                    chain.rules().any(|r| r.target().is_some_and(|t| {
                        !t.is_goto()
                            && crate::known::is_drop_or_reject(t.name())
                            && r.is_unconditional()
                    }))
                );
                terminals += usize::from(walk.first_terminal < count);
                bare += usize::from(walk.bare_drop_or_reject);
                out_of_order += usize::from(!walk.in_order);
            }
        }
        assert!(
            terminals > 50 && out_of_order > 0 && bare > 5,
            "{terminals} {out_of_order} {bare}"
        );
    }
}
