//! The syntax model of `nft list ruleset` text: tables, chains, sets and maps, rules as
//! statements, expressions. Every name and literal is a slice of the original text, so its
//! span is known ([`Ruleset::span_of`]); blocks, rules, statements and elements carry spans.
//!
//! Ids index the flat vectors of [`Ruleset`]: `ChainId(i)` is `ruleset.chains[i]`.

use rulelint_parser::Span;
use serde::Serialize;

macro_rules! id {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub struct $name(pub u32);
        impl $name {
            /// The index into the ruleset's vector.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(TableId, "A table: index into [`Ruleset::tables`].");
id!(ChainId, "A chain: index into [`Ruleset::chains`].");
id!(SetId, "A named set or map: index into [`Ruleset::sets`].");
id!(RuleId, "A rule: index into [`Ruleset::rules`].");

/// A table's address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// `ip` (IPv4; the default when a table names no family).
    Ip,
    /// `ip6`.
    Ip6,
    /// `inet` (IPv4 and IPv6).
    Inet,
    /// `arp`.
    Arp,
    /// `bridge`.
    Bridge,
    /// `netdev`.
    Netdev,
}

impl Family {
    /// The family named `word`.
    pub fn from_word(word: &str) -> Option<Family> {
        Some(match word {
            "ip" => Family::Ip,
            "ip6" => Family::Ip6,
            "inet" => Family::Inet,
            "arp" => Family::Arp,
            "bridge" => Family::Bridge,
            "netdev" => Family::Netdev,
            _ => return None,
        })
    }

    /// The keyword nft prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Ip => "ip",
            Family::Ip6 => "ip6",
            Family::Inet => "inet",
            Family::Arp => "arp",
            Family::Bridge => "bridge",
            Family::Netdev => "netdev",
        }
    }
}

/// The value of a standard priority name, as nft resolves it for `family` (`None`: unknown
/// family, read like `inet`).
///
/// ```
/// use rulelint_nft::{Family, standard_priority};
/// assert_eq!(standard_priority(Some(Family::Ip), "dstnat"), Some(-100));
/// assert_eq!(standard_priority(Some(Family::Bridge), "dstnat"), Some(-300));
/// assert_eq!(standard_priority(None, "frobnicate"), None);
/// ```
pub fn standard_priority(family: Option<Family>, name: &str) -> Option<i32> {
    if family == Some(Family::Bridge) {
        return match name {
            "dstnat" => Some(-300),
            "filter" => Some(-200),
            "out" => Some(100),
            "srcnat" => Some(300),
            _ => None,
        };
    }
    match name {
        "raw" => Some(-300),
        "mangle" => Some(-150),
        "dstnat" => Some(-100),
        "filter" => Some(0),
        "security" => Some(50),
        "srcnat" => Some(100),
        _ => None,
    }
}

/// Everything read from one text. Tables, chains, sets and rules are in text order.
///
/// Serialized as if each rule held its statements (`rules[i].statements`), which is what
/// [`Ruleset::content`] compares.
#[derive(Clone, Debug, Default)]
pub struct Ruleset<'a> {
    /// The text the ruleset was read from.
    pub text: &'a str,
    /// Tables, in text order (a headerless fragment is one table with `family: None`).
    pub tables: Vec<Table<'a>>,
    /// Chains of every table.
    pub chains: Vec<Chain<'a>>,
    /// Named sets and maps of every table.
    pub sets: Vec<Set<'a>>,
    /// Rules of every chain.
    pub rules: Vec<Rule<'a>>,
    /// The statements of every rule, in the order the rules were read, in chunks of at least
    /// [`STATEMENT_CHUNK`]: a rule's statements are [`Rule::statements`] of one chunk
    /// ([`Ruleset::statements_of`]). No allocation per rule, lints walk the statements in
    /// memory order, and no chunk is ever reallocated (one growing vector copied and faulted in
    /// its whole length at each doubling, which cost more than the allocations it saved).
    pub(crate) statements: Vec<StatementChunk<'a>>,
}

/// One chunk of a [`Ruleset`]'s statements, which knows which of them own heap memory (a
/// vector or a box somewhere inside; a twentieth on a kube-proxy node): dropping the chunk runs
/// only their drop glue rather than reading every statement (1.7 ms of a 5,000-Service node's
/// 20 ms check). Appended to only through its methods, which keep that list.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatementChunk<'a> {
    statements: Vec<Statement<'a>>,
    /// Positions of the statements that may own heap memory, ascending.
    owning: Vec<u32>,
}

impl<'a> StatementChunk<'a> {
    /// A chunk holding `statements` (its capacity kept).
    pub(crate) fn from_vec(statements: Vec<Statement<'a>>) -> StatementChunk<'a> {
        let mut chunk = StatementChunk {
            statements: Vec::new(),
            owning: Vec::new(),
        };
        chunk.append_with(|c| *c = statements);
        chunk
    }

    pub(crate) fn with_capacity(capacity: usize) -> StatementChunk<'a> {
        StatementChunk::from_vec(Vec::with_capacity(capacity))
    }

    /// Statements the chunk holds without reallocating.
    pub(crate) fn capacity(&self) -> usize {
        self.statements.capacity()
    }

    /// Room left before the chunk would reallocate.
    pub(crate) fn spare(&self) -> usize {
        self.statements.capacity() - self.statements.len()
    }

