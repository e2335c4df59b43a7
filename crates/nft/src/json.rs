//! `nft -j list ruleset` JSON into the same [`Ruleset`] the text reader builds.
//!
//! The libnftables schema is `{"nftables": [{"metainfo": ..}, {"table": ..}, {"chain": ..},
//! {"set": ..}, {"map": ..}, {"element": ..}, {"rule": ..}, ...]}`. Neither Rust crate for it
//! reads kube-proxy's rulesets (verdict maps, concatenated keys and `elem` wrappers are refused
//! by their `deny_unknown_fields` types), so this reader walks the JSON itself with serde_json:
//!
//! - the top-level array is read one item at a time (`&RawValue`), so a cut-off paste keeps every
//!   object before the cut and one `RL163` says where the text broke;
//! - every table, chain, set and rule spans its JSON object; every statement and named-set
//!   element spans its own JSON value (they are read as `&RawValue` too);
//! - names and string literals are slices of the JSON text (`span_of` finds them) when the JSON
//!   string has no escapes. Text the JSON does not hold as one string (`10.0.0.0/8` from
//!   `{"prefix": ..}`, numbers, a string with `\"` escapes) is written once into [`Strings`], the
//!   side store the caller keeps beside the text; `span_of` does not find those.
//!
//! Values take the shape the text reader gives the same rule (`ip daddr 10.0.0.0/8` and
//! `{"prefix": {"addr": "10.0.0.0", "len": 8}}` are both `Literal("10.0.0.0/8")`); where `nft`
//! itself lists the two forms differently (`==` written or not, `reject` with its default
//! spelled out, a numeric priority) [`crate::canon`] compares them.

use crate::codes;
use crate::model::{
    BaseChain, Binop, Chain, ChainId, CtDir, Element, Expr, Family, Fib, Nat, Numgen, Object,
    Priority, Proto, Rule, RuleId, RuleList, Ruleset, Set, SetId, SetType, Statement, Stmt, Table,
    TableId, Value, Verdict, VerdictKind,
};
use crate::parse::{Parsed, priority_value};
use rulelint_parser::{Diagnostic, Span};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::error::Category;
use serde_json::value::RawValue;
use std::fmt;

mod plain;
mod tape;

use tape::{J, Node, TreeSeed, Val};

/// The side store for text a JSON ruleset does not hold as one string: keep it alive as long
/// as the [`Ruleset`] read with it.
///
/// ```
/// use rulelint_nft::{Strings, parse_json};
/// let text = r#"{"nftables": [{"table": {"family": "ip", "name": "t", "handle": 1}}]}"#;
/// let strings = Strings::new();
/// let parsed = parse_json(text, &strings);
/// assert!(parsed.diagnostics.is_empty());
/// assert_eq!(parsed.ruleset.tables[0].name, Some("t"));
/// ```
#[derive(Default)]
pub struct Strings {
    bump: bumpalo::Bump,
}

impl Strings {
    /// An empty store.
    pub fn new() -> Strings {
        Strings::default()
    }

    fn alloc(&self, s: &str) -> &str {
        self.bump.alloc_str(s)
    }

    /// `parts` written one after another, once: a `format!` per `dnat to ADDRESS:PORT` cost
    /// a tenth of reading the statement.
    fn concat(&self, parts: &[&str]) -> &str {
        let len = parts.iter().map(|p| p.len()).sum();
        let bytes = self.bump.alloc_slice_fill_copy(len, 0u8);
        let mut at = 0;
        for p in parts {
            if let Some(to) = bytes.get_mut(at..at + p.len()) {
                to.copy_from_slice(p.as_bytes());
            }
            at += p.len();
        }
        // Whole strings one after another are UTF-8.
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// Bytes held, for memory figures.
    pub fn allocated_bytes(&self) -> usize {
        self.bump.allocated_bytes()
    }
}

impl fmt::Debug for Strings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Strings({} bytes)", self.bump.allocated_bytes())
    }
}

#[derive(Clone, Copy)]
struct KeySeed<'a>(&'a Strings);

impl<'a> DeserializeSeed<'a> for KeySeed<'a> {
    type Value = &'a str;
    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<&'a str, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'a> Visitor<'a> for KeySeed<'a> {
    type Value = &'a str;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'a str) -> Result<&'a str, E> {
        Ok(v)
    }
    fn visit_str<E>(self, v: &str) -> Result<&'a str, E> {
        Ok(self.0.alloc(v))
    }
}

/// The fields of an object, each value kept as raw JSON (for its span).
struct RawFields<'a>(&'a Strings);

impl<'a> Visitor<'a> for RawFields<'a> {
    type Value = Vec<(&'a str, &'a RawValue)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut fields = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.0))? {
            fields.push((key, map.next_value::<&'a RawValue>()?));
        }
        Ok(fields)
    }
}

impl<'a> DeserializeSeed<'a> for RawFields<'a> {
    type Value = Vec<(&'a str, &'a RawValue)>;
    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// A rule object read in one pass: its statements (as a list) and comment kept raw, for their
/// spans; the other fields as trees.
struct RuleParts<'a> {
    /// A tape whose first node is an object of the fields other than `expr` and `comment`.
    head: Vec<Node<'a>>,
    exprs: Option<Vec<&'a RawValue>>,
    comment: Option<&'a RawValue>,
    /// Where the last field's value ends in the text; `None` when not known (an empty `expr`,
    /// a field read as a tree: `nft -j` lists `expr` last).
    end: Option<usize>,
}

#[derive(Clone, Copy)]
struct RuleFields<'a> {
    strings: &'a Strings,
    text: &'a str,
}

impl<'a> RuleFields<'a> {
    fn end_of(&self, raw: &RawValue) -> usize {
        raw.get().as_ptr() as usize - self.text.as_ptr() as usize + raw.get().len()
    }
}

impl<'a> Visitor<'a> for RuleFields<'a> {
    type Value = RuleParts<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a rule object")
    }
    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<RuleParts<'a>, M::Error> {
        let mut parts = RuleParts {
            head: Vec::new(),
            exprs: None,
            comment: None,
            end: None,
        };
        let head = tape::open(&mut parts.head, "", true);
        while let Some(key) = map.next_key_seed(KeySeed(self.strings))? {
            match key {
                "expr" => {
                    let list: Vec<&'a RawValue> = map.next_value()?;
                    // The list's `]` follows its last item; an empty list leaves it unknown.
                    let b = self.text.as_bytes();
                    parts.end = list
                        .last()
                        .map(|last| skip_ws(b, self.end_of(last)))
                        .filter(|&close| b.get(close) == Some(&b']'))
                        .map(|close| close + 1);
                    parts.exprs = Some(list);
                }
                "comment" => {
                    let raw = map.next_value()?;
                    parts.end = Some(self.end_of(raw));
                    parts.comment = Some(raw);
                }
                _ => {
                    parts.end = None;
                    map.next_value_seed(TreeSeed {
                        strings: self.strings,
                        tape: &mut parts.head,
                        key,
                    })?;
                }
            }
        }
        tape::close(&mut parts.head, head);
        Ok(parts)
    }
}

impl<'a> DeserializeSeed<'a> for RuleFields<'a> {
    type Value = RuleParts<'a>;
    fn deserialize<D: Deserializer<'a>>(self, d: D) -> Result<RuleParts<'a>, D::Error> {
        d.deserialize_map(self)
    }
}

/// A value of an item of the `nftables` array: a `{"rule": ..}` body read as it is met (the
/// bulk of a ruleset), anything else kept raw.
enum ItemValue<'a> {
    Raw(&'a RawValue),
    Rule(RuleParts<'a>),
    /// A `{"chain": ..}` body as its fields, each kept raw: the chain is read from them
    /// without reading its body twice (25,000 chains on a 5,000-Service node).
    Fields(Vec<(&'a str, &'a RawValue)>),
}

/// The fields of an item of the `nftables` array; a leading `"rule"` is read in the same pass.
struct ItemFields<'a>(RuleFields<'a>);

