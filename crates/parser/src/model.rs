//! The parsed ruleset: tables, chains, rules and their words, stored flat and compact.
//!
//! Rules do not own strings: every name and argument is a [`Span`] into the source text, and a
//! rule's words live in one shared [`Token`] array. Handles such as [`RuleRef`] pair an id with the
//! ruleset to give a convenient, allocation-free view.

use crate::chain_index::ChainIndex;
use crate::span::Span;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as an index into the ruleset's vectors.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// Index of a table in [`Ruleset::tables`].
    TableId
);
id_type!(
    /// Index of a chain in [`Ruleset::chains`].
    ChainId
);
id_type!(
    /// Index of a rule in [`Ruleset::rules`].
    RuleId
);

/// The tables iptables knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// `*raw`
    Raw,
    /// `*mangle`
    Mangle,
    /// `*nat`
    Nat,
    /// `*filter`
    Filter,
    /// `*security`
    Security,
    /// Any other name (reported as `unknown-table`).
    Other,
}

impl TableKind {
    /// The table for a `*name` header.
    pub fn from_name(name: &str) -> TableKind {
        match name {
            "raw" => TableKind::Raw,
            "mangle" => TableKind::Mangle,
            "nat" => TableKind::Nat,
            "filter" => TableKind::Filter,
            "security" => TableKind::Security,
            _ => TableKind::Other,
        }
    }

    /// The table's name as iptables writes it (`other` for unknown tables).
    pub fn name(self) -> &'static str {
        match self {
            TableKind::Raw => "raw",
            TableKind::Mangle => "mangle",
            TableKind::Nat => "nat",
            TableKind::Filter => "filter",
            TableKind::Security => "security",
            TableKind::Other => "other",
        }
    }

    /// The built-in chains (netfilter hooks) of this table, in iptables-save order.
    pub fn builtin_chains(self) -> &'static [&'static str] {
        match self {
            TableKind::Raw => &["PREROUTING", "OUTPUT"],
            TableKind::Mangle => &["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
            TableKind::Nat => &["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
            TableKind::Filter | TableKind::Security => &["INPUT", "FORWARD", "OUTPUT"],
            TableKind::Other => &[],
        }
    }

    /// True when `chain` is a built-in chain of this table.
    pub fn is_builtin(self, chain: &str) -> bool {
        self.builtin_chains().contains(&chain)
    }
}

/// The address family of a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// iptables (IPv4).
    Ipv4,
    /// ip6tables (IPv6).
    Ipv6,
}

/// One `*table ... COMMIT` block, or the implicit table of a headerless fragment.
#[derive(Clone, Debug)]
pub struct Table {
    /// The name after `*` (for an implicit table, the inferred name is `kind.name()`).
    pub name: Span,
    /// Which table.
    pub kind: TableKind,
    /// The `*name` line; empty for an implicit table.
    pub header: Span,
    /// The `COMMIT` line, if the block was closed.
    pub commit: Option<Span>,
    /// A later block of the same table replaces this one (two dumps back to back).
    pub superseded: bool,
    /// Not a block in the text: rules outside any table, grouped by the inferred table.
    pub implicit: bool,
    /// The chains of this table, in order of first appearance.
    pub chains: Vec<ChainId>,
    pub(crate) chain_names: ChainIndex,
}

/// One chain of one table.
#[derive(Clone, Debug)]
pub struct Chain {
    /// The chain's name.
    pub name: Span,
    /// The table it belongs to.
    pub table: TableId,
    /// A built-in chain of its table (a netfilter hook).
    pub builtin: bool,
    /// See [`Chain::declaration`]; [`Chain::UNDECLARED`] when there is none. Not an
    /// `Option<Span>`: that takes 12 bytes, and a 1M-chain dump has a million of these.
    declaration: Span,
    /// While parsing, how many rules the chain has; then where they start in
    /// `Ruleset::chain_rules` (they end where the next chain's start: no length is stored).
    pub(crate) rules_start: u32,
    /// Where [`ChainRef::policy_span`] and [`ChainRef::counters_span`] are (`DeclaredSpans`):
    /// read again from the declaration line when asked, since few ask and a chain's bytes
    /// count (28 in all; 40 with the two spans kept as offsets and a rule count, issue 16).
    declared: u8,
}

/// Where a chain's policy and counters are: 2 bits each in `Chain::declared`.
struct DeclaredSpans;

impl DeclaredSpans {
    /// The chain has none.
    const NONE: u8 = 0;
    /// In its `:NAME POLICY [p:b]` declaration line: read again from it.
    const IN_DECLARATION: u8 = 1;
    /// Set elsewhere (a `-P` command): in `Ruleset::far_chain_spans`.
    const FAR: u8 = 2;
    /// Shift of the counters' two bits; the policy's are the low ones.
    const COUNTERS: u8 = 2;
}

impl Chain {
    /// No declaration: start after end, which no span of the text has.
    const UNDECLARED: Span = Span {
        start: u32::MAX,
        end: 0,
    };

    pub(crate) fn new(name: Span, table: TableId, builtin: bool) -> Chain {
        Chain {
            name,
            table,
            builtin,
            declaration: Chain::UNDECLARED,
            rules_start: 0,
            declared: DeclaredSpans::NONE,
        }
    }

    /// Counts one more rule of the chain, while parsing.
    pub(crate) fn count_rule(&mut self) {
        self.rules_start += 1;
    }

    /// The `:NAME POLICY [p:b]` line or `-N NAME` command; `None` when only rules name it.
    pub fn declaration(&self) -> Option<Span> {
        (self.declaration != Chain::UNDECLARED).then_some(self.declaration)
    }

    pub(crate) fn set_declaration(&mut self, span: Span) {
        debug_assert!(span != Chain::UNDECLARED);
        self.declaration = span;
    }
}

/// What a rule line does, by its verb.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleOp {
    /// `-A`: the form every `iptables-save` rule has.
    Append,
    /// `-I CHAIN [n]`: restore input.
    Insert,
    /// `-D CHAIN rule` or `-D CHAIN n`: restore input.
    Delete,
    /// `-R CHAIN n rule`: restore input.
    Replace,
}