    /// Lets `append` push statements at the end, and notes which of the new ones own memory.
    pub(crate) fn append_with(&mut self, append: impl FnOnce(&mut Vec<Statement<'a>>)) {
        let start = self.statements.len();
        append(&mut self.statements);
        let added = self.statements.get(start..).unwrap_or(&[]);
        for (i, statement) in added.iter().enumerate() {
            if may_own_heap(&statement.kind) {
                self.owning.push((start + i) as u32);
            }
        }
    }
}

impl<'a> std::ops::Deref for StatementChunk<'a> {
    type Target = [Statement<'a>];

    fn deref(&self) -> &[Statement<'a>] {
        &self.statements
    }
}

impl Drop for StatementChunk<'_> {
    fn drop(&mut self) {
        let len = self.statements.len();
        let listed_once_each = self.owning.windows(2).all(|w| w[0] < w[1])
            && self.owning.last().is_none_or(|&i| (i as usize) < len);
        if !listed_once_each {
            // Never expected: the vector's own drop then drops every statement.
            return;
        }
        // SAFETY: the length is set to 0 first, so the vector's drop drops no statement; the
        // listed positions are below the old length (initialized statements) and distinct, so
        // each is dropped once. The others are not dropped: they hold no heap memory
        // (`may_own_heap`), and were that ever wrong they would leak, which is safe.
        unsafe {
            self.statements.set_len(0);
            let base = self.statements.as_mut_ptr();
            for &i in &self.owning {
                std::ptr::drop_in_place(base.add(i as usize));
            }
        }
    }
}

/// Whether a statement may hold a vector or a box: false only for shapes made of `&str`s and
/// plain values alone (listed one by one, so that a new variant counts as owning).
fn may_own_heap(kind: &Stmt<'_>) -> bool {
    let flat = |e: &Expr<'_>| {
        matches!(
            e,
            Expr::Literal(_)
                | Expr::SetRef(_)
                | Expr::Payload { .. }
                | Expr::Meta { .. }
                | Expr::Ct { .. }
        )
    };
    match kind {
        Stmt::Match { left, right, .. } => !(flat(left) && flat(right)),
        Stmt::Vmap { key, map } => !(flat(key) && flat(map)),
        Stmt::Assign { left, value } => !(flat(left) && flat(value)),
        // A verdict is a kind and an optional `&str`; a comment a `&str`.
        Stmt::Verdict(Verdict { kind: _, target: _ }) | Stmt::Comment(_) => false,
        Stmt::Nat(Nat { kind: _, to, words }) => {
            words.is_some() || to.as_ref().is_some_and(|e| !flat(e))
        }
        _ => true,
    }
}

impl Serialize for Ruleset<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        /// A rule with its statements, as the model read before the statements moved out.
        #[derive(Serialize)]
        struct RuleView<'r, 'a> {
            chain: ChainId,
            span: Span,
            handle: Option<u64>,
            statements: &'r [Statement<'a>],
        }
        struct Rules<'r, 'a>(&'r Ruleset<'a>);
        impl Serialize for Rules<'_, '_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.rules.iter().map(|r| RuleView {
                    chain: r.chain,
                    span: r.span,
                    handle: r.handle,
                    statements: self.0.statements_of(r),
                }))
            }
        }
        let mut st = serializer.serialize_struct("Ruleset", 4)?;
        st.serialize_field("tables", &self.tables)?;
        st.serialize_field("chains", &self.chains)?;
        st.serialize_field("sets", &self.sets)?;
        st.serialize_field("rules", &Rules(self))?;
        st.end()
    }
}

/// A `table FAMILY NAME { ... }` block, or the implicit table of headerless blocks.
#[derive(Clone, Debug, Serialize)]
pub struct Table<'a> {
    /// The family; `None` for a headerless fragment or an unknown family word.
    pub family: Option<Family>,
    /// The family word as written (`None` when the header omits it, or for a fragment).
    pub family_word: Option<&'a str>,
    /// The name; `None` for a headerless fragment.
    pub name: Option<&'a str>,
    /// From the `table` keyword to the closing `}` (or the last block read).
    pub span: Span,
    /// `# handle N` on the header line.
    pub handle: Option<u64>,
    /// `comment "..."` (without quotes).
    pub comment: Option<&'a str>,
    /// `flags a,b`.
    pub flags: Vec<&'a str>,
    /// Chains, in text order.
    pub chains: Vec<ChainId>,
    /// Sets and maps, in text order.
    pub sets: Vec<SetId>,
    /// Named objects kept as text (`flowtable`, `counter`, `quota`, `ct helper`, `limit`, ...).
    pub objects: Vec<Object<'a>>,
    /// The closing `}` was read (false: a truncated paste, or a headerless fragment).
    pub closed: bool,
}

impl Table<'_> {
    /// True for the table of blocks pasted without their `table` line.
    pub fn is_headerless(&self) -> bool {
        self.name.is_none()
    }
}

/// A named object the model keeps as text: `flowtable f { ... }`, `counter c { ... }`, ...
#[derive(Clone, Debug, Serialize)]
pub struct Object<'a> {
    /// The keywords before the name (`flowtable`, `ct helper`).
    pub kind: &'a str,
    /// The name.
    pub name: &'a str,
    /// The whole block, from its first keyword to its `}`.
    pub text: &'a str,
}