impl<'a> Visitor<'a> for ItemFields<'a> {
    type Value = Vec<(&'a str, ItemValue<'a>)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<M: MapAccess<'a>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut fields = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.0.strings))? {
            let value = if key == "rule" && fields.is_empty() {
                ItemValue::Rule(map.next_value_seed(self.0)?)
            } else if key == "chain" && fields.is_empty() {
                ItemValue::Fields(map.next_value_seed(RawFields(self.0.strings))?)
            } else {
                ItemValue::Raw(map.next_value()?)
            };
            fields.push((key, value));
        }
        Ok(fields)
    }
}

// ---- the reader ----

/// Values of a list, each with its span (`None`: a value that could not be read).
type Spanned<'t, 'a> = Vec<(Span, Option<J<'t, 'a>>)>;

/// The elements [`Reader::split_elems`] read, as values on the tape of `j`.
fn on_tape<'t, 'a>(j: J<'t, 'a>, list: &[(Span, Option<usize>)]) -> Spanned<'t, 'a> {
    list.iter()
        .map(|&(span, at)| (span, at.map(|at| j.at(at))))
        .collect()
}

/// Reads `nft -j list ruleset` output (also the `{"add": {...}}` command objects of `nft -j -f`
/// input, read as what they add). `#` comment lines before the JSON are skipped; other text
/// before or after it is stray (`RL151`). Never fails, never panics; a cut-off or broken text keeps
/// every object before the break and reports it (`RL163`); an object that is valid JSON but not
/// of the schema is skipped and reported (`RL164`).
///
/// ```
/// use rulelint_nft::{Stmt, Strings, parse_json};
/// let text = r#"{"nftables": [
///   {"chain": {"family": "ip", "table": "kube-proxy", "name": "services", "handle": 2}},
///   {"rule": {"family": "ip", "table": "kube-proxy", "chain": "services", "handle": 3,
///             "expr": [{"jump": {"target": "masquerading"}}]}}
/// "#; // cut short: the array and object never close
/// let strings = Strings::new();
/// let parsed = parse_json(text, &strings);
/// assert_eq!(parsed.diagnostics.len(), 1);
/// assert_eq!(parsed.diagnostics[0].code, "RL163");
/// let rule = &parsed.ruleset.rules[0];
/// assert!(matches!(parsed.ruleset.statements_of(rule)[0].kind, Stmt::Verdict(_)));
/// assert!(text[rule.span.start as usize..].starts_with("{\"rule\""));
/// ```
pub fn parse_json<'a>(text: &'a str, strings: &'a Strings) -> Parsed<'a> {
    read_json(text, strings, true).0
}

/// [`parse_json`], and the byte range of the `{"nftables": [...]}` object when it was read
/// whole: every item valid JSON, the array and the object closed (`None` when it broke, was
/// cut or was not found). Within that range brackets outside strings balance, so a caller
/// that guessed where the document ends can check the guess without a scan of its own.
///
/// ```
/// use rulelint_nft::{Strings, parse_json_with_extent};
/// let text = "# node-1\n{\"nftables\": [{\"table\": {\"family\": \"ip\", \"name\": \"t\"}}]}\n";
/// let strings = Strings::new();
/// let (_, extent) = parse_json_with_extent(text, &strings);
/// assert_eq!(extent, Some(9..text.len() - 1));
/// let (_, extent) = parse_json_with_extent(&text[..30], &strings);
/// assert_eq!(extent, None);
/// ```
pub fn parse_json_with_extent<'a>(
    text: &'a str,
    strings: &'a Strings,
) -> (Parsed<'a>, Option<std::ops::Range<usize>>) {
    read_json(text, strings, true)
}

fn read_json<'a>(
    text: &'a str,
    strings: &'a Strings,
    one_pass: bool,
) -> (Parsed<'a>, Option<std::ops::Range<usize>>) {
    let mut r = Reader {
        one_pass,
        text,
        strings,
        rs: Ruleset {
            text,
            ..Ruleset::default()
        },
        diags: Vec::new(),
        tables: FxHashMap::default(),
        chains: FxHashMap::default(),
        last_chain: None,
        last_table: None,
        sets: FxHashMap::default(),
        array_cut: false,
        scratch: Vec::new(),
        stack: plain::Stack::new(),
        extent: None,
        next_cap: rulelint_parser::cap::CAP_EVERY,
        may_cap: None,
    };
    if text.len() >= u32::MAX as usize {
        r.diags.push(
            Diagnostic::new(
                &codes::INPUT_TOO_LARGE,
                Span::default(),
                "input is 4 GiB or larger",
            )
            .with_label("the input starts here")
            .with_help("analyse one node's ruleset per file"),
        );
    } else {
        r.document();
    }
    if r.array_cut {
        // Objects of any table may follow the cut (nft lists tables, then chains, sets and
        // rules): nothing read is known whole, so lints that conclude from absence stay
        // silent, as for an unclosed block of the text form.
        r.rs.tables.iter_mut().for_each(|t| t.closed = false);
        r.rs.chains.iter_mut().for_each(|c| c.closed = false);
        r.rs.sets.iter_mut().for_each(|s| s.closed = false);
    }
    let mut diagnostics = r.diags;
    diagnostics.sort_by(|a, b| (a.span, a.code).cmp(&(b.span, b.code)));
    rulelint_parser::cap::cap_again_if_capped(&mut diagnostics);
    (
        Parsed {
            ruleset: r.rs,
            diagnostics,
        },
        r.extent,
    )
}