/// A chain-level command of restore input (`-N`, `-X`, `-F`, `-P`, `-Z`, `-E`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandVerb {
    /// `-N`: create a chain (declares it, like `:NAME - [0:0]`).
    NewChain,
    /// `-X`: delete a chain.
    DeleteChain,
    /// `-F`: flush a chain.
    Flush,
    /// `-P CHAIN POLICY`: set a built-in chain's policy.
    Policy,
    /// `-Z`: zero counters.
    Zero,
    /// `-E OLD NEW`: rename a chain.
    Rename,
}

impl CommandVerb {
    /// The short flag, e.g. `-N`.
    pub fn flag(self) -> &'static str {
        match self {
            CommandVerb::NewChain => "-N",
            CommandVerb::DeleteChain => "-X",
            CommandVerb::Flush => "-F",
            CommandVerb::Policy => "-P",
            CommandVerb::Zero => "-Z",
            CommandVerb::Rename => "-E",
        }
    }
}

/// A chain-level command line of restore input.
#[derive(Clone, Debug)]
pub struct Command {
    /// The whole line (counters excluded).
    pub span: Span,
    /// Which command.
    pub verb: CommandVerb,
    /// The table block it appears in.
    pub table: TableId,
    /// The chain it names (may be empty for `-F`/`-X`/`-Z` without a chain).
    pub chain: Span,
    /// The rest of the line after the chain (policy, new name), possibly empty.
    pub args: Span,
}

/// The role of one word of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum TokenKind {
    /// An option name: `-s`, `--dport`, `--to-destination`.
    Option,
    /// An argument of the option before it.
    Arg,
    /// `-m NAME` (both words, one token): starts a match.
    Module,
    /// `-j NAME` or `-g NAME` (both words, one token): the target.
    Target,
    /// `[unsupported revision]`: iptables could not print what the kernel holds.
    Unsupported,
}

/// One word (or `-m NAME` / `-j NAME` pair) of a rule. 8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    start: u32,
    len: u16,
    /// Kind in the low 3 bits, flags above.
    bits: u8,
    /// For `Module`/`Target`: where the name starts, from `start`.
    name_offset: u8,
}

impl Token {
    const KIND_MASK: u8 = 0b111;
    pub(crate) const NEGATED: u8 = 1 << 3;
    pub(crate) const BASIC: u8 = 1 << 4;
    pub(crate) const NEGATED_AFTER: u8 = 1 << 5;
    pub(crate) const GOTO: u8 = 1 << 6;

    /// A token; `name_offset` is where the name starts within a `Module`/`Target` token.
    pub(crate) fn new(span: Span, kind: TokenKind, flags: u8, name_offset: u8) -> Token {
        Token {
            start: span.start,
            len: span.len() as u16,
            bits: kind as u8 | flags,
            name_offset,
        }
    }

    /// The word's role.
    #[inline]
    pub fn kind(&self) -> TokenKind {
        match self.bits & Token::KIND_MASK {
            0 => TokenKind::Option,
            1 => TokenKind::Arg,
            2 => TokenKind::Module,
            3 => TokenKind::Target,
            _ => TokenKind::Unsupported,
        }
    }

    /// The token's bytes in the source.
    #[inline]
    pub fn span(&self) -> Span {
        Span {
            start: self.start,
            end: self.start + self.len as u32,
        }
    }

    /// The name's bytes: for `Module`/`Target` tokens the part after `-m`/`-j`/`-g`, otherwise
    /// the whole token.
    #[inline]
    pub fn name_span(&self) -> Span {
        Span {
            start: self.start + self.name_offset as u32,
            end: self.start + self.len as u32,
        }
    }

    /// An option negated with `!` (either before it, or after it in the old style).
    #[inline]
    pub fn negated(&self) -> bool {
        self.bits & Token::NEGATED != 0
    }

    /// The negation was written in the old style, after the option: `-s ! 10.0.0.0/8`.
    #[inline]
    pub fn negated_after(&self) -> bool {
        self.bits & Token::NEGATED_AFTER != 0
    }

    /// A basic iptables option (`-s`, `-d`, `-p`, `-i`, `-o`, `-f`), not a module's.
    #[inline]
    pub fn is_basic(&self) -> bool {
        self.bits & Token::BASIC != 0
    }

    /// A `-g` (goto) target rather than `-j` (jump).
    #[inline]
    pub fn is_goto(&self) -> bool {
        self.bits & Token::GOTO != 0
    }

    /// A `Target` token: [`Token::kind`] without the match.
    #[inline]
    pub(crate) fn is_target(&self) -> bool {
        self.bits & Token::KIND_MASK == TokenKind::Target as u8
    }

    pub(crate) fn add_flags(&mut self, flags: u8) {
        self.bits |= flags;
    }
}

/// One rule line (`-A`, `-I`, `-D`, `-R`). 20 bytes: a dump of millions of short rules costs
/// little more than its text (issue 16). What few rules have (a position, counters, a target
/// far from the end of a long rule, tokens far from their block's) is read through [`RuleRef`]
/// from small side tables or the text.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The rule from its verb to its last word (counters excluded; may span wrapped lines).
    pub span: Span,
    /// The chain it belongs to.
    pub chain: ChainId,
    /// The chain of the rule's table that the target names, or `Rule::NO_CHAIN`. Resolved
    /// while parsing, when the name is still in cache: the graph is then built without
    /// reading the text again.
    pub(crate) target_chain: u32,
    /// Its verb.
    pub op: RuleOp,
    /// [`Rule::HAS_COUNTERS`], [`Rule::HAS_POSITION`], [`Rule::HAS_TARGET`],
    /// [`Rule::FAR_TARGET`], [`Rule::FAR_TOKENS`], [`Rule::GOTO`].
    pub(crate) flags: u8,
    /// The rule's first token, counted from the first token of its block of
    /// [`Ruleset::TOKEN_BLOCK`] rules (`Ruleset::token_blocks`); with [`Rule::FAR_TOKENS`] the
    /// index is in `Ruleset::far_tokens` instead. Its tokens end where the next rule's start.
    pub(crate) tokens_rel: u16,
}