/// A `chain NAME { ... }` block.
#[derive(Clone, Debug, Serialize)]
pub struct Chain<'a> {
    /// The table holding the chain.
    pub table: TableId,
    /// The name (unquoted).
    pub name: &'a str,
    /// From the `chain` keyword to the closing `}`.
    pub span: Span,
    /// `# handle N` on the header line.
    pub handle: Option<u64>,
    /// `comment "..."` inside the chain (without quotes).
    pub comment: Option<&'a str>,
    /// `type T hook H priority P; policy X;` of a base chain (boxed: few chains are base
    /// chains, and a chain takes at most 96 bytes instead of 184, which is most of the model of a
    /// listing with a million chains).
    pub base: Option<Box<BaseChain<'a>>>,
    /// Rules, in order.
    pub rules: RuleList,
    /// The closing `}` was read.
    pub closed: bool,
}

/// A chain's rules, in order: reads as a `[RuleId]` slice.
///
/// The text parser reads a chain's rules one after the other, so every chain's list is a range
/// of one vector of ids shared by the ruleset (`Ruleset::share_rule_lists`) rather than an
/// allocation of its own (one per chain: a fifth of the parse's `malloc` calls on a kube-proxy
/// node). The JSON and transaction readers, which may add a rule to any chain, build owned
/// lists.
#[derive(Clone, Default)]
pub struct RuleList(RuleListRepr);

#[derive(Clone)]
enum RuleListRepr {
    Owned(Vec<RuleId>),
    /// Rules `start..end` of `ids`; no `ids` yet while the text is being read.
    Shared {
        ids: Option<std::sync::Arc<Vec<RuleId>>>,
        start: u32,
        end: u32,
    },
}

impl Default for RuleListRepr {
    fn default() -> Self {
        RuleListRepr::Owned(Vec::new())
    }
}

impl RuleList {
    /// The rules `start..end` of the ruleset, read one after the other; empty until
    /// [`Ruleset::share_rule_lists`].
    pub(crate) fn run(start: usize, end: usize) -> RuleList {
        if start == end {
            return RuleList::default();
        }
        RuleList(RuleListRepr::Shared {
            ids: None,
            start: start as u32,
            end: end as u32,
        })
    }

    /// Shifts the rule ids by `by` (when a ruleset is appended to one with `by` rules).
    pub(crate) fn shift(&mut self, by: u32) {
        match &mut self.0 {
            RuleListRepr::Owned(ids) => ids.iter_mut().for_each(|r| r.0 += by),
            RuleListRepr::Shared { start, end, .. } => {
                *start += by;
                *end += by;
            }
        }
    }

    /// The list as a vector to change (a shared range is copied out first).
    pub fn to_mut(&mut self) -> &mut Vec<RuleId> {
        match self.0 {
            RuleListRepr::Owned(ref mut ids) => ids,
            RuleListRepr::Shared { .. } => {
                self.0 = RuleListRepr::Owned(self.to_vec());
                // Owned now: the call returns at the first arm.
                self.to_mut()
            }
        }
    }
}

impl std::ops::Deref for RuleList {
    type Target = [RuleId];
    #[inline]
    fn deref(&self) -> &[RuleId] {
        match &self.0 {
            RuleListRepr::Owned(ids) => ids,
            RuleListRepr::Shared { ids, start, end } => ids
                .as_deref()
                .and_then(|ids| ids.get(*start as usize..*end as usize))
                .unwrap_or(&[]),
        }
    }
}

impl From<Vec<RuleId>> for RuleList {
    fn from(ids: Vec<RuleId>) -> Self {
        RuleList(RuleListRepr::Owned(ids))
    }
}

impl<'l> IntoIterator for &'l RuleList {
    type Item = &'l RuleId;
    type IntoIter = std::slice::Iter<'l, RuleId>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for RuleList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Serialize for RuleList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

/// What makes a chain a base chain: where packets enter it.
#[derive(Clone, Debug, Serialize)]
pub struct BaseChain<'a> {
    /// `filter`, `nat` or `route`.
    pub kind: &'a str,
    /// `prerouting`, `input`, `forward`, `output`, `postrouting`, `ingress`, `egress`.
    pub hook: &'a str,
    /// `device "eth0"` / `devices = { ... }` as written.
    pub device: Option<&'a str>,
    /// The priority as written and its value.
    pub priority: Priority<'a>,
    /// `policy accept|drop`.
    pub policy: Option<&'a str>,
    /// The declaration line(s).
    pub span: Span,
}

/// A base chain's priority: `dstnat - 10`, `filter`, `-110`.
#[derive(Clone, Debug, Serialize)]
pub struct Priority<'a> {
    /// As written (`dstnat - 10`).
    pub text: &'a str,
    /// The number nft resolves it to for the family (`dstnat - 10` in `ip`: -110); `None` when
    /// the name is unknown (`RL157`).
    pub value: Option<i32>,
}

