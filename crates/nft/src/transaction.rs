//! The `add ...` transaction form kube-proxy pipes to `nft -f` (and `knftables.Fake.Dump()`
//! prints) into the same [`Ruleset`] the listing reader builds.
//!
//! One command per line (or per `;` outside braces; a `{ ... }` may span lines): `add`/`create`
//! `table`, `chain`, `set`, `map` (with their `{ ...; ... }` bodies), `add`/`insert` `rule`, `add`
//! `element`, and `flush`/`delete`/`destroy` of each. Commands are applied in order, as `nft -f`
//! applies a transaction: `flush chain` empties a chain, `flush set`/`map` drops the elements,
//! `flush table` empties every chain of the table (sets keep their elements, as nft 1.0.6 does:
//! `corpus/nft/forms/flush-table.nft`), `flush ruleset` drops everything, `delete`/`destroy` removes the object (`delete
//! element` the elements with the same keys); deleting what does not exist changes nothing.
//! `delete rule ... handle N` and `replace rule` are not applied: the form carries no handles.
//! Objects may come before their table or chain (a rule before its `add chain`): the table or
//! chain is created where it is first named, as kube-proxy's own dumps order them freely.
//! `list`, `rename`, `reset` and other commands that do not build the ruleset are skipped; `#`
//! comments are dropped by the lexer.
//!
//! Rule bodies and element lists are read by the listing's statement reader, so a rule reads
//! the same in both forms; names and literals are slices of the text.

use crate::codes;
use crate::lexer::{self, Kind, Token};
use crate::model::{
    BaseChain, Chain, ChainId, Element, Family, Priority, Rule, RuleId, RuleList, Ruleset, Set,
    SetId, SetType, Table, TableId,
};
use crate::parse::{Parsed, priority_value};
use crate::stmt::{Cur, unquote};
use rulelint_parser::{Diagnostic, Span};
use rustc_hash::FxHashMap;

/// The objects nft adds when a command names one without a verb (`table ip t`), as the
/// `add` of a script; the named objects are not modelled (skipped, as `add counter` is).
const IMPLICIT_ADD: &[&str] = &[
    "table",
    "chain",
    "rule",
    "set",
    "map",
    "element",
    "counter",
    "quota",
    "limit",
    "ct",
    "flowtable",
    "secmark",
    "synproxy",
];

const VERBS: &[&str] = &[
    "add", "create", "insert", "replace", "flush", "delete", "destroy", "list", "rename", "reset",
    "monitor", "describe", "export", "import", "get",
];