struct Reader<'a> {
    /// Rules are read in the array's pass (off only to test it against the other path).
    one_pass: bool,
    text: &'a str,
    strings: &'a Strings,
    rs: Ruleset<'a>,
    diags: Vec<Diagnostic>,
    tables: FxHashMap<(&'a str, &'a str), TableId>,
    chains: FxHashMap<(TableId, &'a str), ChainId>,
    /// The chain `chain_id` answered last: `nft -j` lists a chain's rules one after another.
    last_chain: Option<(TableId, &'a str, ChainId)>,
    /// The table `table_id` answered last (`nft -j` lists a table's objects together).
    last_table: Option<(&'a str, &'a str, TableId)>,
    sets: FxHashMap<(TableId, &'a str), SetId>,
    /// The `nftables` array was cut or broken before its `]`: objects after it are not read.
    array_cut: bool,
    /// One rule's statements, before they move to the ruleset's chunks.
    scratch: Vec<Statement<'a>>,
    /// The plain reader's stack, kept from item to item.
    stack: plain::Stack<'a>,
    /// The document's `{` to its `}`, once read whole ([`parse_json_with_extent`]).
    extent: Option<std::ops::Range<usize>>,
    /// How many diagnostics the next capping waits for (`cap::CAP_EVERY` more after each).
    next_cap: usize,
    /// Whether the text holds no suppression marker, once a capping asked.
    may_cap: Option<bool>,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// The byte offset in `sub` of a serde_json error's line and column (1-based).
fn error_offset(sub: &str, err: &serde_json::Error) -> usize {
    let mut offset = 0;
    for (n, line) in sub.split_inclusive('\n').enumerate() {
        if n + 1 == err.line() {
            offset += err.column().saturating_sub(1).min(line.len());
            return sub.floor_char_boundary(offset.min(sub.len()));
        }
        offset += line.len();
    }
    sub.len()
}

impl<'a> Reader<'a> {
    fn span(&self, raw: &RawValue) -> Span {
        let start = raw.get().as_ptr() as usize - self.text.as_ptr() as usize;
        Span::new(start, start + raw.get().len())
    }

    /// Reads `raw` onto `tape` under `key`; its index, or `None` (the tape as it was) when it
    /// cannot be read.
    fn tree(&self, raw: &'a RawValue, key: &'a str, tape: &mut Vec<Node<'a>>) -> Option<usize> {
        let at = tape.len();
        let mut de = serde_json::Deserializer::from_str(raw.get());
        let seed = TreeSeed {
            strings: self.strings,
            tape: &mut *tape,
            key,
        };
        match seed.deserialize(&mut de) {
            Ok(()) => Some(at),
            Err(_) => {
                tape.truncate(at);
                None
            }
        }
    }

    /// `raw` read alone: its tape (the value first).
    fn tree_alone(&self, raw: &'a RawValue) -> Option<Vec<Node<'a>>> {
        let mut tape = Vec::new();
        self.tree(raw, "", &mut tape)?;
        Some(tape)
    }

    fn fields(&self, raw: &'a RawValue) -> Result<Vec<(&'a str, &'a RawValue)>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        de.deserialize_map(RawFields(self.strings))
    }

    fn raw_list(&self, raw: &'a RawValue) -> Result<Vec<&'a RawValue>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        Vec::<&'a RawValue>::deserialize(&mut de)
    }

    fn broken(&mut self, at: usize, message: String, label: &str) {
        let at = self.text.floor_char_boundary(at.min(self.text.len()));
        let end = self.text[at..]
            .find('\n')
            .map_or(self.text.len(), |n| at + n)
            .min(at + 80);
        let end = self.text.floor_char_boundary(end).max(at);
        self.diags.push(
            Diagnostic::new(&codes::INVALID_JSON, Span::new(at, end), message)
                .with_label(label.to_string())
                .with_help("paste the whole output of `nft -j list ruleset`; rulelint read the objects before this point"),
        );
    }

    fn unexpected(&mut self, span: Span, message: String) {
        self.diags.push(
            Diagnostic::new(&codes::UNEXPECTED_JSON, span, message)
                .with_label("this object")
                .with_help(
                    "rulelint reads the objects `nft -j list ruleset` prints and skips this one",
                ),
        );
        if self.diags.len() >= self.next_cap {
            self.cap_diagnostics();
        }
    }

    /// Keeps of each code the first diagnostics a report shows and one that counts the rest
    /// (`cap_per_code`), so a document of 200k objects rulelint does not read holds a few
    /// hundred diagnostics, not one per object. Not in a text with a suppression marker.
    fn cap_diagnostics(&mut self) {
        self.next_cap =
            rulelint_parser::cap::cap_tail(self.text, &mut self.may_cap, &mut self.diags, 0);
    }

    /// `{"nftables": [ ITEM, ... ]}`, item by item.
    fn document(&mut self) {
        let text = self.text;
        let b = text.as_bytes();
        let Some(key) = text.find("\"nftables\"") else {
            let at = skip_ws(b, 0);
            self.broken(
                at,
                "no `{\"nftables\": [` in this JSON".to_string(),
                "`nft -j list ruleset` output starts with `{\"nftables\": [`",
            );
            return;
        };
        let Some(open) = text[..key].rfind('{') else {
            self.broken(
                key,
                "`\"nftables\"` is not inside an object".to_string(),
                "here",
            );
            return;
        };
        // `#` comment lines before the JSON are not stray text (`# node-1` above a paste).
        let mut first = skip_ws(b, 0);
        while first < open && b[first] == b'#' {
            first = skip_ws(b, text[first..].find('\n').map_or(open, |n| first + n));
        }
        if first < open {
            self.diags.push(
                Diagnostic::new(
                    &codes::STRAY_TEXT,
                    Span::new(first, text[..open].trim_end().len()),
                    "text before the JSON ruleset",
                )
                .with_label("not part of `nft -j list ruleset` output")
                .with_help("keep only the output of `nft -j list ruleset`"),
            );
        }
        let mut i = skip_ws(b, key + "\"nftables\"".len());
        if b.get(i) != Some(&b':') || b.get(skip_ws(b, i + 1)) != Some(&b'[') {
            self.broken(i, "expected `: [` after `\"nftables\"`".to_string(), "here");
            return;
        }
        i = skip_ws(b, i + 1) + 1;
        loop {
            i = skip_ws(b, i);
            match b.get(i) {
                None => {
                    self.array_cut = true;
                    self.broken(
                        i,
                        "the JSON ends before the `nftables` array closes: the paste is cut short"
                            .to_string(),
                        "the text ends here",
                    );
                    return;
                }
                Some(b']') => break,
                _ => {}
            }
            let rest = &text[i..];
            let fast = if self.one_pass {
                self.plain_item(i).or_else(|| self.fast_item(i, rest))
            } else {
                None
            };
            let span = match fast {
                Some(span) => span,
                None => match self.slow_item(i, rest) {
                    Some(span) => span,
                    None => return,
                },
            };
            i = skip_ws(b, span.end as usize);
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b']') => break,
                None => continue,
                Some(_) => {
                    self.array_cut = true;
                    self.broken(
                        i,
                        "expected `,` or `]` after this object".to_string(),
                        "the JSON breaks here",
                    );
                    return;
                }
            }
        }
        i = skip_ws(b, i + 1);
        match b.get(i) {
            Some(b'}') => {
                // Every item was valid JSON (a break returned above): the object is whole.
                self.extent = Some(open..i + 1);
                let tail = skip_ws(b, i + 1);
                if tail < b.len() {
                    self.diags.push(
                        Diagnostic::new(
                            &codes::STRAY_TEXT,
                            Span::new(tail, text.trim_end().len()),
                            "text after the JSON ruleset",
                        )
                        .with_label("not part of `nft -j list ruleset` output")
                        .with_help("keep only the output of `nft -j list ruleset`"),
                    );
                }
            }
            None => self.broken(
                i,
                "the JSON ends before its closing `}`: the paste is cut short".to_string(),
                "the text ends here",
            ),
            Some(_) => self.broken(
                i,
                "expected `}` after the `nftables` array".to_string(),
                "here",
            ),
        }
    }

    /// One item read by the plain reader ([`plain`]): a `rule`, `chain`, `set`, `map` or
    /// `element` object of plain JSON (most of a ruleset), in one pass over its text. `None`
    /// when that reader declines (nothing is recorded then): serde_json reads the item.
    fn plain_item(&mut self, i: usize) -> Option<Span> {
        let (kind, item, span) = plain::read_item(self.text, i, self.strings, &mut self.stack)?;
        // Taken out while the item is read into the ruleset (`self` is borrowed mutably).
        let tape = std::mem::take(&mut self.stack.tape);
        let list = std::mem::take(&mut self.stack.list);
        let on = |at| J::new(&tape, at);
        let done = match item {
            plain::Item::Rule { head, comment } => {
                let stmts = list.iter().map(|&(s, at)| (s, Some(on(at))));
                let comment = comment.map(|(s, at)| (s, Some(on(at))));
                self.rule_from(on(head), stmts, comment, span)
            }
            plain::Item::Body(at) => self.chain_tree(on(at), span),
            plain::Item::Elems { rest, elems } => {
                let elems = elems.then(|| list.iter().map(|&(s, at)| (s, Some(on(at)))).collect());
                if kind == "element" {
                    self.element_from(on(rest), elems, span)
                } else {
                    self.set_from(on(rest), elems, span, kind == "map")
                }
            }
        };
        self.stack.tape = tape;
        self.stack.list = list;
        if done.is_none() {
            self.lacks_field(kind, span);
        }
        Some(span)
    }

    /// One item read in one pass when it is `{"rule": {...}}` (most of a ruleset): its span is
    /// known from where the rule's last field ends. `None` for anything else, read again by
    /// [`Reader::slow_item`].
    fn fast_item(&mut self, i: usize, rest: &'a str) -> Option<Span> {
        let b = self.text.as_bytes();
        let mut de = serde_json::Deserializer::from_str(rest);
        let fields = de
            .deserialize_map(ItemFields(RuleFields {
                strings: self.strings,
                text: self.text,
            }))
            .ok()?;
        let span = match &fields[..] {
            [(_, ItemValue::Rule(parts))] => {
                let body_close = skip_ws(b, parts.end?);
                let close = skip_ws(b, body_close + 1);
                if b.get(body_close) != Some(&b'}') || b.get(close) != Some(&b'}') {
                    return None;
                }
                Span::new(i, close + 1)
            }
            [(_, ItemValue::Fields(body))] => {
                let span = self.closed_item(i, body)?;
                let tape = self.scalar_tree(body)?;
                if self.chain_tree(J::new(&tape, 0), span).is_none() {
                    self.lacks_field("chain", span);
                }
                return Some(span);
            }
            _ => {
                let mut raw = Vec::with_capacity(fields.len());
                for (k, v) in &fields {
                    match v {
                        ItemValue::Raw(v) => raw.push((*k, *v)),
                        ItemValue::Rule(_) | ItemValue::Fields(_) => return None,
                    }
                }
                return Some(self.raw_item(i, raw));
            }
        };
        let Some((_, ItemValue::Rule(parts))) = fields.into_iter().next() else {
            return None;
        };
        if self.rule_parts(parts, span).is_none() {
            self.lacks_field("rule", span);
        }
        Some(span)
    }

    /// The span of `{"kind": {body}}` at `i` from where the body's last field ends; `None`
    /// when the body is empty or not closed right there (then read the item the slow way).
    fn closed_item(&self, i: usize, body: &[(&'a str, &'a RawValue)]) -> Option<Span> {
        let b = self.text.as_bytes();
        let (_, last) = body.last()?;
        let body_close = skip_ws(b, self.span(last).end as usize);
        let close = skip_ws(b, body_close + 1);
        (b.get(body_close) == Some(&b'}') && b.get(close) == Some(&b'}'))
            .then(|| Span::new(i, close + 1))
    }

    /// The tree of an object whose fields were kept raw, when every value is a string, number,
    /// boolean or null (`None` otherwise, to be read as a whole: the same nesting limit then
    /// applies). A string without escapes is the text between its quotes, as the tree reader
    /// would borrow it.
    fn scalar_tree(&self, body: &[(&'a str, &'a RawValue)]) -> Option<Vec<Node<'a>>> {
        let mut tape = Vec::with_capacity(body.len() + 1);
        tape::open(&mut tape, "", true);
        for &(key, raw) in body {
            let v = raw.get();
            match v.as_bytes().first()? {
                b'"' if !v.contains('\\') => tape.push(Node {
                    key,
                    val: Val::Str(&v[1..v.len() - 1]),
                }),
                b'[' | b'{' => return None,
                _ => {
                    self.tree(raw, key, &mut tape)?;
                }
            }
        }
        tape::close(&mut tape, 0);
        Some(tape)
    }

    /// An item read as its fields, each kept raw: it ends at the `}` after its last field.
    fn raw_item(&mut self, i: usize, fields: Vec<(&'a str, &'a RawValue)>) -> Span {
        let b = self.text.as_bytes();
        let after = fields
            .last()
            .map_or(i + 1, |(_, raw)| self.span(raw).end as usize);
        let span = Span::new(i, (skip_ws(b, after) + 1).min(b.len()));
        self.item(fields, span, 0);
        span
    }

    /// One item read as its fields, each kept raw; `None` when the array breaks here.
    fn slow_item(&mut self, i: usize, rest: &'a str) -> Option<Span> {
        // The item's `{"kind": body}` with the body kept raw.
        let mut de = serde_json::Deserializer::from_str(rest);
        let span = match de.deserialize_map(RawFields(self.strings)) {
            Ok(fields) => self.raw_item(i, fields),
            Err(e) if e.classify() == Category::Data => {
                // Valid JSON but not an object: skip it whole.
                match <&'a RawValue>::deserialize(&mut serde_json::Deserializer::from_str(rest)) {
                    Ok(raw) => {
                        let span = self.span(raw);
                        self.unexpected(
                            span,
                            "expected an object with one key such as `\"rule\"`".into(),
                        );
                        span
                    }
                    Err(e) => {
                        self.item_broken(i, rest, &e);
                        return None;
                    }
                }
            }
            Err(e) => {
                self.item_broken(i, rest, &e);
                return None;
            }
        };
        Some(span)
    }

    /// Where an item of the array could not be read: cut short, or broken.
    fn item_broken(&mut self, i: usize, rest: &str, e: &serde_json::Error) {
        self.array_cut = true;
        // A paste cut inside a string ends in its newline: without the trailing blanks the
        // text ends inside the object, so it is cut short as well.
        let cut = e.is_eof()
            || <&RawValue>::deserialize(&mut serde_json::Deserializer::from_str(rest.trim_end()))
                .is_err_and(|e| e.is_eof());
        if cut {
            self.broken(
                i,
                "the JSON ends inside this object: the paste is cut short".to_string(),
                "this object is not closed",
            );
        } else {
            let at = error_offset(rest, e);
            self.broken(i + at, format!("invalid JSON: {e}"), "the JSON breaks here");
        }
    }

    /// One `{"kind": {...}}` of the array, as its fields.
    fn item(&mut self, fields: Vec<(&'a str, &'a RawValue)>, span: Span, depth: u8) {
        let [(kind, body)] = fields[..] else {
            self.unexpected(
                span,
                "expected an object with one key such as `\"rule\"`".into(),
            );
            return;
        };
        let done = match kind {
            "metainfo" => Some(()),
            "table" => self.table(body, span),
            "chain" => self.chain(body, span),
            "set" | "map" => self.set(body, span, kind == "map"),
            "element" => self.element(body, span),
            "rule" => self.rule(body, span),
            // `nft -j -f` input: what a command adds is read as the object.
            "add" | "create" | "insert" if depth == 0 => {
                let fields = self.fields(body).unwrap_or_default();
                self.item(fields, span, 1);
                Some(())
            }
            "counter" | "quota" | "ct helper" | "ct timeout" | "ct expectation" | "limit"
            | "flowtable" | "secmark" | "synproxy" | "tunnel" => self.object(kind, body),
            _ => {
                self.unexpected(span, format!("`{kind}` objects are not read"));
                Some(())
            }
        };
        if done.is_none() {
            self.lacks_field(kind, span);
        }
    }

    fn lacks_field(&mut self, kind: &str, span: Span) {
        self.unexpected(
            span,
            format!("this `{kind}` object lacks a field or has one of the wrong type"),
        );
    }

    fn table_id(&mut self, family: &'a str, name: &'a str, span: Span) -> TableId {
        if let Some((f, n, tid)) = self.last_table
            && f == family
            && n == name
        {
            return tid;
        }
        if let Some(&tid) = self.tables.get(&(family, name)) {
            self.last_table = Some((family, name, tid));
            return tid;
        }
        let tid = TableId(self.rs.tables.len() as u32);
        self.rs.tables.push(Table {
            family: Family::from_word(family),
            family_word: Some(family),
            name: Some(name),
            span,
            handle: None,
            comment: None,
            flags: Vec::new(),
            chains: Vec::new(),
            sets: Vec::new(),
            objects: Vec::new(),
            closed: true,
        });
        self.tables.insert((family, name), tid);
        self.last_table = Some((family, name, tid));
        tid
    }

    /// The table an object names with `"family"` and `"table"`.
    fn owner(&mut self, body: J<'_, 'a>, span: Span) -> Option<TableId> {
        let family = body.str_of("family")?;
        let table = body.str_of("table")?;
        Some(self.table_id(family, table, span))
    }

    fn table(&mut self, body: &'a RawValue, span: Span) -> Option<()> {
        let tape = self.tree_alone(body)?;
        let j = J::new(&tape, 0);
        let tid = self.table_id(j.str_of("family")?, j.str_of("name")?, span);
        let t = &mut self.rs.tables[tid.index()];
        t.span = span;
        t.handle = j.str_of("handle").and_then(|h| h.parse().ok());
        t.comment = j.str_of("comment");
        t.flags = j.get("flags").map(J::words).unwrap_or_default();
        Some(())
    }

    fn object(&mut self, kind: &'a str, body: &'a RawValue) -> Option<()> {
        let tape = self.tree_alone(body)?;
        let j = J::new(&tape, 0);
        let span = self.span(body);
        let tid = self.owner(j, span)?;
        let name = j.str_of("name")?;
        self.rs.tables[tid.index()].objects.push(Object {
            kind,
            name,
            text: body.get(),
        });
        Some(())
    }

    fn chain_id(&mut self, tid: TableId, name: &'a str, span: Span) -> ChainId {
        if let Some((t, n, cid)) = self.last_chain
            && t == tid
            && n == name
        {
            return cid;
        }
        // `nft -j` lists rules chain by chain in the order it listed the chains: the chain is
        // most often one of the few after the last one (a chain is listed once, so a match is
        // the one), found without hashing its name.
        if let Some((_, _, last)) = self.last_chain {
            let next = last.index() + 1;
            let mut ahead = self
                .rs
                .chains
                .get(next..)
                .unwrap_or_default()
                .iter()
                .take(4);
            if let Some(k) = ahead.position(|c| c.table == tid && c.name == name) {
                let cid = ChainId((next + k) as u32);
                self.last_chain = Some((tid, name, cid));
                return cid;
            }
        }
        if let Some(&cid) = self.chains.get(&(tid, name)) {
            self.last_chain = Some((tid, name, cid));
            return cid;
        }
        let cid = ChainId(self.rs.chains.len() as u32);
        self.rs.chains.push(Chain {
            table: tid,
            name,
            span,
            handle: None,
            comment: None,
            base: None,
            rules: RuleList::default(),
            closed: true,
        });
        self.rs.tables[tid.index()].chains.push(cid);
        self.chains.insert((tid, name), cid);
        self.last_chain = Some((tid, name, cid));
        cid
    }

    fn chain(&mut self, body: &'a RawValue, span: Span) -> Option<()> {
        let tape = self.tree_alone(body)?;
        self.chain_tree(J::new(&tape, 0), span)
    }

    fn chain_tree(&mut self, j: J<'_, 'a>, span: Span) -> Option<()> {
        // The fields read, in one walk over the body (25,000 chains on a 5,000-Service node):
        // the first of each key counts, as for `J::get`.
        let mut f: [Option<J<'_, 'a>>; 10] = [None; 10];
        for field in j.children() {
            let slot = match field.key() {
                "name" => 0,
                "family" => 1,
                "table" => 2,
                "hook" => 3,
                "prio" => 4,
                "type" => 5,
                "dev" => 6,
                "policy" => 7,
                "handle" => 8,
                "comment" => 9,
                _ => continue,
            };
            f[slot].get_or_insert(field);
        }
        let text = |slot: usize| f[slot].and_then(J::text);
        let name = text(0)?;
        let tid = self.table_id(text(1)?, text(2)?, span);
        let family = self.rs.tables[tid.index()].family;
        let base = match text(3) {
            Some(hook) => {
                let prio = text(4).unwrap_or("");
                Some(Box::new(BaseChain {
                    kind: text(5).unwrap_or(""),
                    hook,
                    device: text(6),
                    priority: Priority {
                        text: prio,
                        value: priority_value(family, &[prio]),
                    },
                    policy: text(7),
                    span,
                }))
            }
            None => None,
        };
        let cid = self.chain_id(tid, name, span);
        let c = &mut self.rs.chains[cid.index()];
        c.span = span;
        c.handle = text(8).and_then(|h| h.parse().ok());
        c.comment = text(9);
        c.base = base;
        Some(())
    }

    fn set_id(&mut self, tid: TableId, name: &'a str, is_map: bool, span: Span) -> SetId {
        if let Some(&sid) = self.sets.get(&(tid, name)) {
            return sid;
        }
        let sid = SetId(self.rs.sets.len() as u32);
        self.rs.sets.push(Set {
            table: tid,
            is_map,
            name,
            span,
            handle: None,
            key_type: None,
            flags: Vec::new(),
            timeout: None,
            size: None,
            comment: None,
            properties: Vec::new(),
            elements: Vec::new(),
            closed: true,
        });
        self.rs.tables[tid.index()].sets.push(sid);
        self.sets.insert((tid, name), sid);
        sid
    }

    /// Splits a set or element object into its `elem` list and the rest.
    /// Splits a set or element object into the rest, read onto a tape (first), and the
    /// `elem` list, whose values are read onto the same tape: each with its span and index
    /// (`None` for a value that is not read).
    #[allow(clippy::type_complexity)]
    fn split_elems(
        &self,
        body: &'a RawValue,
    ) -> Option<(Vec<Node<'a>>, Option<Vec<(Span, Option<usize>)>>)> {
        let fields = self.fields(body).ok()?;
        let mut tape = Vec::new();
        tape::open(&mut tape, "", true);
        let mut elems = None;
        for (k, v) in fields {
            if k == "elem" {
                elems = Some(v);
            } else {
                self.tree(v, k, &mut tape)?;
            }
        }
        tape::close(&mut tape, 0);
        let elems = elems.map(|list| {
            // A list that cannot be read ends the object where its elements are read (after
            // its table is made): one value that is not read does that.
            match self.raw_list(list) {
                Ok(raws) => raws
                    .into_iter()
                    .map(|raw| (self.span(raw), self.tree(raw, "", &mut tape)))
                    .collect(),
                Err(_) => vec![(Span::default(), None)],
            }
        });
        Some((tape, elems))
    }

    fn elements<'t>(
        &mut self,
        list: impl Iterator<Item = (Span, Option<J<'t, 'a>>)>,
    ) -> Option<Vec<Element<'a>>>
    where
        'a: 't,
    {
        let mut out = Vec::new();
        for (span, j) in list {
            let j = j?;
            match element(self.strings, j, span) {
                Some(e) => out.push(e),
                None => self.unexpected(span, "set element cannot be read".into()),
            }
        }
        Some(out)
    }

    fn set(&mut self, body: &'a RawValue, span: Span, is_map: bool) -> Option<()> {
        let (tape, elems) = self.split_elems(body)?;
        let j = J::new(&tape, 0);
        let elems = elems.map(|list| on_tape(j, &list));
        self.set_from(j, elems, span, is_map)
    }

    fn set_from<'t>(
        &mut self,
        j: J<'t, 'a>,
        elems: Option<Spanned<'t, 'a>>,
        span: Span,
        is_map: bool,
    ) -> Option<()>
    where
        'a: 't,
    {
        let name = j.str_of("name")?;
        let tid = self.owner(j, span)?;
        let key_type = j.get("type").map(|t| SetType {
            typeof_: false,
            key: t.words(),
            data: j.get("map").map(J::words),
        });
        let elements = match elems {
            Some(list) => self.elements(list.into_iter())?,
            None => Vec::new(),
        };
        let timeout = j.str_of("timeout").map(|t| self.strings.concat(&[t, "s"]));
        let mut properties = Vec::new();
        for key in ["policy", "gc-interval"] {
            if let Some(v) = j.str_of(key) {
                properties.push(vec![key, v]);
            }
        }
        let sid = self.set_id(tid, name, is_map, span);
        let s = &mut self.rs.sets[sid.index()];
        s.span = span;
        s.is_map = is_map;
        s.handle = j.str_of("handle").and_then(|h| h.parse().ok());
        s.key_type = key_type;
        s.flags = j.get("flags").map(J::words).unwrap_or_default();
        s.timeout = timeout;
        s.size = j.str_of("size");
        s.comment = j.str_of("comment");
        s.properties = properties;
        s.elements.extend(elements);
        Some(())
    }

    fn element(&mut self, body: &'a RawValue, span: Span) -> Option<()> {
        let (tape, elems) = self.split_elems(body)?;
        let j = J::new(&tape, 0);
        let elems = elems.map(|list| on_tape(j, &list));
        self.element_from(j, elems, span)
    }

    fn element_from<'t>(
        &mut self,
        j: J<'t, 'a>,
        elems: Option<Spanned<'t, 'a>>,
        span: Span,
    ) -> Option<()>
    where
        'a: 't,
    {
        let name = j.str_of("name")?;
        let tid = self.owner(j, span)?;
        let elements = match elems {
            Some(list) => self.elements(list.into_iter())?,
            None => Vec::new(),
        };
        let sid = self.set_id(tid, name, false, span);
        let set = &mut self.rs.sets[sid.index()];
        if elements.iter().any(|e| e.value.is_some()) {
            set.is_map = true;
        }
        set.elements.extend(elements);
        Some(())
    }

    fn rule(&mut self, body: &'a RawValue, span: Span) -> Option<()> {
        let mut de = serde_json::Deserializer::from_str(body.get());
        let parts = de
            .deserialize_map(RuleFields {
                strings: self.strings,
                text: self.text,
            })
            .ok()?;
        self.rule_parts(parts, span)
    }

    fn rule_parts(&mut self, parts: RuleParts<'a>, span: Span) -> Option<()> {
        let RuleParts {
            head: mut tape,
            exprs,
            comment,
            end: _,
        } = parts;
        // The statements and comment go on the head's tape, after it.
        let stmts: Vec<(Span, Option<usize>)> = exprs
            .into_iter()
            .flatten()
            .map(|raw| (self.span(raw), self.tree(raw, "", &mut tape)))
            .collect();
        let comment = comment.map(|raw| (self.span(raw), self.tree(raw, "", &mut tape)));
        let head = J::new(&tape, 0);
        let on = |(s, at): (Span, Option<usize>)| (s, at.map(|at| head.at(at)));
        self.rule_from(head, stmts.into_iter().map(on), comment.map(on), span)
    }

    /// A rule from its fields other than `expr` and `comment` (`head`), its statements and its
    /// comment, each with its span (`None`: a value that could not be read).
    fn rule_from<'t>(
        &mut self,
        head: J<'t, 'a>,
        stmts: impl Iterator<Item = (Span, Option<J<'t, 'a>>)>,
        comment: Option<(Span, Option<J<'t, 'a>>)>,
        span: Span,
    ) -> Option<()>
    where
        'a: 't,
    {
        let chain = head.str_of("chain")?;
        let tid = self.owner(head, span)?;
        self.scratch.clear();
        for (stmt_span, j) in stmts {
            let kind = j.and_then(|j| statement(self.strings, j));
            let kind = kind.unwrap_or_else(|| Stmt::Opaque {
                words: vec![&self.text[stmt_span.start as usize..stmt_span.end as usize]],
            });
            self.scratch.push(Statement {
                span: stmt_span,
                kind,
            });
        }
        if let Some((span, Some(j))) = comment
            && let Val::Str(text) = j.val()
        {
            self.scratch.push(Statement {
                span,
                kind: Stmt::Comment(text),
            });
        }
        let cid = self.chain_id(tid, chain, span);
        let rid = RuleId(self.rs.rules.len() as u32);
        let range = self.rs.push_statements(&mut self.scratch);
        self.rs.rules.push(Rule {
            chain: cid,
            span,
            handle: head.str_of("handle").and_then(|h| h.parse().ok()),
            statements: range,
            _text: std::marker::PhantomData,
        });
        self.rs.chains[cid.index()].rules.to_mut().push(rid);
        Some(())
    }
}