impl Rule {
    pub(crate) const NO_TARGET: u32 = u32::MAX;
    pub(crate) const NO_CHAIN: u32 = u32::MAX;
    /// `iptables-save -c` wrote `[packets:bytes]` before the verb (read back from the text).
    pub(crate) const HAS_COUNTERS: u8 = 1;
    /// `-I`/`-R`/`-D CHAIN n`: the number is in `Ruleset::positions`.
    pub(crate) const HAS_POSITION: u8 = 2;
    /// The rule has a `-j` or `-g`: the last `Target` token among its last
    /// [`Rule::NEAR_TARGET`] tokens, unless [`Rule::FAR_TARGET`].
    pub(crate) const HAS_TARGET: u8 = 4;
    /// The target token is further from the rule's end: its index is in `Ruleset::far_targets`.
    pub(crate) const FAR_TARGET: u8 = 8;
    /// The first token's index is in `Ruleset::far_tokens`: too far from its block's first.
    pub(crate) const FAR_TOKENS: u8 = 16;
    /// The target is `-g` (goto): read by the graph without finding the target token.
    pub(crate) const GOTO: u8 = 32;
    /// Bits 6 and 7: how many tokens the target is from the rule's last token (0 for
    /// `-j KUBE-SEP-X`, 2 for `-j DNAT --to-destination X`), or [`Rule::TARGET_SCAN`].
    pub(crate) const TARGET_FROM_END_SHIFT: u32 = 6;
    /// The target is further from the end: found by a look at the last [`Rule::NEAR_TARGET`].
    pub(crate) const TARGET_SCAN: u8 = 3;
    /// How many tokens from the end of a rule its target is looked for: options after `-j`
    /// (`--to-destination`, `--set-xmark`, ...) are few.
    pub(crate) const NEAR_TARGET: usize = 16;

    /// True when the rule has a `-j` or `-g`.
    #[inline]
    pub(crate) fn has_target(&self) -> bool {
        self.flags & Rule::HAS_TARGET != 0
    }
}

/// What a `#` line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommentKind {
    /// `# Generated by iptables-save v1.8.7 on ...`
    Generated(Generator),
    /// `# Completed on ...`
    Completed,
    /// `# Warning: iptables-legacy tables present, use iptables-legacy-save to see them`
    LegacyTablesPresent,
    /// `# Table `nat' is incompatible, use 'nft' tool.`
    IncompatibleTable,
    /// Any other comment.
    Other,
}

/// The tool that wrote a dump, from its `# Generated by` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    /// `iptables-save`, `ip6tables-save`, `iptables-nft-save`, `xtables-save`, ...
    pub tool: Span,
    /// `1.8.7` (without the `v`); empty when absent.
    pub version: Span,
    /// The header says `(nf_tables)` or the tool is an `-nft-` variant.
    pub nf_tables: bool,
    /// The header says `(legacy)` or the tool is a `-legacy-` variant.
    pub legacy: bool,
}

/// A `#` line.
#[derive(Clone, Debug)]
pub struct Comment {
    /// The whole line.
    pub span: Span,
    /// What it says.
    pub kind: CommentKind,
}

/// A parsed dump. Borrows the text it was parsed from.
#[derive(Clone, Debug)]
pub struct Ruleset<'a> {
    pub(crate) source: &'a str,
    /// Tables in order of appearance.
    pub tables: Vec<Table>,
    /// Every chain of every table.
    pub chains: Vec<Chain>,
    /// Every rule, in order of appearance.
    pub rules: Vec<Rule>,
    /// Chain-level commands of restore input, in order of appearance.
    pub commands: Vec<Command>,
    /// `#` lines, in order of appearance.
    pub comments: Vec<Comment>,
    /// The address family, from the header or the addresses; `None` when nothing tells.
    pub family: Option<Family>,
    pub(crate) tokens: Vec<Token>,
    pub(crate) chain_rules: ChainRules,
    /// The rule numbers of `-I`/`-R`/`-D CHAIN n`, by rule, in rule order.
    pub(crate) positions: Vec<(RuleId, u32)>,
    /// Target tokens more than [`Rule::NEAR_TARGET`] tokens from their rule's end, by rule, in
    /// order.
    pub(crate) far_targets: Vec<(RuleId, u32)>,
    /// The first token of each block of [`Ruleset::TOKEN_BLOCK`] rules: a rule's tokens start
    /// at its block's plus `Rule::tokens_rel`.
    pub(crate) token_blocks: Vec<u32>,
    /// First tokens of rules too far from their block's for `Rule::tokens_rel`, by rule, in
    /// order.
    pub(crate) far_tokens: Vec<(RuleId, u32)>,
    /// Chain spans set outside their declaration line. Boxed: `Parsed` is moved around by
    /// value.
    pub(crate) far_chain_spans: Box<FarChainSpans>,
    /// Each rule's [`TargetClass`], by rule: one byte a rule, read from the target's name
    /// while the parser holds it, so that the lints' passes over every rule need not find and
    /// read each target again (issue 19).
    pub(crate) target_classes: Vec<TargetClass>,
}

/// What a rule's target names, among the names analysis asks about on every rule: the
/// verdicts, the NAT targets, `MARK` and kube-proxy's `KUBE-MARK-MASQ`. Told by the name alone,
/// whether the target is an extension or a chain of that name (`RuleRef::target_class`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TargetClass {
    /// The rule has no `-j` or `-g`.
    None,
    /// `ACCEPT`
    Accept,
    /// `DROP`
    Drop,
    /// `REJECT`
    Reject,
    /// `RETURN`
    Return,
    /// `MASQUERADE`
    Masquerade,
    /// `SNAT`
    Snat,
    /// `DNAT`
    Dnat,
    /// `REDIRECT`
    Redirect,
    /// `NETMAP`
    Netmap,
    /// `MARK`
    Mark,
    /// `KUBE-MARK-MASQ`
    KubeMarkMasq,
    /// Any other name: a chain, or another extension.
    Other,
}