/// A `set NAME { ... }` or `map NAME { ... }` block.
#[derive(Clone, Debug, Serialize)]
pub struct Set<'a> {
    /// The table holding it.
    pub table: TableId,
    /// `map` (elements carry values) rather than `set`.
    pub is_map: bool,
    /// The name (unquoted).
    pub name: &'a str,
    /// From the keyword to the closing `}`.
    pub span: Span,
    /// `# handle N` on the header line.
    pub handle: Option<u64>,
    /// `type ...` or `typeof ...`.
    pub key_type: Option<SetType<'a>>,
    /// `flags a,b`.
    pub flags: Vec<&'a str>,
    /// `timeout 3h`.
    pub timeout: Option<&'a str>,
    /// `size 65535`.
    pub size: Option<&'a str>,
    /// `comment "..."` (without quotes).
    pub comment: Option<&'a str>,
    /// Other properties (`policy memory`, `gc-interval 1s`, `counter`, `auto-merge`) as words.
    pub properties: Vec<Vec<&'a str>>,
    /// `elements = { ... }`.
    pub elements: Vec<Element<'a>>,
    /// The closing `}` was read.
    pub closed: bool,
}

impl Set<'_> {
    /// A map whose values are verdicts (`: verdict`).
    pub fn is_verdict_map(&self) -> bool {
        self.key_type
            .as_ref()
            .is_some_and(|t| t.data.as_deref() == Some(&["verdict"][..]))
    }
}

/// `type ipv4_addr . inet_proto . inet_service : verdict`, or `typeof ip daddr . tcp dport`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SetType<'a> {
    /// Written with `typeof` (parts are expressions) rather than `type`.
    pub typeof_: bool,
    /// The concatenated key parts (`ipv4_addr`, `inet_proto`, ...).
    pub key: Vec<&'a str>,
    /// A map's value parts (`verdict`).
    pub data: Option<Vec<&'a str>>,
}

/// One element of a set or map, named or anonymous.
#[derive(Clone, Debug, Serialize)]
pub struct Element<'a> {
    /// The key: a literal, prefix, range or concatenation (or, in `update @s { ip saddr }`, an
    /// expression).
    pub key: Expr<'a>,
    /// Options written after the key (`timeout 3h`, `expires 2h59m`, `counter ...`) as words
    /// (a boxed slice: kube-proxy's elements have none, and every element is 8 bytes smaller).
    pub options: Box<[&'a str]>,
    /// `comment "..."` (without quotes).
    pub comment: Option<&'a str>,
    /// A map element's value.
    pub value: Option<Value<'a>>,
    /// The element's text.
    pub span: Span,
}

/// A map element's value.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Value<'a> {
    /// A verdict (verdict maps).
    Verdict(Verdict<'a>),
    /// Data (`10.180.0.1 . 80`; boxed: kube-proxy's maps are verdict maps, and an element whose
    /// value is a verdict is 16 bytes smaller).
    Data(Box<Expr<'a>>),
}

/// A verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict<'a> {
    /// Which.
    pub kind: VerdictKind,
    /// The chain of `jump`/`goto` (`None`: missing, `RL162`).
    pub target: Option<&'a str>,
}

/// The kinds of verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictKind {
    /// `accept`.
    Accept,
    /// `drop`.
    Drop,
    /// `continue`.
    Continue,
    /// `return`.
    Return,
    /// `jump CHAIN`.
    Jump,
    /// `goto CHAIN`.
    Goto,
}

impl VerdictKind {
    /// The verdict named `word`.
    pub fn from_word(word: &str) -> Option<VerdictKind> {
        Some(match word {
            "accept" => VerdictKind::Accept,
            "drop" => VerdictKind::Drop,
            "continue" => VerdictKind::Continue,
            "return" => VerdictKind::Return,
            "jump" => VerdictKind::Jump,
            "goto" => VerdictKind::Goto,
            _ => return None,
        })
    }

    /// The keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Accept => "accept",
            VerdictKind::Drop => "drop",
            VerdictKind::Continue => "continue",
            VerdictKind::Return => "return",
            VerdictKind::Jump => "jump",
            VerdictKind::Goto => "goto",
        }
    }

    /// `jump` or `goto`: names a chain.
    pub fn takes_chain(self) -> bool {
        matches!(self, VerdictKind::Jump | VerdictKind::Goto)
    }
}