// ---- values, expressions, statements ----

/// A verdict object: `{"accept": null}`, `{"goto": {"target": "X"}}`.
fn verdict<'a>(j: J<'_, 'a>) -> Option<Verdict<'a>> {
    let (k, v) = j.single()?;
    let kind = VerdictKind::from_word(k)?;
    let target = if kind.takes_chain() {
        Some(v.str_of("target")?)
    } else {
        None
    };
    Some(Verdict { kind, target })
}

/// A set element: `KEY`, `{"elem": {"val": KEY, "comment": ..}}`, or a map's `[KEY, VALUE]`.
fn element<'a>(strings: &'a Strings, j: J<'_, 'a>, span: Span) -> Option<Element<'a>> {
    let (key, value) = match j.pair() {
        Some((key, value)) => (key, Some(value)),
        None => (j, None),
    };
    let mut options = Vec::new();
    let mut comment = None;
    let key = match key.single() {
        Some(("elem", e)) => {
            for opt in ["timeout", "expires"] {
                if let Some(v) = e.str_of(opt) {
                    options.push(opt);
                    options.push(strings.concat(&[v, "s"]));
                }
            }
            comment = e.str_of("comment");
            e.get("val")?
        }
        _ => key,
    };
    let value = match value {
        Some(v) => Some(match verdict(v) {
            Some(verdict) => Value::Verdict(verdict),
            None => Value::Data(Box::new(expr(strings, v)?)),
        }),
        None => None,
    };
    Some(Element {
        key: expr(strings, key)?,
        options: options.into_boxed_slice(),
        comment,
        value,
        span,
    })
}