impl TargetClass {
    /// The class of a target named `name`.
    pub fn of_name(name: &str) -> TargetClass {
        match name {
            "ACCEPT" => TargetClass::Accept,
            "DROP" => TargetClass::Drop,
            "REJECT" => TargetClass::Reject,
            "RETURN" => TargetClass::Return,
            "MASQUERADE" => TargetClass::Masquerade,
            "SNAT" => TargetClass::Snat,
            "DNAT" => TargetClass::Dnat,
            "REDIRECT" => TargetClass::Redirect,
            "NETMAP" => TargetClass::Netmap,
            "MARK" => TargetClass::Mark,
            "KUBE-MARK-MASQ" => TargetClass::KubeMarkMasq,
            _ => TargetClass::Other,
        }
    }
}

/// Chain spans set outside their declaration line.
#[derive(Clone, Debug, Default)]
pub(crate) struct FarChainSpans {
    /// Policies of `-P` commands, by chain.
    pub(crate) policies: BTreeMap<ChainId, Span>,
}

impl<'a> Ruleset<'a> {
    /// Declares a chain by its `:NAME POLICY [p:b]` line `span`, which has a policy word and
    /// counters as told (they are read again from the line when asked).
    pub(crate) fn set_chain_declaration(
        &mut self,
        id: ChainId,
        span: Span,
        policy: bool,
        counters: bool,
    ) {
        let chain = &mut self.chains[id.index()];
        chain.set_declaration(span);
        let state = |present: bool| {
            if present {
                DeclaredSpans::IN_DECLARATION
            } else {
                DeclaredSpans::NONE
            }
        };
        chain.declared = state(policy) | state(counters) << DeclaredSpans::COUNTERS;
    }

    /// Sets a chain's policy word from a `-P` command.
    pub(crate) fn set_chain_policy(&mut self, id: ChainId, span: Span) {
        let chain = &mut self.chains[id.index()];
        chain.declared = (chain.declared & !0b11) | DeclaredSpans::FAR;
        self.far_chain_spans.policies.insert(id, span);
    }

    /// Where chain `c`'s rules are in `chain_rules`; empty for a chain it does not have.
    #[inline]
    pub(crate) fn chain_rule_range(&self, c: usize) -> std::ops::Range<usize> {
        // One bounds check for all but the last chain: lints ask this per rule.
        match self.chains.get(c..c.saturating_add(2)) {
            Some([chain, next]) => chain.rules_start as usize..next.rules_start as usize,
            _ => self
                .chains
                .get(c)
                .map_or(0..0, |chain| chain.rules_start as usize..self.rules.len()),
        }
    }