/// Reads the `add table/chain/set/map/rule/element ...` form. Never fails, never panics; time
/// and memory are linear in the text (a `delete element` compares keys with the set's
/// elements).
///
/// ```
/// use rulelint_nft::{Family, parse_transaction};
/// let text = "add table ip kube-proxy { comment \"rules for kube-proxy\" ; }\n\
///             add chain ip kube-proxy services\n\
///             add rule ip kube-proxy services ip daddr . meta l4proto . th dport vmap @service-ips\n\
///             add rule ip kube-proxy services jump masquerading\n\
///             flush chain ip kube-proxy services\n\
///             add rule ip kube-proxy services jump masquerading\n";
/// let parsed = parse_transaction(text);
/// assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
/// let set = &parsed.ruleset;
/// let table = set.table(Family::Ip, "kube-proxy").unwrap();
/// assert_eq!(set.tables[table.index()].comment, Some("rules for kube-proxy"));
/// let chain = set.chain_in(table, "services").unwrap();
/// assert_eq!(set.rules_of(chain).count(), 1);
/// ```
pub fn parse_transaction(text: &str) -> Parsed<'_> {
    let mut diags = Vec::new();
    if text.len() >= u32::MAX as usize {
        diags.push(
            Diagnostic::new(
                &codes::INPUT_TOO_LARGE,
                Span::default(),
                "input is 4 GiB or larger",
            )
            .with_label("the input starts here")
            .with_help("analyse one node's ruleset per file"),
        );
        return Parsed {
            ruleset: Ruleset {
                text,
                ..Ruleset::default()
            },
            diagnostics: diags,
        };
    }
    let toks = lexer::tokenize(text, &mut diags);
    let mut t = Tx {
        text,
        toks: &toks,
        rs: Ruleset {
            text,
            ..Ruleset::default()
        },
        diags,
        tables: FxHashMap::default(),
        chains: FxHashMap::default(),
        sets: FxHashMap::default(),
        deleted: Vec::new(),
        blocks_read: false,
        not_commands: Vec::new(),
    };
    let mut pos = 0;
    while pos < toks.len() {
        // A `table ... { ... }` block (or a command whose body only the block reader reads), in
        // a script that mixes blocks and commands (`script.rs`).
        if let Some(block) = t.block_at(pos) {
            pos = block.end.max(pos + 1);
            t.read_block(block);
            continue;
        }
        let end = t.command_end(pos);
        // The command without the newline or `;` that ends it, nor newlines and handles inside
        // a `{ ... }` over several lines (copied only then: most commands are one line).
        let mut cmd = &toks[pos..end];
        if let [head @ .., last] = cmd
            && matches!(last.kind(text), Kind::Newline | Kind::Semi)
        {
            cmd = head;
        }
        let filtered: Vec<Token>;
        if cmd
            .iter()
            .any(|k| matches!(k.kind(text), Kind::Newline | Kind::Handle))
        {
            filtered = cmd
                .iter()
                .copied()
                .filter(|k| !matches!(k.kind(text), Kind::Newline | Kind::Handle))
                .collect();
            cmd = &filtered;
        }
        if cmd.iter().any(|k| k.kind(text) != Kind::Semi) {
            t.command(cmd);
        }
        pos = end.max(pos + 1);
    }
    let ruleset = compact(t.rs, &t.deleted);
    let mut diagnostics = t.diags;
    if t.blocks_read {
        // In a script of blocks, as in a listing, a line that is neither block nor command
        // is pasted text around it (a shell prompt, prose), not a broken command.
        for &i in &t.not_commands {
            let span = diagnostics[i].span;
            diagnostics[i] = Diagnostic::new(&codes::STRAY_TEXT, span, "text outside any table")
                .with_label("not part of an `nft -f` script")
                .with_help("keep only the script or the output of `nft list ruleset`; rulelint skips these lines");
        }
    }
    diagnostics.sort_by(|a, b| (a.span, a.code).cmp(&(b.span, b.code)));
    Parsed {
        ruleset,
        diagnostics,
    }
}