fn binop_word(op: &str) -> Option<&'static str> {
    Some(match op {
        "&" => "&",
        "|" => "|",
        "^" => "^",
        "<<" => "<<",
        ">>" => ">>",
        _ => return None,
    })
}

/// Meta keys `nft` lists without `meta`.
fn bare_meta(key: &str) -> bool {
    matches!(
        key,
        "iif" | "oif" | "iifname" | "oifname" | "iifgroup" | "oifgroup"
    )
}

/// An expression; `None` for one the model does not hold (its statement is kept opaque).
fn expr<'a>(strings: &'a Strings, j: J<'_, 'a>) -> Option<Expr<'a>> {
    Some(match j.val() {
        Val::Str(s) => match s.strip_prefix('@') {
            Some(name) if !name.is_empty() => Expr::SetRef(name),
            _ => Expr::Literal(s),
        },
        Val::Num(n) => Expr::Literal(n),
        Val::Bool(b) => Expr::Literal(if b { "true" } else { "false" }),
        Val::Arr(_) => {
            let words = j.children().map(J::text).collect::<Option<Vec<&str>>>()?;
            if words.is_empty() {
                return None;
            }
            Expr::List(words.into_boxed_slice())
        }
        Val::Null => return None,
        Val::Obj(_) => {
            let (k, v) = j.single()?;
            match k {
                // A protocol the text reader would not read as a payload selector is not one.
                "payload" => Expr::Payload {
                    proto: Proto::from_word(v.str_of("protocol")?)?,
                    field: v.str_of("field")?,
                },
                "meta" => {
                    let key = v.str_of("key")?;
                    Expr::Meta {
                        key,
                        bare: bare_meta(key),
                    }
                }
                "ct" => Expr::Ct {
                    dir: match v.str_of("dir") {
                        Some(dir) => Some(CtDir::from_word(dir)?),
                        None => None,
                    },
                    key: v.str_of("key")?,
                },
                "fib" => Expr::Fib(Box::new(Fib {
                    flags: v.get("flags").map(J::words).unwrap_or_default(),
                    result: v.str_of("result")?,
                })),
                "numgen" => Expr::Numgen(Box::new(Numgen {
                    mode: v.str_of("mode")?,
                    modulus: v.str_of("mod")?,
                    // `nft` lists `offset 0` as no offset.
                    offset: v.str_of("offset").filter(|o| *o != "0"),
                })),
                "concat" if v.is_arr() => Expr::Concat(
                    v.children()
                        .map(|i| expr(strings, i))
                        .collect::<Option<_>>()?,
                ),
                "concat" => return None,
                "prefix" => {
                    let addr = v.get("addr")?.text()?;
                    let len = v.str_of("len")?;
                    Expr::Literal(strings.concat(&[addr, "/", len]))
                }
                "range" => {
                    let (low, high) = v.pair()?;
                    Expr::Literal(strings.concat(&[low.text()?, "-", high.text()?]))
                }
                "set" => match v.val() {
                    Val::Str(s) if s.starts_with('@') => expr(strings, v)?,
                    Val::Arr(_) => Expr::Set(
                        v.children()
                            .map(|i| element(strings, i, Span::default()))
                            .collect::<Option<_>>()?,
                    ),
                    _ => Expr::Set(Box::new([element(strings, v, Span::default())?])),
                },
                "map" => Expr::Map {
                    key: Box::new(expr(strings, v.get("key")?)?),
                    map: Box::new(expr(strings, v.get("data")?)?),
                },
                _ => match (binop_word(k), v.pair()) {
                    (Some(op), Some((left, right))) => Expr::Binop(Box::new(Binop {
                        op,
                        left: expr(strings, left)?,
                        right: expr(strings, right)?,
                    })),
                    _ => return None,
                },
            }
        }
    })
}