    /// The text this ruleset was parsed from.
    pub fn source(&self) -> &'a str {
        self.source
    }

    /// The same ruleset over `source`, another text at least as long that holds the same
    /// bytes under every span (the CLI parses a copy of a file whose other sections are
    /// blanked out, then points the ruleset at the file itself). `None` when it is shorter.
    pub fn with_source<'b>(self, source: &'b str) -> Option<Ruleset<'b>> {
        (source.len() >= self.source.len()).then_some(Ruleset {
            source,
            tables: self.tables,
            chains: self.chains,
            rules: self.rules,
            commands: self.commands,
            comments: self.comments,
            family: self.family,
            tokens: self.tokens,
            chain_rules: self.chain_rules,
            positions: self.positions,
            far_targets: self.far_targets,
            token_blocks: self.token_blocks,
            far_tokens: self.far_tokens,
            far_chain_spans: self.far_chain_spans,
            target_classes: self.target_classes,
        })
    }

    /// The text of a span.
    #[inline]
    pub fn text(&self, span: Span) -> &'a str {
        &self.source[span.range()]
    }

    /// A table by id.
    pub fn table(&self, id: TableId) -> TableRef<'_, 'a> {
        TableRef { set: self, id }
    }

    /// A chain by id.
    pub fn chain(&self, id: ChainId) -> ChainRef<'_, 'a> {
        ChainRef { set: self, id }
    }

    /// A rule by id.
    pub fn rule(&self, id: RuleId) -> RuleRef<'_, 'a> {
        RuleRef { set: self, id }
    }

    /// Every table, in order.
    pub fn iter_tables(&self) -> impl Iterator<Item = TableRef<'_, 'a>> + '_ {
        (0..self.tables.len() as u32).map(|i| self.table(TableId(i)))
    }

    /// Every chain, in order.
    pub fn iter_chains(&self) -> impl Iterator<Item = ChainRef<'_, 'a>> + '_ {
        (0..self.chains.len() as u32).map(|i| self.chain(ChainId(i)))
    }

    /// Every rule, in order of appearance.
    pub fn iter_rules(&self) -> impl Iterator<Item = RuleRef<'_, 'a>> + '_ {
        (0..self.rules.len() as u32).map(|i| self.rule(RuleId(i)))
    }

    /// The live (not superseded) table of a kind: the one analysis looks at.
    pub fn table_by_kind(&self, kind: TableKind) -> Option<TableRef<'_, 'a>> {
        self.iter_tables()
            .filter(|t| t.kind() == kind && !t.get().superseded)
            .last()
    }

    /// A chain of a table by name.
    pub fn find_chain(&self, table: TableId, name: &str) -> Option<ChainRef<'_, 'a>> {
        self.tables[table.index()]
            .chain_names
            .get(self.source, name)
            .map(|id| self.chain(id))
    }

    /// The generator header, if any (the first one).
    pub fn generator(&self) -> Option<&Generator> {
        self.comments.iter().find_map(|c| match &c.kind {
            CommentKind::Generated(g) => Some(g),
            _ => None,
        })
    }

    /// True when the dump carries the iptables-nft warning that legacy tables are also present.
    pub fn legacy_tables_present(&self) -> bool {
        self.comments
            .iter()
            .any(|c| c.kind == CommentKind::LegacyTablesPresent)
    }

    /// Rules per entry of `token_blocks`.
    pub(crate) const TOKEN_BLOCK: usize = 64;

    /// The index of rule `rule`'s first token.
    #[inline]
    fn rule_tokens_start(&self, rule: usize) -> usize {
        let r = &self.rules[rule];
        if r.flags & Rule::FAR_TOKENS != 0 {
            return side_table(&self.far_tokens, rule).unwrap_or_default() as usize;
        }
        self.token_blocks
            .get(rule / Ruleset::TOKEN_BLOCK)
            .map_or(0, |&base| base as usize + r.tokens_rel as usize)
    }

    /// The index of rule `rule`'s target token, if it has one.
    #[inline]
    pub(crate) fn rule_target(&self, rule: usize) -> Option<u32> {
        let r = &self.rules[rule];
        if !r.has_target() {
            return None;
        }
        if r.flags & Rule::FAR_TARGET != 0 {
            return side_table(&self.far_targets, rule);
        }
        let start = self.rule_tokens_start(rule);
        let at = self.target_in(rule, self.rule_tokens(rule))?;
        Some((start + at) as u32)
    }

    /// Rule `rule`'s target token, if it has one: stored, or produced from the rule's text for
    /// a rule whose only word is its jump (see [`Ruleset::lone_target`]).
    #[inline]
    pub(crate) fn target_token(&self, rule: usize) -> Option<Token> {
        if !self.rules[rule].has_target() {
            return None;
        }
        match self.rule_target(rule) {
            Some(at) => self.tokens.get(at as usize).copied(),
            None => self.lone_target(rule),
        }
    }

    /// The token of a rule that has a target and no stored token: its only word is its jump
    /// (`-A X -j Y`), and the parser stored nothing for it because [`lone_target_token`] reads
    /// it back exactly from the rule's text (issue 16: millions of one-word rules paid 8
    /// bytes each for it).
    #[inline]
    fn lone_target(&self, rule: usize) -> Option<Token> {
        let r = &self.rules[rule];
        if !r.has_target() || !self.rule_tokens(rule).is_empty() {
            return None;
        }
        lone_target_token(self.source, r.span)
    }

    /// The tokens of rule `rule`, the lone target produced when it is not stored.
    #[inline]
    pub(crate) fn rule_token_list(&self, rule: usize) -> Tokens<'_> {
        let stored = self.rule_tokens(rule);
        let lone = if stored.is_empty() {
            self.lone_target(rule)
        } else {
            None
        };
        Tokens { stored, lone }
    }

    /// The position in `tokens`, rule `rule`'s tokens, of its target when that is among the
    /// last [`Rule::NEAR_TARGET`]: the last `Target` token (the parser keeps the last
    /// `-j`/`-g`), most often at a distance from the end that the rule's flags hold.
    #[inline]
    fn target_in(&self, rule: usize, tokens: &[Token]) -> Option<usize> {
        let from_end = self.rules[rule].flags >> Rule::TARGET_FROM_END_SHIFT;
        if from_end != Rule::TARGET_SCAN {
            return tokens.len().checked_sub(1 + from_end as usize);
        }
        let from = tokens.len().saturating_sub(Rule::NEAR_TARGET);
        tokens[from..]
            .iter()
            .rposition(Token::is_target)
            .map(|at| from + at)
    }

    /// The tokens of rule `rule`: from its start to the next rule's.
    #[inline]
    pub(crate) fn rule_tokens(&self, rule: usize) -> &[Token] {
        let r = &self.rules[rule];
        // The common case, small enough to inline: the next rule is in the same block and
        // neither start is in the side table.
        if let Some(next) = self.rules.get(rule + 1)
            && (r.flags | next.flags) & Rule::FAR_TOKENS == 0
            && !(rule + 1).is_multiple_of(Ruleset::TOKEN_BLOCK)
            && let Some(&base) = self.token_blocks.get(rule / Ruleset::TOKEN_BLOCK)
            && let Some(tokens) = self.tokens.get(
                base as usize + r.tokens_rel as usize..base as usize + next.tokens_rel as usize,
            )
        {
            return tokens;
        }
        self.rule_tokens_at_edge(rule)
    }

    /// [`Ruleset::rule_tokens`] of the last rule of a block or of the ruleset, or of a rule
    /// next to one whose start is in the side table.
    #[cold]
    #[inline(never)]
    fn rule_tokens_at_edge(&self, rule: usize) -> &[Token] {
        let start = self.rule_tokens_start(rule);
        let end = if rule + 1 < self.rules.len() {
            self.rule_tokens_start(rule + 1)
        } else {
            self.tokens.len()
        };
        self.tokens.get(start..end).unwrap_or_default()
    }

    /// Number of tokens (words) stored for all rules: a size measure for benchmarks.
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }
}

/// The rules of every chain, grouped by chain: chain `c` has those at `rules_start..` +
/// `rules_len`. When rules come chain by chain in chain order (as iptables-save prints them) the
/// grouping is the identity and is not stored; [`ChainRef::rule_ids`] then writes it out the
/// first time it is asked.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChainRules {
    /// The grouping, unless it is the identity.
    pub(crate) ids: Vec<RuleId>,
    pub(crate) identity: bool,
    /// The identity written out, for `rule_ids`.
    written: OnceLock<Vec<RuleId>>,
}

impl ChainRules {
    /// The rule at `at` in the grouping.
    #[inline]
    pub(crate) fn at(&self, at: usize) -> RuleId {
        if self.identity {
            RuleId(at as u32)
        } else {
            self.ids[at]
        }
    }

    /// The grouping as a slice of `rules` rules.
    fn slice(&self, rules: usize) -> &[RuleId] {
        if self.identity {
            self.written
                .get_or_init(|| (0..rules as u32).map(RuleId).collect())
        } else {
            &self.ids
        }
    }
}

/// The value for `rule` in a side table sorted by rule.
fn side_table(table: &[(RuleId, u32)], rule: usize) -> Option<u32> {
    table
        .binary_search_by_key(&(rule as u32), |&(r, _)| r.0)
        .ok()
        .map(|i| table[i].1)
}

/// A table with its ruleset.
#[derive(Clone, Copy)]
pub struct TableRef<'r, 'a> {
    set: &'r Ruleset<'a>,
    /// The table's id.
    pub id: TableId,
}