/// An expression: 24 bytes, so that a statement is 72 and an element 88 (lints walk every
/// one; a kube-proxy node holds about 100,000 of each kind). Variants hold one `&str` at most
/// beside byte-sized fields; lists are boxed slices and rare shapes are boxed.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr<'a> {
    /// A constant as written: `10.0.0.0/8`, `tcp`, `80-90`, `0x00004000`, `"eth0"` (quotes kept),
    /// `10.180.0.1:80`.
    Literal(&'a str),
    /// A flag list: `established,related`.
    List(Box<[&'a str]>),
    /// `@name`: a named set or map (name without `@`).
    SetRef(&'a str),
    /// `{ ... }`: an anonymous set or map.
    Set(Box<[Element<'a>]>),
    /// `ip daddr`, `th dport`, `tcp flags`, ...
    Payload {
        /// `ip`, `ip6`, `tcp`, `udp`, `th`, `ether`, ...
        proto: Proto,
        /// `daddr`, `dport`, ...
        field: &'a str,
    },
    /// `meta l4proto`, or bare `mark`, `iifname`, ...
    Meta {
        /// The key.
        key: &'a str,
        /// Written without `meta`.
        bare: bool,
    },
    /// `ct state`, `ct original saddr`.
    Ct {
        /// `original` / `reply`.
        dir: Option<CtDir>,
        /// The key.
        key: &'a str,
    },
    /// `fib daddr type`, `fib saddr . iif oif` (out of line: rare, and it would make every
    /// expression larger).
    Fib(Box<Fib<'a>>),
    /// `numgen random mod 2 [offset N]` (out of line: one per Service at most).
    Numgen(Box<Numgen<'a>>),
    /// `a & b`, `a | b`, `a ^ b`, `a << b`, `a >> b` (out of line: a few per node).
    Binop(Box<Binop<'a>>),
    /// `a . b . c`.
    Concat(Box<[Expr<'a>]>),
    /// `KEY map MAP`: a lookup whose value is data (`numgen random mod 2 map { 0 : a, 1 : b }`).
    Map {
        /// The key.
        key: Box<Expr<'a>>,
        /// The map (`@name` or `{ ... }`).
        map: Box<Expr<'a>>,
    },
}

/// `a & b`: [`Expr::Binop`].
#[derive(Clone, Debug, Serialize)]
pub struct Binop<'a> {
    /// The operator as written.
    pub op: &'a str,
    /// Left side.
    pub left: Expr<'a>,
    /// Right side.
    pub right: Expr<'a>,
}

/// Declares a keyword enum: variants, their words, `from_word`, `as_str`, serialized as the word.
macro_rules! keyword_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// The one named `word`.
            pub fn from_word(word: &str) -> Option<$name> {
                Some(match word {
                    $($word => $name::$variant,)*
                    _ => return None,
                })
            }

            /// The keyword.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}

keyword_enum! {
    /// The protocols whose fields are payload selectors (`ip daddr`, `th dport`): a byte rather
    /// than a `&str`, which keeps [`Expr`] at 24 bytes. A word not listed is not a payload
    /// selector, in the text and in JSON alike.
    Proto {
        /// `ip`.
        Ip = "ip",
        /// `ip6`.
        Ip6 = "ip6",
        /// `tcp`.
        Tcp = "tcp",
        /// `udp`.
        Udp = "udp",
        /// `udplite`.
        Udplite = "udplite",
        /// `sctp`.
        Sctp = "sctp",
        /// `dccp`.
        Dccp = "dccp",
        /// `th`.
        Th = "th",
        /// `icmp`.
        Icmp = "icmp",
        /// `icmpv6`.
        Icmpv6 = "icmpv6",
        /// `igmp`.
        Igmp = "igmp",
        /// `ether`.
        Ether = "ether",
        /// `vlan`.
        Vlan = "vlan",
        /// `arp`.
        Arp = "arp",
        /// `ah`.
        Ah = "ah",
        /// `esp`.
        Esp = "esp",
        /// `comp`.
        Comp = "comp",
        /// `dst`.
        Dst = "dst",
        /// `hbh`.
        Hbh = "hbh",
        /// `frag`.
        Frag = "frag",
        /// `rt`.
        Rt = "rt",
        /// `mh`.
        Mh = "mh",
        /// `rt0`.
        Rt0 = "rt0",
        /// `rt2`.
        Rt2 = "rt2",
        /// `srh`.
        Srh = "srh",
        /// `gre`.
        Gre = "gre",
        /// `geneve`.
        Geneve = "geneve",
        /// `vxlan`.
        Vxlan = "vxlan",
        /// `ipip`.
        Ipip = "ipip",
    }
}

keyword_enum! {
    /// The direction of a `ct original saddr` / `ct reply daddr` expression.
    CtDir {
        /// `original`.
        Original = "original",
        /// `reply`.
        Reply = "reply",
    }
}

/// `fib daddr type`: [`Expr::Fib`].
#[derive(Clone, Debug, Serialize)]
pub struct Fib<'a> {
    /// `saddr`, `daddr`, `mark`, `iif`, `oif`.
    pub flags: Vec<&'a str>,
    /// `type`, `oif`, `oifname`.
    pub result: &'a str,
}

/// `numgen random mod 2 [offset N]`: [`Expr::Numgen`].
#[derive(Clone, Debug, Serialize)]
pub struct Numgen<'a> {
    /// `random` / `inc`.
    pub mode: &'a str,
    /// The modulus.
    pub modulus: &'a str,
    /// `offset N`.
    pub offset: Option<&'a str>,
}

/// A rule: statements in order ([`Ruleset::statements_of`]).
#[derive(Clone, Debug)]
pub struct Rule<'a> {
    /// The chain holding it.
    pub chain: ChainId,
    /// The rule's text (without its `# handle` comment).
    pub span: Span,
    /// `# handle N`.
    pub handle: Option<u64>,
    /// Its statements ([`Ruleset::statements_of`]).
    pub statements: StatementRange,
    /// A rule borrows nothing itself now; the lifetime stays so that callers' types stay.
    pub(crate) _text: std::marker::PhantomData<&'a str>,
}

/// Statements per chunk of the ruleset's statement store (a rule with more has a chunk of its own):
/// about 74 KB, under glibc's threshold for mapping an allocation of its own.
pub const STATEMENT_CHUNK: usize = 512;

/// The first chunk's capacity where the parser did not size it from the text.
const FIRST_STATEMENT_CHUNK: usize = 4;

/// One rule's statements: a range of one chunk of the ruleset's statements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatementRange {
    /// The chunk.
    pub chunk: u32,
    /// The first statement's index.
    pub start: u32,
    /// One past the last statement's index.
    pub end: u32,
}

impl StatementRange {
    /// How many statements.
    pub fn len(self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    /// Whether there is none.
    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }
}

/// A statement and its text.
#[derive(Clone, Debug, Serialize)]
pub struct Statement<'a> {
    /// The statement's text.
    pub span: Span,
    /// What it is.
    pub kind: Stmt<'a>,
}

/// What a statement does.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stmt<'a> {
    /// `LEFT [OP] RIGHT`: `ip daddr != 10.0.0.0/8`, `ct state new`, `ip saddr @set`.
    Match {
        /// The selector.
        left: Expr<'a>,
        /// `==`, `!=`, `<`, ... (`None`: implicit equality or set membership).
        op: Option<&'a str>,
        /// The value.
        right: Expr<'a>,
    },
    /// `KEY vmap MAP`: a verdict-map lookup.
    Vmap {
        /// The key.
        key: Expr<'a>,
        /// `@name` or `{ ... }`.
        map: Expr<'a>,
    },
    /// `LEFT set VALUE`: `meta mark set meta mark | 0x00004000`.
    Assign {
        /// What is set.
        left: Expr<'a>,
        /// The new value.
        value: Expr<'a>,
    },
    /// A verdict.
    Verdict(Verdict<'a>),
    /// `reject [with ...]`.
    Reject {
        /// The words after `with`.
        with: Vec<&'a str>,
    },
    /// `counter [packets N bytes M]`.
    Counter {
        /// The words after `counter`.
        args: Vec<&'a str>,
    },
    /// `comment "..."` (without quotes).
    Comment(&'a str),
    /// `dnat`, `snat`, `masquerade`, `redirect` (inline: one per endpoint chain, and a box
    /// each was 2.3 MB of small allocations on a 5,000-Service node; its rare words are boxed).
    Nat(Nat<'a>),
    /// `update @set { ... }`, `add @set { ... }`, `delete @set { ... }`.
    SetUpdate {
        /// `update` / `add` / `delete`.
        op: &'a str,
        /// The set's name (without `@`).
        set: &'a str,
        /// The `{ ... }` with the element expression.
        elements: Vec<Element<'a>>,
    },
    /// A statement recognised by its keyword whose arguments are kept as words: `log`, `limit`,
    /// `queue`, `notrack`, `quota`, `xt`, `tproxy`, `dup`, `fwd`, `synproxy`, `flow`.
    Keyword {
        /// The keyword.
        keyword: &'a str,
        /// The words after it.
        args: Vec<&'a str>,
    },
    /// Text the parser does not understand, kept as its tokens.
    Opaque {
        /// The tokens, as written.
        words: Vec<&'a str>,
    },
}

/// `dnat to 10.0.0.1:80`, `masquerade random`: [`Stmt::Nat`].
///
/// Serialized as `kind`, `family`, `spec`, `to`, `flags`.
#[derive(Clone, Debug)]
pub struct Nat<'a> {
    /// Which.
    pub kind: &'a str,
    /// The `to` expression.
    pub to: Option<Expr<'a>>,
    /// [`Nat::family`], [`Nat::spec`] and [`Nat::flags`], out of line: kube-proxy writes none
    /// of them on its `dnat to ADDR:PORT`, and inline they would make every statement larger.
    words: Option<Box<NatWords<'a>>>,
}

/// The rare words of a [`Nat`].
#[derive(Clone, Debug, Default)]
struct NatWords<'a> {
    family: Option<&'a str>,
    spec: Vec<&'a str>,
    flags: Vec<&'a str>,
}

impl<'a> Nat<'a> {
    /// A NAT statement; `family`, `spec` and `flags` take memory of their own only when given.
    pub fn new(
        kind: &'a str,
        family: Option<&'a str>,
        spec: Vec<&'a str>,
        to: Option<Expr<'a>>,
        flags: Vec<&'a str>,
    ) -> Nat<'a> {
        let words = (family.is_some() || !spec.is_empty() || !flags.is_empty()).then(|| {
            Box::new(NatWords {
                family,
                spec,
                flags,
            })
        });
        Nat { kind, to, words }
    }

    /// `ip`/`ip6` after the keyword.
    pub fn family(&self) -> Option<&'a str> {
        self.words.as_ref().and_then(|w| w.family)
    }

    /// `addr . port`, `prefix`: words between the keyword (and family) and `to`.
    pub fn spec(&self) -> &[&'a str] {
        self.words.as_ref().map_or(&[], |w| &w.spec)
    }

    /// `fully-random`, `persistent`, `random`.
    pub fn flags(&self) -> &[&'a str] {
        self.words.as_ref().map_or(&[], |w| &w.flags)
    }
}

impl Serialize for Nat<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = serializer.serialize_struct("Nat", 5)?;
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("family", &self.family())?;
        st.serialize_field("spec", self.spec())?;
        st.serialize_field("to", &self.to)?;
        st.serialize_field("flags", self.flags())?;
        st.end()
    }
}