/// Statements kept as keyword and words, as the text reader keeps them.
const KEYWORD_STATEMENTS: &[&str] = &[
    "log", "limit", "queue", "notrack", "quota", "xt", "tproxy", "dup", "fwd", "synproxy", "flow",
    "meter",
];

/// A statement; `None` for one the model does not hold (kept opaque by the caller).
fn statement<'a>(strings: &'a Strings, j: J<'_, 'a>) -> Option<Stmt<'a>> {
    if let Some(v) = verdict(j) {
        return Some(Stmt::Verdict(v));
    }
    let (k, v) = j.single()?;
    Some(match k {
        "match" => {
            let left = expr(strings, v.get("left")?)?;
            // `nft` lists `==` and `in` as no operator, except `==` after a binary operation
            // (`meta mark & 0x00004000 == 0x00000000`).
            let op = match v.str_of("op")? {
                "==" if matches!(left, Expr::Binop(_)) => Some("=="),
                "==" | "in" => None,
                op => Some(op),
            };
            Stmt::Match {
                left,
                op,
                right: expr(strings, v.get("right")?)?,
            }
        }
        "vmap" => Stmt::Vmap {
            key: expr(strings, v.get("key")?)?,
            map: expr(strings, v.get("data")?)?,
        },
        "mangle" => Stmt::Assign {
            left: expr(strings, v.get("key")?)?,
            value: expr(strings, v.get("value")?)?,
        },
        "reject" => Stmt::Reject {
            with: match v.val() {
                Val::Null => Vec::new(),
                _ => {
                    let mut with = v.get("type").map(J::words).unwrap_or_default();
                    if with == ["tcp reset"] {
                        with = vec!["tcp", "reset"];
                    }
                    with.extend(v.str_of("expr"));
                    with
                }
            },
        },
        "counter" => Stmt::Counter {
            args: match v.val() {
                Val::Null => Vec::new(),
                Val::Str(name) => vec!["name", name],
                _ => {
                    let mut args = Vec::new();
                    for key in ["packets", "bytes"] {
                        if let Some(n) = v.str_of(key) {
                            args.push(key);
                            args.push(n);
                        }
                    }
                    args
                }
            },
        },
        "dnat" | "snat" | "masquerade" | "redirect" => nat(strings, k, v)?,
        "set" => {
            let set = v.str_of("set")?;
            Stmt::SetUpdate {
                op: v.str_of("op")?,
                set: set.strip_prefix('@').unwrap_or(set),
                elements: vec![element(strings, v.get("elem")?, Span::default())?],
            }
        }
        "log" => Stmt::Keyword {
            keyword: k,
            args: log_args(strings, v),
        },
        "limit" => Stmt::Keyword {
            keyword: k,
            args: limit_args(strings, v)?,
        },
        _ if KEYWORD_STATEMENTS.contains(&k) => {
            let mut args = Vec::new();
            if v.is_obj() {
                for field in v.children() {
                    args.push(field.key());
                    args.extend(field.words());
                }
            }
            Stmt::Keyword { keyword: k, args }
        }
        _ => return None,
    })
}