impl<'r, 'a> TableRef<'r, 'a> {
    /// The stored table.
    pub fn get(&self) -> &'r Table {
        &self.set.tables[self.id.index()]
    }

    /// The table's name (`nat`, ...).
    pub fn name(&self) -> &'a str {
        let t = self.get();
        if t.implicit {
            t.kind.name()
        } else {
            self.set.text(t.name)
        }
    }

    /// Which table.
    pub fn kind(&self) -> TableKind {
        self.get().kind
    }

    /// The chains of this table, in order of first appearance.
    pub fn chains(&self) -> impl Iterator<Item = ChainRef<'r, 'a>> + 'r {
        let set = self.set;
        self.get().chains.iter().map(move |&id| set.chain(id))
    }

    /// A chain of this table by name.
    pub fn chain(&self, name: &str) -> Option<ChainRef<'r, 'a>> {
        let set = self.set;
        self.get()
            .chain_names
            .get(set.source, name)
            .map(move |id| set.chain(id))
    }

    /// Number of rules in the table.
    pub fn rule_count(&self) -> usize {
        self.chains().map(|c| c.rule_count()).sum()
    }
}

/// A chain with its ruleset.
#[derive(Clone, Copy)]
pub struct ChainRef<'r, 'a> {
    set: &'r Ruleset<'a>,
    /// The chain's id.
    pub id: ChainId,
}

impl<'r, 'a> ChainRef<'r, 'a> {
    /// The stored chain.
    pub fn get(&self) -> &'r Chain {
        &self.set.chains[self.id.index()]
    }

    /// The chain's name.
    pub fn name(&self) -> &'a str {
        self.set.text(self.get().name)
    }

    /// The table it belongs to.
    pub fn table(&self) -> TableRef<'r, 'a> {
        self.set.table(self.get().table)
    }

    /// The policy the declaration sets: `ACCEPT` or `DROP` on a built-in chain, `-` on a user
    /// chain. `None` when the chain is not declared with a policy, and for a built-in chain
    /// declared with `-`: restore input that keeps the kernel's current policy, which the text
    /// does not tell (the word itself stays in [`ChainRef::policy_span`] and is printed back).
    pub fn policy(&self) -> Option<&'a str> {
        let word = self.set.text(self.policy_span()?);
        (!(self.get().builtin && word == "-")).then_some(word)
    }

    /// The declaration's `[packets:bytes]`, brackets included.
    pub fn counters(&self) -> Option<&'a str> {
        self.counters_span().map(|s| self.set.text(s))
    }

    /// The policy word (`ACCEPT`, `DROP`, `-`) of the declaration or of the last `-P`
    /// command, whatever the chain. `-` on a built-in chain keeps the current policy (see
    /// [`ChainRef::policy`]).
    pub fn policy_span(&self) -> Option<Span> {
        match self.get().declared & 0b11 {
            DeclaredSpans::IN_DECLARATION => self.declared_part(|d| d.policy),
            DeclaredSpans::FAR => self.set.far_chain_spans.policies.get(&self.id).copied(),
            _ => None,
        }
    }

    /// The `[packets:bytes]` of the declaration, brackets included.
    pub fn counters_span(&self) -> Option<Span> {
        match self.get().declared >> DeclaredSpans::COUNTERS {
            DeclaredSpans::IN_DECLARATION => self.declared_part(|d| d.counters),
            _ => None,
        }
    }

    /// A part of the declaration line, read again as the parser read it.
    fn declared_part(
        &self,
        part: impl Fn(crate::lexer::ChainDecl<'a>) -> Option<&'a str>,
    ) -> Option<Span> {
        let source = self.set.source;
        let line = source.get(self.get().declaration()?.range())?;
        let (_, decl) = crate::lexer::chain_declaration(line).ok()?;
        let word = part(decl)?;
        let start = word.as_ptr() as usize - source.as_ptr() as usize;
        Some(Span::new(start, start + word.len()))
    }

    /// The ruleset it belongs to.
    pub fn ruleset(&self) -> &'r Ruleset<'a> {
        self.set
    }

    /// The rules of this chain, in order of appearance.
    #[inline]
    pub fn rules(&self) -> impl ExactSizeIterator<Item = RuleRef<'r, 'a>> + 'r {
        let set = self.set;
        set.chain_rule_range(self.id.index())
            .map(move |at| set.rule(set.chain_rules.at(at)))
    }

    /// Number of rules.
    #[inline]
    pub fn rule_count(&self) -> usize {
        self.set.chain_rule_range(self.id.index()).len()
    }

    /// The ids of this chain's rules, in order: random access for walkers (`rulelint trace`).
    pub fn rule_ids(&self) -> &'r [RuleId] {
        &self.set.chain_rules.slice(self.set.rules.len())
            [self.set.chain_rule_range(self.id.index())]
    }
}

/// A rule with its ruleset: the accessors for its words and typed views (see [`crate::views`]).
#[derive(Clone, Copy)]
pub struct RuleRef<'r, 'a> {
    pub(crate) set: &'r Ruleset<'a>,
    /// The rule's id.
    pub id: RuleId,
}