impl Stmt<'_> {
    /// A short name of the statement's kind, for summaries.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Stmt::Match { .. } => "match",
            Stmt::Vmap { .. } => "vmap",
            Stmt::Assign { .. } => "assign",
            Stmt::Verdict(_) => "verdict",
            Stmt::Reject { .. } => "reject",
            Stmt::Counter { .. } => "counter",
            Stmt::Comment(_) => "comment",
            Stmt::Nat(_) => "nat",
            Stmt::SetUpdate { .. } => "set_update",
            Stmt::Keyword { .. } => "keyword",
            Stmt::Opaque { .. } => "opaque",
        }
    }
}

impl<'a> Ruleset<'a> {
    /// The span of `s` when it is a slice of [`Ruleset::text`] (every name and literal of the
    /// model is).
    pub fn span_of(&self, s: &str) -> Option<Span> {
        let base = self.text.as_ptr() as usize;
        let p = s.as_ptr() as usize;
        (p >= base && p + s.len() <= base + self.text.len())
            .then(|| Span::new(p - base, p - base + s.len()))
    }

    /// The chain `name` of `table`.
    pub fn chain_in(&self, table: TableId, name: &str) -> Option<ChainId> {
        self.tables[table.index()]
            .chains
            .iter()
            .copied()
            .find(|c| self.chains[c.index()].name == name)
    }