/// `{"dnat": {"addr": "10.180.0.1", "port": 80}}` as the text's `dnat to 10.180.0.1:80`.
fn nat<'a>(strings: &'a Strings, kind: &'a str, v: J<'_, 'a>) -> Option<Stmt<'a>> {
    let addr = v.get("addr");
    let port = v.str_of("port");
    let to = match (addr, port) {
        (None, None) => None,
        (None, Some(port)) => Some(Expr::Literal(strings.concat(&[":", port]))),
        (Some(a), None) => Some(expr(strings, a)?),
        (Some(a), Some(port)) => {
            let addr = a.text()?;
            let text = if addr.contains(':') {
                strings.concat(&["[", addr, "]:", port])
            } else {
                strings.concat(&[addr, ":", port])
            };
            Some(Expr::Literal(text))
        }
    };
    Some(Stmt::Nat(Nat::new(
        kind,
        v.str_of("family"),
        Vec::new(),
        to,
        v.get("flags").map(J::words).unwrap_or_default(),
    )))
}

/// `{"log": {"prefix": "in: ", "level": "info"}}` as the text's `log prefix "in: " level info`.
fn log_args<'a>(strings: &'a Strings, v: J<'_, 'a>) -> Vec<&'a str> {
    let mut args = Vec::new();
    if v.is_obj() {
        for field in v.children() {
            args.push(field.key());
            match (field.key(), field.val()) {
                ("prefix", Val::Str(p)) => args.push(strings.alloc(&format!("\"{p}\""))),
                _ => args.extend(field.words()),
            }
        }
    }
    args
}