impl<'r, 'a> RuleRef<'r, 'a> {
    /// The stored rule.
    pub fn get(&self) -> &'r Rule {
        &self.set.rules[self.id.index()]
    }

    /// The ruleset it belongs to.
    pub fn ruleset(&self) -> &'r Ruleset<'a> {
        self.set
    }

    /// The chain it belongs to.
    pub fn chain(&self) -> ChainRef<'r, 'a> {
        self.set.chain(self.get().chain)
    }

    /// The rule's text as written, from its verb (may contain wrapped lines).
    pub fn text(&self) -> &'a str {
        self.set.text(self.get().span)
    }

    /// The rule's words after `-A CHAIN`.
    #[inline]
    pub fn tokens(&self) -> Tokens<'r> {
        self.set.rule_token_list(self.id.index())
    }

    /// The rule number of `-I CHAIN n`, `-R CHAIN n`, `-D CHAIN n`; 0 when absent.
    pub fn position(&self) -> u32 {
        if self.get().flags & Rule::HAS_POSITION == 0 {
            return 0;
        }
        side_table(&self.set.positions, self.id.index()).unwrap_or(0)
    }

    /// The `[packets:bytes]` prefix written by `iptables-save -c`, brackets included: read back
    /// from the text just before the verb.
    pub fn counters_span(&self) -> Option<Span> {
        let r = self.get();
        if r.flags & Rule::HAS_COUNTERS == 0 {
            return None;
        }
        let bytes = self.set.source.as_bytes();
        let before = &bytes[..r.span.start as usize];
        let close = before.iter().rposition(|&b| b != b' ' && b != b'\t')?;
        let open = before[..close].iter().rposition(|&b| b == b'[')?;
        Some(Span::new(open, close + 1))
    }

    /// The text of a token of this ruleset: for `Module` and `Target` tokens, the name alone.
    pub fn token_text(&self, token: &Token) -> &'a str {
        token_text(self.set.source, token)
    }

    /// The target, if the rule has one.
    pub fn target(&self) -> Option<TargetRef<'r, 'a>> {
        let r = self.get();
        if !r.has_target() {
            return None;
        }
        let i = self.id.index();
        let (index, token) = if r.flags & Rule::FAR_TARGET != 0 {
            let at = self.set.rule_target(i)?;
            let token = *self.set.tokens.get(at as usize)?;
            (
                (at as usize).checked_sub(self.set.rule_tokens_start(i))?,
                token,
            )
        } else {
            let stored = self.set.rule_tokens(i);
            if stored.is_empty() {
                (0, lone_target_token(self.set.source, r.span)?)
            } else {
                let index = self.set.target_in(i, stored)?;
                (index, stored[index])
            }
        };
        Some(TargetRef {
            rule: *self,
            index,
            token,
        })
    }

    /// What the rule's target names ([`TargetClass`]), without reading the target: as
    /// `TargetClass::of_name` of [`RuleRef::target`]'s name, `TargetClass::None` without one.
    #[inline]
    pub fn target_class(&self) -> TargetClass {
        self.set
            .target_classes
            .get(self.id.index())
            .copied()
            .unwrap_or(TargetClass::None)
    }

    /// Whether the target is a `-g` goto, without reading the target.
    #[inline]
    pub fn is_goto(&self) -> bool {
        let r = self.get();
        r.has_target() && r.flags & Rule::GOTO != 0
    }

    /// The chain this rule jumps or goes to: its target, when that names a chain of the rule's
    /// table (not an extension such as `DNAT`).
    pub fn target_chain(&self) -> Option<ChainId> {
        let c = self.get().target_chain;
        (c != Rule::NO_CHAIN).then_some(ChainId(c))
    }

    /// The matches, in order: each basic option (`-s`, `-p`, ...) is a match of its own, each
    /// `-m NAME` a match with the options that follow it.
    pub fn matches(&self) -> MatchIter<'r, 'a> {
        let tokens = self.tokens();
        let end = self.target().map_or(tokens.len(), |t| t.index);
        MatchIter {
            rule: *self,
            // A produced lone target has no words before it: its stored list is empty.
            tokens: tokens.stored().get(..end).unwrap_or_default(),
            pos: 0,
        }
    }

    /// True when the rule has no match that restricts traffic: no basic option and no module
    /// other than `comment`. Such a rule's target applies to every packet reaching it.
    pub fn is_unconditional(&self) -> bool {
        self.matches().all(|m| m.module() == Some("comment"))
    }
}

/// The text of a token: for `Module` and `Target` tokens, the name after `-m`/`-j`/`-g`.
pub(crate) fn token_text<'a>(source: &'a str, token: &Token) -> &'a str {
    &source[token.name_span().range()]
}

/// The `-j NAME` / `-g NAME` token that ends the rule text under `span`, read back from the
/// text: the last word is the name, the word before it the verb. The parser stores no token
/// for a rule whose only word is its jump when this gives exactly the token it made.
pub(crate) fn lone_target_token(source: &str, span: Span) -> Option<Token> {
    let text = source.as_bytes().get(span.range())?;
    let blank = |b: u8| b == b' ' || b == b'\t';
    // Backwards: the name, the blanks before it, the verb.
    let mut at = text.len();
    while at > 0 && !blank(text[at - 1]) {
        at -= 1;
    }
    let name_start = at;
    while at > 0 && blank(text[at - 1]) {
        at -= 1;
    }
    let verb_end = at;
    while at > 0 && !blank(text[at - 1]) {
        at -= 1;
    }
    let verb_start = at;
    if name_start == 0 || verb_start == verb_end {
        return None;
    }
    let flags = match &text[verb_start..verb_end] {
        b"-j" | b"--jump" => 0,
        b"-g" | b"--goto" => Token::GOTO,
        _ => return None,
    };
    Some(Token {
        start: span.start + verb_start as u32,
        len: u16::try_from(text.len() - verb_start).ok()?,
        bits: TokenKind::Target as u8 | flags,
        name_offset: u8::try_from(name_start - verb_start).ok()?,
    })
}

/// A rule's tokens: a slice of the shared token list, or the one token of a rule whose only
/// word is its jump, which is not stored (`Ruleset::lone_target`). Dereferences to a
/// slice; iterating it by value gives the tokens by value.
#[derive(Clone, Copy, Debug)]
pub struct Tokens<'r> {
    stored: &'r [Token],
    lone: Option<Token>,
}

impl<'r> Tokens<'r> {
    /// The stored tokens: all of them, or none for a rule whose lone target is produced.
    fn stored(&self) -> &'r [Token] {
        self.stored
    }
}

impl std::ops::Deref for Tokens<'_> {
    type Target = [Token];

    #[inline]
    fn deref(&self) -> &[Token] {
        match &self.lone {
            Some(token) => std::slice::from_ref(token),
            None => self.stored,
        }
    }
}

impl<'r> IntoIterator for Tokens<'r> {
    type Item = Token;
    type IntoIter = std::iter::Chain<
        std::iter::Copied<std::slice::Iter<'r, Token>>,
        std::option::IntoIter<Token>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.stored.iter().copied().chain(self.lone)
    }
}