    /// The first table of `family` called `name`.
    pub fn table(&self, family: Family, name: &str) -> Option<TableId> {
        self.tables
            .iter()
            .position(|t| t.family == Some(family) && t.name == Some(name))
            .map(|i| TableId(i as u32))
    }

    /// The statements of a rule of this ruleset, in order (empty for a rule of another one).
    #[inline]
    pub fn statements_of(&self, rule: &Rule<'_>) -> &[Statement<'a>] {
        let r = rule.statements;
        self.statements
            .get(r.chunk as usize)
            .and_then(|c| c.get(r.start as usize..r.end as usize))
            .unwrap_or(&[])
    }

    /// Every statement of every rule, in the order the rules were read.
    pub fn all_statements(&self) -> impl Iterator<Item = &Statement<'a>> + '_ {
        self.statements.iter().flat_map(|c| c.iter())
    }

    /// A new chunk's capacity: twice the last one's, from [`FIRST_STATEMENT_CHUNK`] up to
    /// [`STATEMENT_CHUNK`], so that a ruleset of a few rules (one of many sections in a paste)
    /// reserves room for a few statements, not for a full chunk.
    fn next_chunk_capacity(&self) -> usize {
        self.statements
            .last()
            .map_or(0, |c| c.capacity().saturating_mul(2))
            .clamp(FIRST_STATEMENT_CHUNK, STATEMENT_CHUNK)
    }

    /// Moves one rule's statements (read into `scratch`, left empty) to the end of the last
    /// chunk, or of a new one when they do not fit, and returns where they are.
    pub(crate) fn push_statements(&mut self, scratch: &mut Vec<Statement<'a>>) -> StatementRange {
        let n = scratch.len();
        if self.statements.last().is_none_or(|c| c.spare() < n) {
            let capacity = self.next_chunk_capacity().max(n);
            self.statements
                .push(StatementChunk::with_capacity(capacity));
        }
        let chunk = self.statements.len() - 1;
        let c = &mut self.statements[chunk];
        let start = c.len();
        c.append_with(|c| c.append(scratch));
        StatementRange {
            chunk: chunk as u32,
            start: start as u32,
            end: c.len() as u32,
        }
    }