/// `{"limit": {"rate": 10, "burst": 5, "per": "second"}}` as the text's `limit rate
/// 10/second` (`nft` leaves out the default burst of 5 packets).
fn limit_args<'a>(strings: &'a Strings, v: J<'_, 'a>) -> Option<Vec<&'a str>> {
    let mut args = vec!["rate"];
    if v.get("inv")
        .is_some_and(|inv| matches!(inv.val(), Val::Bool(true)))
    {
        args.push("over");
    }
    let rate = v.str_of("rate")?;
    let per = v.str_of("per").unwrap_or("second");
    match v.str_of("rate_unit").filter(|u| *u != "packets") {
        Some(unit) => {
            args.push(rate);
            args.push(strings.alloc(&format!("{unit}/{per}")));
        }
        None => args.push(strings.alloc(&format!("{rate}/{per}"))),
    }
    if let Some(burst) = v.str_of("burst").filter(|b| *b != "0" && *b != "5") {
        args.push("burst");
        args.push(burst);
        args.push(v.str_of("burst_unit").unwrap_or("packets"));
    }
    Some(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_not_read_hold_a_bounded_number_of_diagnostics() {
        use rulelint_parser::cap;
        let items: Vec<String> = (0..50_000).map(|i| format!("{{\"bogus\": {i}}}")).collect();
        let text = format!("{{\"nftables\": [{}]}}", items.join(", "));
        let strings = Strings::new();
        let parsed = parse_json(&text, &strings);
        assert!(parsed.diagnostics.len() <= cap::CAP_EVERY + cap::MAX_PER_CODE + 2);
        cap::assert_capped_at_the_end(&parsed.diagnostics, codes::UNEXPECTED_JSON.code);
        let stands_for: usize = parsed
            .diagnostics
            .iter()
            .filter(|d| d.code == codes::UNEXPECTED_JSON.code)
            .map(|d| cap::left_out_count(d).unwrap_or(1))
            .sum();
        assert_eq!(stands_for, 50_000);
    }

    /// Rules read in the array's pass give what the two-pass path gives, including where the
    /// one-pass reader declines (an empty `expr` last, a second key, a body of the wrong type).
    #[test]
    fn one_pass_rules_equal_the_two_pass_path() {
        let bodies = [
            r#"{"family": "ip", "table": "t", "chain": "c", "handle": 3, "expr": [{"accept": null}]}"#,
            r#"{"family":"ip","table":"t","chain":"c","expr":[{"jump":{"target":"x"}} ] ,"handle":4}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": null}], "comment": "a \"q\""}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": []}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [] , "handle": 9 }"#,
            r#"{"family": "ip", "table": "t", "expr": [{"drop": null}]}"#,
            r#"{"family": "ip", "table": "t", "chain": 5, "expr": [{"drop": null}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [7, {"bogus": 1}, "x"]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": {"accept": null}}"#,
            // What the plain reader reads, and what it leaves to serde_json.
            r#"{"family":"ip","table":"t","chain":"c","handle":-12,"expr":[{"match":{"op":"==","left":{"payload":{"protocol":"ip","field":"daddr"}},"right":{"set":["10.0.0.1",{"prefix":{"addr":"10.0.0.0","len":8}},{"range":[1,65535]}]}}},{"counter":{"packets":0,"bytes":123456789012345678}},{"vmap":{"key":{"concat":[{"meta":{"key":"l4proto"}},{"payload":{"protocol":"th","field":"dport"}}]},"data":"@m"}},{"numgen":{"mode":"random","mod":2,"offset":0}},true,false,null,[],{},[[1,[2,{}]]]],"comment":"c"}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": {"packets": 1234567890123456789}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": {"packets": -0}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": {"packets": 0.5}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": {"packets": 1e3}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": {"packets": 012}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"counter": {"packets": -}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"jump": {"target": "a\u0041"}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"jump": {"target": "a	b"}}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"accept": nul}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"accept": null},]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"accept": null,}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"accept" null}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [{"accept": null}], "expr": [{"drop": null}]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "comment": 5, "comment": "x", "expr": []}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
            r#"{"family": "ip", "table": "t", "chain": "c", "expr": null}"#,
            r#"{"chain": "c", "family": "ip", "table": "t", "chain": "d"}"#,
            r#" { "family" : "ip" , "table" : "t" , "chain" : "c" , "expr" : [ { "drop" : null } ] , "comment" : "x" } "#,
            r#"{}"#,
            r#"[]"#,
            r#"5"#,
        ];
        let mut texts = Vec::new();
        for body in bodies {
            texts.push(format!(r#"{{"nftables": [{{"rule": {body}}}]}}"#));
            texts.push(format!(
                "{{\"nftables\": [ {{ \"rule\" :\n {body} \n}} ,{{\"rule\": {body}, \"x\": 1}}]}}"
            ));
            // Cut short inside the body.
            let whole = format!(r#"{{"nftables": [{{"rule": {body}}}]}}"#);
            texts.push(whole[..whole.len() - 4].to_string());
        }
        for text in &texts {
            assert_one_pass_reads_as_two(text);
        }
    }

    /// A long array of items, some left by the plain reader to serde_json, reads as the
    /// two-pass path reads it: whole, cut at several places, broken in the middle.
    #[test]
    fn long_arrays_equal_the_two_pass_path() {
        let mut items = vec![
            r#"{"metainfo": {"version": "1.0.6"}}"#.to_string(),
            r#"{"table": {"family": "ip", "name": "t", "handle": 1}}"#.to_string(),
        ];
        for n in 0..700 {
            items.push(format!(
                r#"{{"chain": {{"family": "ip", "table": "t", "name": "c{}", "handle": {n}}}}}"#,
                n % 50
            ));
            items.push(format!(
                r#"{{"rule": {{"family": "ip", "table": "t", "chain": "c{}", "handle": {n}, "expr": [{{"match": {{"op": "==", "left": {{"payload": {{"protocol": "tcp", "field": "dport"}}}}, "right": {n}}}}}, {{"counter": {{"packets": {n}, "bytes": -{n}}}}}, {{"jump": {{"target": "c{}"}}}}]}}}}"#,
                n % 50,
                n % 7
            ));
            match n {
                300 => items.push(r#"{"rule": {"family": "ip", "table": "t", "chain": "c\u0031", "expr": [{"accept": null}]}}"#.into()),
                301 => items.push(r#"{"set": {"family": "ip", "name": "s", "table": "t", "elem": [1, 2.5]}}"#.into()),
                450 => items.push(r#"{"map": {"family": "ip", "name": "m", "table": "t", "map": "verdict", "elem": [[1, {"goto": {"target": "c1"}}]]}}"#.into()),
                _ => {}
            }
        }
        let whole = format!("{{\"nftables\": [{}]}}\n", items.join(", "));
        assert_one_pass_reads_as_two(&whole);
        for cut in [whole.len() / 3, whole.len() / 2 + 1, whole.len() - 3] {
            let at = whole.floor_char_boundary(cut);
            assert_one_pass_reads_as_two(&whole[..at]);
        }
        let broken = whole.replacen("}}, {\"chain\"", "}} {\"chain\"", 400);
        assert_one_pass_reads_as_two(&broken);
    }

    /// The one-pass reader gives the same ruleset and diagnostics as the two-pass one.
    fn assert_one_pass_reads_as_two(text: &str) {
        let (s1, s2) = (Strings::new(), Strings::new());
        let one = read_json(text, &s1, true).0;
        let two = read_json(text, &s2, false).0;
        assert_eq!(
            format!("{:?}", one.ruleset),
            format!("{:?}", two.ruleset),
            "{text}"
        );
        assert_eq!(
            format!("{:?}", one.diagnostics),
            format!("{:?}", two.diagnostics),
            "{text}"
        );
    }

    /// Sets, maps and elements read by the plain reader give what serde_json's path gives,
    /// including where the plain reader declines.
    #[test]
    fn plain_sets_and_elements_equal_the_two_pass_path() {
        let bodies = [
            r#"{"family": "ip", "name": "m", "table": "t", "type": ["ipv4_addr", "inet_proto", "inet_service"], "handle": 3, "map": "verdict", "elem": [[{"concat": ["10.0.0.1", "tcp", 80]}, {"goto": {"target": "svc"}}], [{"elem": {"val": "10.0.0.2", "timeout": 3, "comment": "c"}}, {"accept": null}]]}"#,
            r#"{"family": "ip", "name": "s", "table": "t", "type": "ipv4_addr", "flags": ["interval"], "elem": ["10.0.0.1", {"prefix": {"addr": "10.1.0.0", "len": 16}}, {"range": ["10.2.0.1", "10.2.0.9"]}, {"bogus": 1}, [1]]}"#,
            r#"{"family": "ip", "name": "s", "table": "t", "elem": []}"#,
            r#"{"family": "ip", "name": "s", "table": "t", "elem": 5}"#,
            r#"{"family": "ip", "name": "s", "table": "t", "elem": ["a"], "elem": ["b"]}"#,
            r#"{"family": "ip", "name": "s", "table": "t", "elem": ["a\"b"]}"#,
            r#"{"family": "ip", "name": "s", "table": "t", "elem": [1.5]}"#,
            r#"{"family": "ip", "name": "s", "elem": ["a"]}"#,
            r#"{"family": "ip", "table": "t", "elem": ["a"]}"#,
            r#"{}"#,
            r#"[]"#,
        ];
        for kind in ["set", "map", "element"] {
            for body in bodies {
                let whole = format!(r#"{{"nftables": [{{"{kind}": {body}}}]}}"#);
                let texts = [
                    whole.clone(),
                    format!(
                        "{{\"nftables\": [ {{ \"{kind}\" :\n {body} \n}} ,{{\"{kind}\": {body}, \"x\": 1}}]}}"
                    ),
                    whole[..whole.len() - 4].to_string(),
                ];
                for text in &texts {
                    assert_one_pass_reads_as_two(text);
                }
            }
        }
    }

    /// The plain reader takes the items `nft -j` prints (else the tests above compare serde_json
    /// with itself), and declines what it must leave to serde_json.
    #[test]
    fn the_plain_reader_reads_plain_items_only() {
        let strings = Strings::new();
        let mut stack = plain::Stack::new();
        let mut read = |text: &'static str| {
            plain::read_item(text, 1, &strings, &mut stack).map(|(kind, _, span)| (kind, span))
        };
        assert_eq!(
            read(
                r#"[{"rule": {"family": "ip", "table": "t", "chain": "c", "handle": 7, "expr": [{"accept": null}]}} ]"#
            ),
            Some(("rule", Span::new(1, 96)))
        );
        assert_eq!(
            read(r#"[{"chain": {"family": "ip", "table": "t", "name": "c", "handle": 2}}]"#)
                .map(|r| r.0),
            Some("chain")
        );
        assert_eq!(
            read(r#"[{"map": {"family": "ip", "name": "m", "table": "t", "elem": [["a", {"drop": null}]]}}]"#).map(|r| r.0),
            Some("map")
        );
        for declined in [
            r#"[{"table": {"family": "ip", "name": "t"}}]"#,
            r#"[{"rule": {"chain": "c\"d"}}]"#,
            r#"[{"rule": {"handle": 1.0}}]"#,
            r#"[{"rule": {"handle": -0}}]"#,
            r#"[{"rule": {}, "x": 1}]"#,
            r#"[{"rule": {"expr": [}}]"#,
            r#"[{"rule": {"expr": [1]"#,
            r#"[{"chain": 5}]"#,
        ] {
            assert_eq!(read(declined), None, "{declined}");
        }
    }

    /// Chains read from their raw fields give what reading the body whole gives, including
    /// where that reader declines (a nested value, an escaped string, an empty body).
    #[test]
    fn chains_from_raw_fields_equal_the_two_pass_path() {
        let bodies = [
            r#"{"family": "ip", "table": "t", "name": "c", "handle": 3}"#,
            r#"{"family":"ip","table":"t","name":"nat-prerouting","handle":4,"type":"nat","hook":"prerouting","prio":-100,"policy":"accept"}"#,
            r#"{"family": "ip", "table": "t", "name": "a\"b", "handle": 5, "comment": "x\u0041"}"#,
            r#"{"family": "ip", "table": "t", "name": "c", "handle": 1.5e3, "x": true, "y": null}"#,
            r#"{"family": "ip", "table": "t", "name": "c", "dev": ["a", "b"]}"#,
            r#"{"family": "ip", "table": "t", "name": "c", "x": {"y": 1}} "#,
            r#"{"family": "ip", "table": "t"}"#,
            r#"{"family": "ip", "table": "t", "name": 7}"#,
            r#"{}"#,
            r#"[]"#,
            r#""c""#,
        ];
        for body in bodies {
            let whole = format!(r#"{{"nftables": [{{"chain": {body}}}]}}"#);
            let texts = [
                whole.clone(),
                format!(
                    "{{\"nftables\": [ {{ \"chain\" :\n {body} \n}} ,{{\"chain\": {body}, \"x\": 1}}]}}"
                ),
                whole[..whole.len() - 4].to_string(),
            ];
            for text in &texts {
                assert_one_pass_reads_as_two(text);
            }
        }
    }
}