impl<'t> IntoIterator for &'t Tokens<'_> {
    type Item = &'t Token;
    type IntoIter = std::slice::Iter<'t, Token>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A rule's target with its options.
#[derive(Clone, Copy)]
pub struct TargetRef<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    index: usize,
    /// The `-j`/`-g` token, read once: a lone target's is produced from the text.
    token: Token,
}

impl<'r, 'a> TargetRef<'r, 'a> {
    /// The target's name: a chain, or an extension such as `DNAT`.
    pub fn name(&self) -> &'a str {
        self.rule.token_text(&self.token)
    }

    /// `-g` rather than `-j`.
    pub fn is_goto(&self) -> bool {
        self.token.is_goto()
    }

    /// The `-j NAME` / `-g NAME` token.
    pub fn token(&self) -> Token {
        self.token
    }

    /// The target's options (`--to-destination 10.0.0.1:80`), grouped with their arguments.
    pub fn options(&self) -> OptionIter<'r, 'a> {
        OptionIter {
            rule: self.rule,
            // A produced lone target has no options: its stored list is empty.
            tokens: self
                .rule
                .tokens()
                .stored()
                .get(self.index + 1..)
                .unwrap_or_default(),
            pos: 0,
        }
    }

    /// The first argument of the target option `name`, e.g. `--to-destination`.
    pub fn option_arg(&self, name: &str) -> Option<&'a str> {
        self.options()
            .find(|o| o.name() == name)
            .and_then(|o| o.args().next())
    }

    /// The span from `-j` to the last target option.
    pub fn span(&self) -> Span {
        let tokens = self.rule.tokens();
        self.token
            .span()
            .cover(tokens.last().map_or(Span::default(), |t| t.span()))
    }
}

/// Iterates the matches of a rule.
pub struct MatchIter<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    tokens: &'r [Token],
    pos: usize,
}

impl<'r, 'a> Iterator for MatchIter<'r, 'a> {
    type Item = MatchRef<'r, 'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.pos;
        let first = self.tokens.get(start)?;
        let mut end = start + 1;
        match first.kind() {
            TokenKind::Module => {
                // A module owns the non-basic options that follow, up to the next module.
                while let Some(t) = self.tokens.get(end) {
                    match t.kind() {
                        TokenKind::Module | TokenKind::Target => break,
                        TokenKind::Option if t.is_basic() => break,
                        _ => end += 1,
                    }
                }
            }
            _ => {
                // A basic option (or an odd word) with its arguments.
                while let Some(t) = self.tokens.get(end) {
                    if t.kind() != TokenKind::Arg {
                        break;
                    }
                    end += 1;
                }
            }
        }
        self.pos = end;
        Some(MatchRef {
            rule: self.rule,
            tokens: &self.tokens[start..end],
        })
    }
}

/// One match of a rule: a basic option, or `-m NAME` with its options.
#[derive(Clone, Copy)]
pub struct MatchRef<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    tokens: &'r [Token],
}

impl<'r, 'a> MatchRef<'r, 'a> {
    /// The module name for `-m NAME`; `None` for a basic option.
    pub fn module(&self) -> Option<&'a str> {
        let first = &self.tokens[0];
        (first.kind() == TokenKind::Module).then(|| self.rule.token_text(first))
    }

    /// The match's tokens.
    pub fn tokens(&self) -> &'r [Token] {
        self.tokens
    }

    /// From the first to the last token.
    pub fn span(&self) -> Span {
        self.tokens[0]
            .span()
            .cover(self.tokens[self.tokens.len() - 1].span())
    }

    /// The options with their arguments (for a basic match: the one option).
    pub fn options(&self) -> OptionIter<'r, 'a> {
        let skip = usize::from(self.tokens[0].kind() == TokenKind::Module);
        OptionIter {
            rule: self.rule,
            tokens: &self.tokens[skip..],
            pos: 0,
        }
    }
}

/// Iterates options with their arguments.
pub struct OptionIter<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    tokens: &'r [Token],
    pos: usize,
}

impl<'r, 'a> Iterator for OptionIter<'r, 'a> {
    type Item = OptionRef<'r, 'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.pos;
        self.tokens.get(start)?;
        let mut end = start + 1;
        while self
            .tokens
            .get(end)
            .is_some_and(|t| t.kind() == TokenKind::Arg)
        {
            end += 1;
        }
        self.pos = end;
        Some(OptionRef {
            rule: self.rule,
            tokens: &self.tokens[start..end],
        })
    }
}

/// An option (`--dport`) with its arguments (`80`).
#[derive(Clone, Copy)]
pub struct OptionRef<'r, 'a> {
    rule: RuleRef<'r, 'a>,
    tokens: &'r [Token],
}

impl<'r, 'a> OptionRef<'r, 'a> {
    /// The option's name as written (`-s`, `--dport`). For a stray argument with no option
    /// before it, the argument itself.
    pub fn name(&self) -> &'a str {
        self.rule.token_text(&self.tokens[0])
    }

    /// The option token (or `Unsupported` / stray `Arg` token).
    pub fn token(&self) -> &'r Token {
        &self.tokens[0]
    }

    /// Negated with `!`.
    pub fn negated(&self) -> bool {
        self.tokens[0].negated()
    }

    /// The arguments as written (quotes kept). For a stray argument: nothing.
    pub fn args(&self) -> impl Iterator<Item = &'a str> + 'r {
        let rule = self.rule;
        let skip = usize::from(self.tokens[0].kind() != TokenKind::Arg);
        let tokens = if skip == 0 {
            &self.tokens[..0]
        } else {
            &self.tokens[1..]
        };
        tokens.iter().map(move |t| rule.token_text(t))
    }

    /// The argument tokens.
    pub fn arg_tokens(&self) -> &'r [Token] {
        if self.tokens[0].kind() == TokenKind::Arg {
            &self.tokens[..0]
        } else {
            &self.tokens[1..]
        }
    }

    /// From the option to its last argument.
    pub fn span(&self) -> Span {
        self.tokens[0]
            .span()
            .cover(self.tokens[self.tokens.len() - 1].span())
    }
}