    /// Reads one rule's statements straight into the last chunk (no copy from a scratch
    /// vector): `read` pushes at most `at_most` of them (one per token at most), so the chunk
    /// is never reallocated. A rule with more tokens than a chunk holds gets a chunk of its own.
    pub(crate) fn read_statements(
        &mut self,
        at_most: usize,
        read: impl FnOnce(&mut Vec<Statement<'a>>),
    ) -> StatementRange {
        let start = if at_most > STATEMENT_CHUNK {
            let mut own = Vec::new();
            read(&mut own);
            self.statements.push(StatementChunk::from_vec(own));
            0
        } else {
            if self.statements.last().is_none_or(|c| c.spare() < at_most) {
                let capacity = self.next_chunk_capacity().max(at_most);
                self.statements
                    .push(StatementChunk::with_capacity(capacity));
            }
            let Some(c) = self.statements.last_mut() else {
                return StatementRange::default();
            };
            let start = c.len();
            c.append_with(read);
            start
        };
        let chunk = self.statements.len() - 1;
        StatementRange {
            chunk: chunk as u32,
            start: start as u32,
            end: self.statements[chunk].len() as u32,
        }
    }

    /// Points every chain's run of rules ([`RuleList::run`], set by the text parser) at one
    /// vector of rule ids shared by the ruleset, once the whole text is read.
    pub(crate) fn share_rule_lists(&mut self) {
        let ids = std::sync::Arc::new((0..self.rules.len() as u32).map(RuleId).collect());
        for chain in &mut self.chains {
            if let RuleListRepr::Shared { ids: shared, .. } = &mut chain.rules.0 {
                *shared = Some(std::sync::Arc::clone(&ids));
            }
        }
    }

    /// The rules of `chain`, in order.
    pub fn rules_of(&self, chain: ChainId) -> impl Iterator<Item = &Rule<'a>> + '_ {
        self.chains[chain.index()]
            .rules
            .iter()
            .map(|r| &self.rules[r.index()])
    }

    /// The ruleset without spans, handles' positions or closing-brace flags: what a round trip
    /// through the printer must keep. Two rulesets have the same content when these are equal.
    pub fn content(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        strip(&mut v);
        v
    }

    /// Same tables, chains, sets, elements, rules and statements (spans and `closed` ignored).
    pub fn same_content(&self, other: &Ruleset<'_>) -> bool {
        self.content() == other.content()
    }
}

fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.remove("span");
            map.remove("closed");
            map.remove("family_word");
            for x in map.values_mut() {
                strip(x);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short listing reserves room for a few statements, not a full chunk: a paste of many
    /// short sections keeps every section's ruleset (20k of them reserved 1 GB before).
    #[test]
    fn a_short_listing_reserves_few_statements() {
        let parsed =
            crate::parse("table ip t {\n\tchain c {\n\t\tip daddr 10.0.0.1 accept\n\t}\n}\n");
        let reserved: usize = parsed.ruleset.statements.iter().map(|c| c.capacity()).sum();
        let used = parsed.ruleset.all_statements().count();
        assert!(used >= 2, "{used}");
        assert!(reserved <= FIRST_STATEMENT_CHUNK, "{reserved}");
    }

    /// In a listing too short for a first chunk sized from its text, chunks double from about
    /// one rule's statements up to [`STATEMENT_CHUNK`], and every rule keeps its statements.
    #[test]
    fn statement_chunks_grow_to_the_full_size() {
        let rules: String = (0..250)
            .map(|i| format!("\t\tip daddr 10.0.{}.{} counter accept\n", i / 250, i % 250))
            .collect();
        let text = format!("table ip t {{\n\tchain c {{\n{rules}\t}}\n}}\n");
        let parsed = crate::parse(&text);
        let capacities: Vec<usize> = parsed
            .ruleset
            .statements
            .iter()
            .map(|c| c.capacity())
            .collect();
        assert!(capacities[0] <= 16, "{capacities:?}");
        assert!(
            capacities.windows(2).all(|w| w[1] >= w[0]),
            "{capacities:?}"
        );
        assert_eq!(capacities.last(), Some(&STATEMENT_CHUNK), "{capacities:?}");
        let rs = &parsed.ruleset;
        let per_rule: Vec<usize> = rs.rules.iter().map(|r| rs.statements_of(r).len()).collect();
        assert_eq!(per_rule.len(), 250);
        assert!(per_rule.iter().all(|&n| n == per_rule[0]), "{per_rule:?}");
    }

    /// Lints walk every statement and element: their size is most of the memory they load.
    /// Rare parts (`fib`, `numgen`, binary operations, a NAT statement's rare words) are boxed and
    /// keywords are bytes, so that the common ones stay small.
    #[test]
    fn statements_expressions_and_elements_stay_small() {
        let sizes = [
            ("Expr", size_of::<Expr<'_>>()),
            ("Stmt", size_of::<Stmt<'_>>()),
            ("Statement", size_of::<Statement<'_>>()),
            ("Element", size_of::<Element<'_>>()),
        ];
        assert_eq!(
            sizes,
            [
                ("Expr", 24),
                ("Stmt", 64),
                ("Statement", 72),
                ("Element", 88)
            ]
        );
    }

    /// Each payload protocol and ct direction reads back from its word (so the text and JSON
    /// readers, which both go through `from_word`, accept the same words), serializes as it,
    /// and other words are none of them.
    #[test]
    fn keyword_bytes_read_back_from_their_words() {
        for word in [
            "ip", "ip6", "th", "tcp", "udp", "ether", "vxlan", "ipip", "icmpv6", "rt0",
        ] {
            let proto = Proto::from_word(word).expect(word);
            assert_eq!(proto.as_str(), word);
            assert_eq!(
                serde_json::to_string(&proto).ok(),
                Some(format!("{word:?}"))
            );
        }
        for dir in [CtDir::Original, CtDir::Reply] {
            assert_eq!(CtDir::from_word(dir.as_str()), Some(dir));
        }
        for word in ["", "IP", "ip ", "meta", "ct", "original", "daddr"] {
            assert_eq!(Proto::from_word(word), None, "{word:?}");
        }
        assert_eq!(CtDir::from_word("ip"), None);
    }

    /// A chain's shared range of rule ids, made owned to change it, keeps its rules.
    #[test]
    fn a_shared_rule_list_made_owned_keeps_its_rules() {
        let ids: Vec<RuleId> = (0..6).map(RuleId).collect();
        let mut list = RuleList(RuleListRepr::Shared {
            ids: Some(std::sync::Arc::new(ids)),
            start: 2,
            end: 5,
        });
        list.to_mut().push(RuleId(9));
        assert_eq!(&*list, &[RuleId(2), RuleId(3), RuleId(4), RuleId(9)]);
        list.to_mut().push(RuleId(10));
        assert_eq!(list.len(), 5);
    }

    /// The model of a listing with a million chains is mostly its chains: keep one small.
    #[test]
    fn a_chain_stays_small() {
        assert!(
            std::mem::size_of::<super::Chain<'_>>() <= 96,
            "{} bytes",
            std::mem::size_of::<super::Chain<'_>>()
        );
    }
}