pub(crate) struct Tx<'t, 'a> {
    pub(crate) text: &'a str,
    pub(crate) toks: &'t [Token],
    pub(crate) rs: Ruleset<'a>,
    pub(crate) diags: Vec<Diagnostic>,
    pub(crate) tables: FxHashMap<(Option<Family>, &'a str), TableId>,
    pub(crate) chains: FxHashMap<(TableId, &'a str), ChainId>,
    pub(crate) sets: FxHashMap<(TableId, &'a str), SetId>,
    /// Per table: deleted (`delete table`, `flush ruleset`); [`compact`] leaves it out.
    pub(crate) deleted: Vec<bool>,
    /// Whether a block was read (`table ip t { ... }`): the text is a script of blocks and
    /// commands, whose other lines read as a listing's stray text.
    pub(crate) blocks_read: bool,
    /// Where in `diags` each line that is no command was reported.
    not_commands: Vec<usize>,
}

/// The words of a command before its body: verb, object, family, names.
struct Head<'a> {
    verb: &'a str,
    object: &'a str,
    family: Option<Family>,
    family_word: Option<&'a str>,
    /// Names after the family: table, then chain/set.
    names: Vec<&'a str>,
    /// Index in the command of the first token after the names.
    rest: usize,
}

impl<'t, 'a> Tx<'t, 'a> {
    pub(crate) fn s(&self, t: Token) -> &'a str {
        &self.text[t.start as usize..t.end as usize]
    }

    /// The end (exclusive) of the command starting at `pos`: a newline or `;` outside braces,
    /// or, inside an unclosed `{`, a line that starts with a command verb.
    fn command_end(&self, pos: usize) -> usize {
        let mut depth = 0u32;
        let mut i = pos;
        while i < self.toks.len() {
            let k = self.toks[i];
            match k.kind(self.text) {
                Kind::Newline | Kind::Semi if depth == 0 => return i + 1,
                Kind::Newline => {
                    if let Some(n) = self.toks.get(i + 1)
                        && n.kind(self.text) == Kind::Word
                        && VERBS.contains(&self.s(*n))
                    {
                        return i + 1;
                    }
                }
                Kind::LBrace => depth += 1,
                Kind::RBrace => depth = depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
        i
    }

    fn invalid(&mut self, cmd: &[Token], message: String, label: &str) {
        let span = Span {
            start: cmd[0].start,
            end: cmd[cmd.len() - 1].end,
        };
        self.diags.push(
            Diagnostic::new(&codes::INVALID_COMMAND, span, message)
                .with_label(label.to_string())
                .with_help("write commands as kube-proxy does: `add rule ip kube-proxy CHAIN ...`; rulelint skips this one"),
        );
    }

    /// The head of `cmd`, whose object word is at `object_at` (1, or 0 for a command without
    /// its `add`, which nft reads as `add`: `table ip t`, `chain ip t c { ... }`).
    fn head(&self, cmd: &[Token], object_at: usize, names: usize) -> Option<Head<'a>> {
        let word = |i: usize| {
            cmd.get(i)
                .filter(|t| matches!(t.kind(self.text), Kind::Word | Kind::Str))
                .map(|t| unquote(self.s(*t)))
        };
        let verb = if object_at == 0 { "add" } else { word(0)? };
        let object = word(object_at)?;
        let mut i = object_at + 1;
        let mut family = Some(Family::Ip);
        let mut family_word = None;
        // The family is optional (`ip` when missing): a first word that is a family and is
        // followed by as many names as the command needs is the family.
        if let Some(f) = word(i).and_then(Family::from_word)
            && (0..names).all(|n| word(i + 1 + n).is_some())
        {
            family = Some(f);
            family_word = word(i);
            i += 1;
        }
        let mut out = Vec::new();
        for _ in 0..names {
            out.push(word(i)?);
            i += 1;
        }
        Some(Head {
            verb,
            object,
            family,
            family_word,
            names: out,
            rest: i,
        })
    }

    fn command(&mut self, cmd: &[Token]) {
        let Some(first) = cmd
            .iter()
            .find(|t| t.kind(self.text) == Kind::Word)
            .map(|t| self.s(*t))
        else {
            self.invalid(cmd, "line is not an nft command".into(), "no command word");
            return;
        };
        // `define NAME = value` in an `nft -f` file (`/etc/nftables.conf`) names a value for
        // `$NAME`; it declares nothing in the ruleset, and rules that use `$NAME` stay opaque.
        if matches!(first, "define" | "redefine" | "undefine")
            && cmd[0].kind(self.text) == Kind::Word
        {
            return;
        }
        // `include "FILE"`: valid, but the file is not here to read.
        if first == "include"
            && cmd[0].kind(self.text) == Kind::Word
            && cmd.get(1).is_some_and(|t| t.kind(self.text) == Kind::Str)
        {
            let span = cmd[0].span().cover(cmd[cmd.len() - 1].span());
            self.diags.push(codes::include_not_read(span));
            return;
        }
        // nft reads a command without its verb as `add`: `table ip t`, `rule ip t c accept`.
        let implicit_add = cmd[0].kind(self.text) == Kind::Word && IMPLICIT_ADD.contains(&first);
        let (first, object_at) = if implicit_add { ("add", 0) } else { (first, 1) };
        if !implicit_add && (cmd[0].kind(self.text) != Kind::Word || !VERBS.contains(&first)) {
            self.not_commands.push(self.diags.len());
            self.invalid(
                cmd,
                format!("`{first}` is not an nft command rulelint reads here"),
                "expected `add`, `insert`, `flush`, `delete`, ...",
            );
            return;
        }
        let object = cmd.get(object_at).map(|t| self.s(*t)).unwrap_or("");
        if !matches!(
            first,
            "add" | "create" | "insert" | "flush" | "delete" | "destroy"
        ) {
            return;
        }
        if object == "ruleset" {
            if first == "flush" {
                self.deleted.iter_mut().for_each(|d| *d = true);
                self.tables.clear();
                self.chains.clear();
                self.sets.clear();
            }
            return;
        }
        let names = match object {
            "table" => 1,
            "chain" | "rule" | "set" | "map" | "element" => 2,
            // Named objects (`counter`, `quota`, `ct helper`, `flowtable`, ...) are not modelled.
            _ => return,
        };
        let Some(head) = self.head(cmd, object_at, names) else {
            self.invalid(
                cmd,
                format!("`{first} {object}` lacks the name of its table or {object}"),
                "incomplete command",
            );
            return;
        };
        let body = &cmd[head.rest..];
        let span = Span {
            start: cmd[0].start,
            end: cmd[cmd.len() - 1].end,
        };
        match (head.verb, object) {
            ("add" | "create", "table") => {
                let tid = self.table(&head, span, true);
                if self.body_ok(body, cmd) {
                    self.table_body(tid, body);
                }
            }
            ("add" | "create", "chain") => {
                let tid = self.table(&head, span, false);
                let cid = self.chain(tid, head.names[1], span, true);
                if self.body_ok(body, cmd) {
                    self.chain_body(tid, cid, body);
                }
            }
            ("add" | "insert", "rule") if body.is_empty() => self.invalid(
                cmd,
                "`add rule` lacks its table, chain or statements".into(),
                "expected `add rule FAMILY TABLE CHAIN STATEMENTS`",
            ),
            ("add" | "insert", "rule") => {
                let tid = self.table(&head, span, false);
                let cid = self.chain(tid, head.names[1], span, false);
                self.rule(cid, body, span, head.verb == "insert");
            }
            ("add" | "create", "set" | "map") => {
                let tid = self.table(&head, span, false);
                let sid = self.set(tid, head.names[1], object == "map", span, true);
                self.set_body(sid, body, cmd);
            }
            ("add" | "create", "element") => {
                let tid = self.table(&head, span, false);
                let sid = self.set(tid, head.names[1], false, span, false);
                if let Some(elements) = self.brace_elements(body, cmd) {
                    let set = &mut self.rs.sets[sid.index()];
                    set.is_map |= elements.iter().any(|e| e.value.is_some());
                    set.elements.extend(elements);
                }
            }
            ("flush" | "delete" | "destroy", _) => self.remove(&head, body, cmd),
            _ => self.invalid(
                cmd,
                format!("`{} {object}` is not an nft command", head.verb),
                "unknown command",
            ),
        }
    }

    fn table(&mut self, head: &Head<'a>, span: Span, declared: bool) -> TableId {
        self.table_named(head.family, head.family_word, head.names[0], span, declared)
    }

    /// The table `family name`, created (spanning `span`) when there is none; `declared`: the
    /// command declares it, and it spans that command.
    pub(crate) fn table_named(
        &mut self,
        family: Option<Family>,
        family_word: Option<&'a str>,
        name: &'a str,
        span: Span,
        declared: bool,
    ) -> TableId {
        let key = (family, name);
        if let Some(&tid) = self.tables.get(&key) {
            if declared {
                self.rs.tables[tid.index()].span = span;
            }
            return tid;
        }
        let tid = TableId(self.rs.tables.len() as u32);
        self.deleted.push(false);
        self.rs.tables.push(Table {
            family,
            family_word,
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
        self.tables.insert(key, tid);
        tid
    }

    pub(crate) fn chain(
        &mut self,
        tid: TableId,
        name: &'a str,
        span: Span,
        declared: bool,
    ) -> ChainId {
        if let Some(&cid) = self.chains.get(&(tid, name)) {
            if declared {
                self.rs.chains[cid.index()].span = span;
            }
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
        cid
    }

    pub(crate) fn set(
        &mut self,
        tid: TableId,
        name: &'a str,
        is_map: bool,
        span: Span,
        declared: bool,
    ) -> SetId {
        if let Some(&sid) = self.sets.get(&(tid, name)) {
            let set = &mut self.rs.sets[sid.index()];
            if declared {
                set.span = span;
                set.is_map = is_map;
            }
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

    /// The `;`-separated groups of a `{ ... }` body (without the braces).
    fn groups<'b>(text: &str, body: &'b [Token]) -> Vec<&'b [Token]> {
        let inner = match body {
            [open, inner @ .., close]
                if open.kind(text) == Kind::LBrace && close.kind(text) == Kind::RBrace =>
            {
                inner
            }
            _ => return Vec::new(),
        };
        let mut out = Vec::new();
        let mut depth = 0u32;
        let mut from = 0;
        for (i, t) in inner.iter().enumerate() {
            match t.kind(text) {
                Kind::LBrace => depth += 1,
                Kind::RBrace => depth = depth.saturating_sub(1),
                Kind::Semi if depth == 0 => {
                    if i > from {
                        out.push(&inner[from..i]);
                    }
                    from = i + 1;
                }
                _ => {}
            }
        }
        if inner.len() > from {
            out.push(&inner[from..]);
        }
        out
    }

    /// True when `body` is empty or one closed `{ ... }`; reports it otherwise.
    fn body_ok(&mut self, body: &[Token], cmd: &[Token]) -> bool {
        let closed = match body {
            [] => true,
            [open, .., close] => {
                open.kind(self.text) == Kind::LBrace && close.kind(self.text) == Kind::RBrace && {
                    let mut depth = 0i64;
                    body.iter().all(|t| {
                        match t.kind(self.text) {
                            Kind::LBrace => depth += 1,
                            Kind::RBrace => depth -= 1,
                            _ => {}
                        }
                        depth >= 0
                    }) && depth == 0
                }
            }
            _ => false,
        };
        if !closed {
            self.invalid(
                cmd,
                "the command's `{ ... }` is missing or does not close".into(),
                "expected one `{ ... }` after the name",
            );
        }
        closed
    }

    fn words(&self, toks: &[Token]) -> Vec<&'a str> {
        toks.iter()
            .filter(|t| t.kind(self.text) == Kind::Word)
            .map(|t| self.s(*t))
            .collect()
    }

    fn string(&self, toks: &[Token]) -> Option<&'a str> {
        toks.iter()
            .find(|t| t.kind(self.text) == Kind::Str)
            .map(|t| unquote(self.s(*t)))
    }

    fn table_body(&mut self, tid: TableId, body: &[Token]) {
        for g in Self::groups(self.text, body) {
            match self.s(g[0]) {
                "comment" => self.rs.tables[tid.index()].comment = self.string(g),
                "flags" => self.rs.tables[tid.index()].flags = self.words(&g[1..]),
                _ => {}
            }
        }
    }

    fn chain_body(&mut self, tid: TableId, cid: ChainId, body: &[Token]) {
        let family = self.rs.tables[tid.index()].family;
        for g in Self::groups(self.text, body) {
            let span = Span {
                start: g[0].start,
                end: g[g.len() - 1].end,
            };
            match self.s(g[0]) {
                "type" => {
                    let (mut kind, mut hook, mut device, mut priority) = ("", "", None, None);
                    let mut i = 0;
                    while i < g.len() {
                        let w = self.s(g[i]);
                        let next = g.get(i + 1).map(|t| self.s(*t));
                        match (w, next) {
                            ("type", Some(v)) => kind = v,
                            ("hook", Some(v)) => hook = v,
                            ("device", Some(v)) => device = Some(v),
                            ("priority", Some(_)) => {
                                let words = &g[i + 1..];
                                let text = &self.text
                                    [words[0].start as usize..words[words.len() - 1].end as usize];
                                let parts = self.words(words);
                                priority = Some(Priority {
                                    text,
                                    value: priority_value(family, &parts),
                                });
                                break;
                            }
                            _ => {
                                i += 1;
                                continue;
                            }
                        }
                        i += 2;
                    }
                    let old_policy = self.rs.chains[cid.index()]
                        .base
                        .as_ref()
                        .and_then(|b| b.policy);
                    self.rs.chains[cid.index()].base = Some(Box::new(BaseChain {
                        kind,
                        hook,
                        device,
                        priority: priority.unwrap_or(Priority {
                            text: "",
                            value: None,
                        }),
                        policy: old_policy,
                        span,
                    }));
                }
                "policy" => {
                    let policy = g.get(1).map(|t| self.s(*t));
                    if let Some(base) = self.rs.chains[cid.index()].base.as_mut() {
                        base.policy = policy;
                    }
                }
                "comment" => self.rs.chains[cid.index()].comment = self.string(g),
                _ => {}
            }
        }
    }

    fn set_body(&mut self, sid: SetId, body: &[Token], cmd: &[Token]) {
        if !self.body_ok(body, cmd) {
            return;
        }
        for g in Self::groups(self.text, body) {
            let w = self.s(g[0]);
            match w {
                "type" | "typeof" => {
                    let words = self.words(&g[1..]);
                    let (key, data) = match words.iter().position(|w| *w == ":") {
                        Some(c) => (&words[..c], Some(&words[c + 1..])),
                        None => (&words[..], None),
                    };
                    let parts = |ws: &[&'a str]| -> Vec<&'a str> {
                        ws.iter().copied().filter(|w| *w != ".").collect()
                    };
                    self.rs.sets[sid.index()].key_type = Some(SetType {
                        typeof_: w == "typeof",
                        key: parts(key),
                        data: data.map(parts),
                    });
                }
                "flags" => self.rs.sets[sid.index()].flags = self.words(&g[1..]),
                "timeout" => self.rs.sets[sid.index()].timeout = g.get(1).map(|t| self.s(*t)),
                "size" => self.rs.sets[sid.index()].size = g.get(1).map(|t| self.s(*t)),
                "comment" => self.rs.sets[sid.index()].comment = self.string(g),
                "elements" => {
                    let open = g.iter().position(|t| t.kind(self.text) == Kind::LBrace);
                    if let Some(open) = open {
                        let elements = self.brace_elements(&g[open..], cmd).unwrap_or_default();
                        self.rs.sets[sid.index()].elements.extend(elements);
                    }
                }
                _ => {
                    let words = self.words(g);
                    self.rs.sets[sid.index()].properties.push(words);
                }
            }
        }
    }

    /// The elements of `{ ... }` (the whole of `body`).
    fn brace_elements(&mut self, body: &[Token], cmd: &[Token]) -> Option<Vec<Element<'a>>> {
        if body.is_empty() || !self.body_ok(body, cmd) {
            if body.is_empty() {
                self.invalid(
                    cmd,
                    "elements without `{ ... }`".into(),
                    "expected `{ ... }`",
                );
            }
            return None;
        }
        let inner = &body[1..body.len() - 1];
        Some(Cur::new(self.text, inner, &mut self.diags).elements(false))
    }

    fn rule(&mut self, cid: ChainId, body: &[Token], span: Span, insert: bool) {
        let mut body = body;
        // `add rule ... CHAIN position N ...`: where the rule goes is not modelled.
        if let [p, n, rest @ ..] = body
            && matches!(self.s(*p), "position" | "handle" | "index")
            && self.s(*n).bytes().all(|b| b.is_ascii_digit())
        {
            body = rest;
        }
        let (text, diags) = (self.text, &mut self.diags);
        let statements = self.rs.read_statements(body.len(), |out| {
            Cur::new(text, body, diags).statements_into(out)
        });
        let rid = RuleId(self.rs.rules.len() as u32);
        self.rs.rules.push(Rule {
            chain: cid,
            span,
            handle: None,
            statements,
            _text: std::marker::PhantomData,
        });
        let rules = &mut self.rs.chains[cid.index()].rules.to_mut();
        if insert {
            rules.insert(0, rid);
        } else {
            rules.push(rid);
        }
    }

    /// `flush`, `delete`, `destroy` of a table, chain, set, map or elements.
    fn remove(&mut self, head: &Head<'a>, body: &[Token], cmd: &[Token]) {
        let Some(&tid) = self.tables.get(&(head.family, head.names[0])) else {
            return;
        };
        let flush = head.verb == "flush";
        match head.object {
            "table" if flush => {
                for c in self.rs.tables[tid.index()].chains.clone() {
                    self.rs.chains[c.index()].rules.to_mut().clear();
                }
            }
            "table" => {
                self.deleted[tid.index()] = true;
                self.tables.remove(&(head.family, head.names[0]));
                self.chains.retain(|(t, _), _| *t != tid);
                self.sets.retain(|(t, _), _| *t != tid);
            }
            "chain" => {
                if let Some(&cid) = self.chains.get(&(tid, head.names[1])) {
                    self.rs.chains[cid.index()].rules.to_mut().clear();
                    if !flush {
                        self.chains.remove(&(tid, head.names[1]));
                        self.rs.tables[tid.index()].chains.retain(|c| *c != cid);
                    }
                }
            }
            "set" | "map" => {
                if let Some(&sid) = self.sets.get(&(tid, head.names[1])) {
                    self.rs.sets[sid.index()].elements.clear();
                    if !flush {
                        self.sets.remove(&(tid, head.names[1]));
                        self.rs.tables[tid.index()].sets.retain(|s| *s != sid);
                    }
                }
            }
            "element" if !flush => {
                let Some(&sid) = self.sets.get(&(tid, head.names[1])) else {
                    return;
                };
                let Some(gone) = self.brace_elements(body, cmd) else {
                    return;
                };
                let keys: Vec<serde_json::Value> = gone
                    .iter()
                    .map(|e| serde_json::to_value(&e.key).unwrap_or_default())
                    .collect();
                self.rs.sets[sid.index()].elements.retain(|e| {
                    let key = serde_json::to_value(&e.key).unwrap_or_default();
                    !keys.contains(&key)
                });
            }
            // `delete rule ... handle N`: the form has no handles to match.
            _ => {}
        }
    }
}

/// Drops what was deleted or flushed: keeps the tables not `deleted`, their chains and sets in
/// order, and the rules the chains still hold, renumbering ids.
fn compact<'a>(rs: Ruleset<'a>, deleted: &[bool]) -> Ruleset<'a> {
    // Rules keep their statement ranges: the statements stay where they were read.
    let mut out = Ruleset {
        text: rs.text,
        statements: rs.statements,
        ..Ruleset::default()
    };
    let mut chains: Vec<Option<Chain<'_>>> = rs.chains.into_iter().map(Some).collect();
    let mut sets: Vec<Option<Set<'_>>> = rs.sets.into_iter().map(Some).collect();
    let mut rules: Vec<Option<Rule<'_>>> = rs.rules.into_iter().map(Some).collect();
    for (i, mut table) in rs.tables.into_iter().enumerate() {
        if deleted.get(i).copied().unwrap_or(false) {
            continue;
        }
        let tid = TableId(out.tables.len() as u32);
        for c in std::mem::take(&mut table.chains) {
            let Some(mut chain) = chains[c.index()].take() else {
                continue;
            };
            let cid = ChainId(out.chains.len() as u32);
            chain.table = tid;
            for &r in std::mem::take(&mut chain.rules).iter() {
                if let Some(mut rule) = rules[r.index()].take() {
                    rule.chain = cid;
                    chain.rules.to_mut().push(RuleId(out.rules.len() as u32));
                    out.rules.push(rule);
                }
            }
            out.chains.push(chain);
            table.chains.push(cid);
        }
        for s in std::mem::take(&mut table.sets) {
            if let Some(mut set) = sets[s.index()].take() {
                set.table = tid;
                table.sets.push(SetId(out.sets.len() as u32));
                out.sets.push(set);
            }
        }
        out.tables.push(table);
    }
    out
}
