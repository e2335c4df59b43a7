//! The block reader: tables, chains, sets and maps over the token stream, with recovery.
//!
//! Lines outside every block are stray text (`RL151`) unless they open a `chain`/`set`/`map`
//! block, which then goes into one headerless table (`RL155`). Inside a block, a line that starts
//! another `table` (or, inside a chain or set, a sibling `chain`/`set`/`map`) closes the blocks
//! that are still open: the innermost reports `RL153` once, the others are marked not closed.

use crate::codes;
use crate::lexer::{self, Kind, Token};
use crate::model::{
    BaseChain, Chain, ChainId, Family, Object, Priority, Rule, RuleList, Ruleset, Set, SetId,
    SetType, Table, TableId, standard_priority,
};
use crate::stmt::{Cur, unquote};
use rulelint_parser::{Diagnostic, Span};

/// What [`parse`] returns: the ruleset and what was wrong with the text.
#[derive(Clone, Debug)]
pub struct Parsed<'a> {
    /// Everything that could be read.
    pub ruleset: Ruleset<'a>,
    /// Problems found in the text, sorted by span, then code.
    pub diagnostics: Vec<Diagnostic>,
}

/// Reads `nft list ruleset` text (with or without `-a` handles, whole or partial, with prose
/// around it). Never fails, never panics; time and memory are linear in the text.
///
/// ```
/// use rulelint_nft::{parse, Family, Stmt};
/// let text = "table ip kube-proxy {\n\tchain nat-prerouting {\n\t\t\
///             type nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}\n\
///             \tchain services {\n\t}\n}\n";
/// let parsed = parse(text);
/// assert!(parsed.diagnostics.is_empty());
/// let set = &parsed.ruleset;
/// let table = set.table(Family::Ip, "kube-proxy").unwrap();
/// let chain = set.chain_in(table, "nat-prerouting").unwrap();
/// let base = set.chains[chain.index()].base.as_ref().unwrap();
/// assert_eq!((base.hook, base.priority.value), ("prerouting", Some(-100)));
/// let rule = set.rules_of(chain).next().unwrap();
/// assert!(matches!(set.statements_of(rule)[0].kind, Stmt::Verdict(_)));
/// ```
pub fn parse(text: &str) -> Parsed<'_> {
    parse_knowing_tables(text, &[])
}

/// [`parse`], told where lines that open a `table` block start (`table ` at the line's first
/// byte; ascending), as a reader that split the text into sections saw them: the parse of a
/// large listing on two threads then takes the table its second half starts in from them
/// rather than searching the first half. Only a hint: the result is [`parse`]'s whatever the
/// offsets are.
///
/// An `nft -f` script that goes on with commands after its blocks (`add element ...`), or
/// opens a table twice, is read as one transaction ([`crate::parse_transaction`]).
pub fn parse_knowing_tables<'a>(text: &'a str, table_lines: &[usize]) -> Parsed<'a> {
    let parsed = parse_listing(text, table_lines);
    if crate::script::reads_as_script(text, &parsed) {
        return crate::transaction::parse_transaction(text);
    }
    parsed
}

/// [`parse_knowing_tables`] of a listing.
fn parse_listing<'a>(text: &'a str, table_lines: &[usize]) -> Parsed<'a> {
    let mut diagnostics = Vec::new();
    if text.len() >= u32::MAX as usize {
        diagnostics.push(
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
            diagnostics,
        };
    }
    #[cfg(not(target_arch = "wasm32"))]
    if text.len() >= crate::split::PARALLEL_PARSE_MIN_BYTES
        && let Some(parsed) = crate::split::parse_in_two(text, table_lines)
    {
        return parsed;
    }
    // WebAssembly parses on one thread: the hint has no use there.
    #[cfg(target_arch = "wasm32")]
    let _ = table_lines;
    parse_on_one_thread(text)
}

/// The block reader over `toks`, the tokens of one top-level block of an `nft -f` script
/// lexed with the whole script (so spans are the script's): what the block declares and the
/// reader's diagnostics (the lexer's are the caller's).
pub(crate) fn parse_block_tokens<'a>(
    text: &'a str,
    toks: Vec<Token>,
) -> (Ruleset<'a>, Vec<Diagnostic>) {
    let tokens = toks.len();
    let counts = lexer::Counts::default();
    let mut p = Parser::for_part(text, toks, Vec::new(), counts, tokens, (1, 1));
    p.start(None);
    let part = p.finish(0);
    (part.rs, part.diags)
}

/// [`parse`] on this thread only (as it always runs in WASM and on small texts).
pub(crate) fn parse_on_one_thread(text: &str) -> Parsed<'_> {
    parse_whole_part(text, Part::whole(text))
}

/// [`parse_on_one_thread`] a window of about `window` bytes at a time (0: the text whole);
/// `None` when a window's cut is declined (for tests).
pub(crate) fn parse_in_windows(text: &str, window: usize) -> Option<Parsed<'_>> {
    let part = Part {
        window,
        ..Part::whole(text)
    };
    if window == 0 {
        return Some(parse_whole_part(text, part));
    }
    let mut part = parse_part_windowed(text, part)?;
    part.rs.share_rule_lists();
    let mut diagnostics = part.diags;
    diagnostics.sort_by(|a, b| (a.span, a.code).cmp(&(b.span, b.code)));
    rulelint_parser::cap::cap_again_if_capped(&mut diagnostics);
    Some(Parsed {
        ruleset: part.rs,
        diagnostics,
    })
}

fn parse_whole_part<'a>(text: &'a str, part: Part<'a>) -> Parsed<'a> {
    let mut part = parse_part(text, part);
    part.rs.share_rule_lists();
    let mut diagnostics = part.diags;
    diagnostics.sort_by(|a, b| (a.span, a.code).cmp(&(b.span, b.code)));
    rulelint_parser::cap::cap_again_if_capped(&mut diagnostics);
    Parsed {
        ruleset: part.rs,
        diagnostics,
    }
}

/// Which bytes of the text one parser reads, for the two-thread parse (`split.rs`).
#[derive(Clone, Copy)]
pub(crate) struct Part<'a> {
    /// The first byte (a line start).
    pub from: usize,
    /// The end (a line start or the text's end).
    pub to: usize,
    /// Stop at the table body's loop when it reaches the token that starts at this byte.
    pub stop_at: Option<usize>,
    /// Start inside the body of this table (the one open where the text was split).
    pub inside: Option<OpenTable<'a>>,
    /// The stores are sized for `scale.0 / scale.1` times what this part's counts ask for
    /// (the first part sizes them for the whole text, so that merging does not copy them).
    pub scale: (usize, usize),
    /// Read a window of about this many bytes at a time ([`parse_part_windowed`]); 0: whole.
    pub window: usize,
}

impl Part<'_> {
    pub(crate) fn whole(text: &str) -> Part<'_> {
        Part {
            from: 0,
            to: text.len(),
            stop_at: None,
            inside: None,
            scale: (1, 1),
            window: window_for(text.len()),
        }
    }
}

/// The window [`parse_part`] reads a part of `bytes` in: [`WINDOW_BYTES`] from
/// [`WINDOWED_MIN_BYTES`] on, else none.
pub(crate) fn window_for(bytes: usize) -> usize {
    if bytes >= WINDOWED_MIN_BYTES {
        WINDOW_BYTES
    } else {
        0
    }
}

/// The table a part starts inside: what its header line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpenTable<'a> {
    pub family: Option<Family>,
    pub name: Option<&'a str>,
    /// The `table` keyword.
    pub open: Span,
}

/// What one parser read from its part.
pub(crate) struct PartParsed<'a> {
    pub rs: Ruleset<'a>,
    /// Lexer diagnostics first (`lexed` of them), then the parser's; not sorted.
    pub diags: Vec<Diagnostic>,
    pub lexed: usize,
    /// The table whose body reached [`Part::stop_at`], when it did so at a block boundary.
    pub stopped: Option<TableId>,
    /// Whether a `flags` line was read into table 0 (the [`Part::inside`] table).
    pub inside_flags_written: bool,
}

/// From this size a part is lexed and parsed a window at a time ([`parse_part_windowed`]).
const WINDOWED_MIN_BYTES: usize = 1 << 20;

/// About how much text one window holds: its tokens (about one per ten bytes, eight bytes
/// each) stay in the core's cache instead of making a buffer the size of the text (5.5 MB
/// reserved per part of a 5,000-Service node, written once and read once).
const WINDOW_BYTES: usize = 256 << 10;

pub(crate) fn parse_part<'a>(text: &'a str, part: Part<'a>) -> PartParsed<'a> {
    if part.window > 0
        && let Some(parsed) = parse_part_windowed(text, part)
    {
        return parsed;
    }
    let mut diagnostics = Vec::new();
    let (toks, counts) = lexer::tokenize_range(text, part.from, part.to, &mut diagnostics);
    let lexed = diagnostics.len();
    let stop_at = part.stop_at.map_or(usize::MAX, |b| {
        toks.partition_point(|t| (t.start as usize) < b)
    });
    let tokens = toks.len();
    let mut p = Parser::for_part(text, toks, diagnostics, counts, tokens, part.scale);
    p.stop_at = stop_at;
    p.start(part.inside);
    p.finish(lexed)
}

/// [`parse_part`] a window at a time: the part is cut at lines that open a `chain`, `set` or
/// `map` one tab in ([`crate::split::member_line_from`]), each window is lexed into one reused
/// token buffer, and the parser stops at the window's cut in the body of its table and goes on
/// in that table with the next window's tokens, as the two-thread parse's second part does
/// (`split.rs`, same reasoning: tokens never cross a line, and no look-ahead crosses a line that
/// opens a block; each window holds its cut's line too). Same ruleset and diagnostics as one
/// window: lexer diagnostics first, then the parser's. `None` when a cut was not met at a
/// block boundary of a table (the caller then reads the part whole).
fn parse_part_windowed<'a>(text: &'a str, part: Part<'a>) -> Option<PartParsed<'a>> {
    let limit = part.stop_at.unwrap_or(part.to).min(part.to);
    let mut cut = crate::split::member_line_from(text, part.from + part.window, limit)?;
    let mut lexed = Vec::new();
    let mut toks = Vec::with_capacity(part.window.min(WINDOW_BYTES) / 4);
    let stop_at = lex_window(text, part.from, cut, &mut toks, &mut lexed);
    // The stores are sized for the whole part: its lines and block headers counted ahead, its
    // tokens extrapolated from the first window's.
    let counts = lexer::estimate_counts(&text.as_bytes()[part.from..part.to]);
    let tokens = stop_at.saturating_mul(part.to - part.from) / (cut - part.from).max(1);
    let mut p = Parser::for_part(text, toks, Vec::new(), counts, tokens, part.scale);
    p.stop_at = stop_at;
    p.start(part.inside);
    loop {
        let (tid, open) = p.stopped.take().zip(p.stopped_open)?;
        let next = crate::split::member_line_from(text, cut + part.window, limit);
        p.toks.clear();
        p.pos = 0;
        p.stop_at = match next {
            Some(next) => lex_window(text, cut, next, &mut p.toks, &mut lexed),
            None => {
                lexer::tokenize_range_into(text, cut, part.to, &mut p.toks, &mut lexed);
                part.stop_at.map_or(usize::MAX, |b| {
                    p.toks.partition_point(|t| (t.start as usize) < b)
                })
            }
        };
        p.table_rest(tid, open);
        if p.stopped.is_none() {
            p.top();
        }
        match next {
            Some(next) => cut = next,
            None => break,
        }
    }
    let count = lexed.len();
    lexed.append(&mut p.diags);
    p.diags = lexed;
    Some(p.finish(count))
}

/// Lexes `from..cut` into `toks` (cleared first), then the line at `cut` for the parser's
/// look-ahead (its diagnostics are the next window's); returns the index of the cut's token.
fn lex_window(
    text: &str,
    from: usize,
    cut: usize,
    toks: &mut Vec<Token>,
    diagnostics: &mut Vec<Diagnostic>,
) -> usize {
    toks.clear();
    lexer::tokenize_range_into(text, from, cut, toks, diagnostics);
    let stop_at = toks.len();
    let line_end =
        memchr::memchr(b'\n', &text.as_bytes()[cut..]).map_or(text.len(), |n| cut + n + 1);
    lexer::tokenize_range_into(text, cut, line_end, toks, &mut Vec::new());
    stop_at
}

/// How a block ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    /// Its `}` was read.
    Closed,
    /// The text ended inside it (reported).
    Eof,
    /// A line that starts another block at an outer level (reported).
    Interrupted,
    /// The part of the text this parser reads ends here ([`Part::stop_at`]).
    Split,
}

/// What a `table FAMILY NAME {` line declares.
pub(crate) struct TableHead<'a> {
    /// The index of its `{`.
    brace: usize,
    family_word: Option<&'a str>,
    family: Option<Family>,
    name: Option<&'a str>,
    /// A family word that is none of nft's.
    unknown_family: Option<Token>,
}

const OBJECTS: &[&str] = &[
    "flowtable",
    "counter",
    "quota",
    "ct",
    "limit",
    "secmark",
    "synproxy",
    "tunnel",
];

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    pos: usize,
    rs: Ruleset<'a>,
    diags: Vec<Diagnostic>,
    /// The token index of [`Part::stop_at`] (`usize::MAX`: none).
    stop_at: usize,
    stopped: Option<TableId>,
    /// The opening span [`Parser::table_rest`] had for the table that [`Parser::stopped`].
    stopped_open: Option<Span>,
    inside: Option<TableId>,
    inside_flags_written: bool,
    /// Where the parser's own diagnostics start in `diags` (the lexer's come first).
    own_diags: usize,
    /// How many diagnostics the next capping waits for ([`Parser::cap_diagnostics`]).
    next_cap: usize,
    /// Whether the text holds no suppression marker, once a capping asked.
    may_cap: Option<bool>,
}

impl<'a> Parser<'a> {
    /// A parser of one part's tokens (`toks`, after the lexer's `diagnostics`), its stores
    /// sized for `counts` and `tokens` of the part, scaled by [`Part::scale`].
    fn for_part(
        text: &'a str,
        toks: Vec<Token>,
        diagnostics: Vec<Diagnostic>,
        counts: lexer::Counts,
        tokens: usize,
        scale: (usize, usize),
    ) -> Parser<'a> {
        let scaled = |n: usize| n.saturating_mul(scale.0) / scale.1.max(1);
        // Every chain has a header line ending in `{`; a rule is a line that is neither a
        // block's header nor its `}` (bounds only: element lines make the rules' bound loose).
        let rules = counts.lines.saturating_sub(2 * counts.blocks);
        let mut p = Parser {
            text,
            toks,
            pos: 0,
            rs: Ruleset {
                text,
                chains: Vec::with_capacity(scaled(counts.blocks)),
                rules: Vec::with_capacity(scaled(rules)),
                ..Ruleset::default()
            },
            diags: diagnostics,
            stop_at: usize::MAX,
            stopped: None,
            stopped_open: None,
            inside: None,
            inside_flags_written: false,
            own_diags: 0,
            next_cap: 0,
            may_cap: None,
        };
        p.own_diags = p.diags.len();
        p.next_cap = p.own_diags + rulelint_parser::cap::CAP_EVERY;
        // As the iptables parser does: a large node's buffers fault 2 MiB at a time.
        rulelint_parser::huge_pages::advise(&p.rs.chains);
        rulelint_parser::huge_pages::advise(&p.rs.rules);
        // On Linux the first statement chunk of a large node is sized for a quarter of the
        // tokens (a statement takes two words or more; kube-proxy's nodes have one per six or
        // seven tokens), at most twice the text's bytes, so that its statements are one
        // advised buffer rather than thousands of small chunks each faulting page by page: the
        // pages it does not fill are never touched ([`Parser::finish`]). A small text's chunks
        // grow from a few statements: a paste of many short sections keeps each one's.
        // Elsewhere (WASM) a reserved capacity is memory taken, so chunks stay small.
        let statement = std::mem::size_of::<crate::model::Statement<'_>>();
        let first_chunk = (tokens / 4).min(text.len().saturating_mul(2) / statement);
        if cfg!(target_os = "linux") && first_chunk > crate::model::STATEMENT_CHUNK {
            let chunk: Vec<crate::model::Statement<'_>> = Vec::with_capacity(first_chunk);
            rulelint_parser::huge_pages::advise(&chunk);
            p.rs.statements
                .push(crate::model::StatementChunk::from_vec(chunk));
        }
        p
    }

    /// Reads from the start of the tokens: inside the table `inside` first, if given.
    fn start(&mut self, inside: Option<OpenTable<'a>>) {
        if let Some(open) = inside {
            let tid = self.new_table(open.family, open.name, open.open);
            self.inside = Some(tid);
            self.table_rest(tid, open.open);
        }
        if self.stopped.is_none() {
            self.top();
        }
    }

    /// What was read; the first `lexed` diagnostics are the lexer's.
    ///
    /// The stores keep what they reserved and did not fill: never touched, so it costs no page,
    /// and shrinking them to fit (in place) made a repeated parse in one process (the bench's
    /// loop) map fresh memory each time instead of reusing the heap's: 750 page faults a
    /// 5,000-Service check instead of 60.
    fn finish(self, lexed: usize) -> PartParsed<'a> {
        PartParsed {
            rs: self.rs,
            diags: self.diags,
            lexed,
            stopped: self.stopped,
            inside_flags_written: self.inside_flags_written,
        }
    }

    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).copied()
    }

    fn s(&self, t: Token) -> &'a str {
        &self.text[t.start as usize..t.end as usize]
    }

    fn word_at(&self, i: usize) -> Option<&'a str> {
        self.toks
            .get(i)
            .filter(|t| t.kind(self.text) == Kind::Word)
            .map(|t| self.s(*t))
    }

    fn skip_blank(&mut self) {
        while let Some(t) = self.peek() {
            if matches!(t.kind(self.text), Kind::Newline | Kind::Semi | Kind::Handle) {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn line_end(&self, from: usize) -> usize {
        self.toks[from..]
            .iter()
            .position(|t| t.kind(self.text) == Kind::Newline)
            .map_or(self.toks.len(), |p| from + p)
    }

    /// The end of the statement at `from`: its newline or `;`, or the `}` that closes the block
    /// it is in (`chain forward { type filter hook forward priority 0; policy drop; }`, a block
    /// on one line as `nft -f` files write them). Braces inside it (`devices = { ... }`) nest.
    fn statement_end(&self, from: usize) -> usize {
        self.end_within_block(from, true)
    }

    /// [`Self::statement_end`] that reads past `;`: the end of a line, or the `}` that closes
    /// the block it is in. A base chain's `type ...; policy ...;` is one such line.
    fn block_line_end(&self, from: usize) -> usize {
        self.end_within_block(from, false)
    }

    fn end_within_block(&self, from: usize, at_semi: bool) -> usize {
        let mut depth = 0u32;
        for (i, t) in self.toks.iter().enumerate().skip(from) {
            match t.kind(self.text) {
                Kind::Newline => return i,
                Kind::Semi if at_semi && depth == 0 => return i,
                Kind::LBrace => depth += 1,
                Kind::RBrace if depth == 0 => return i,
                Kind::RBrace => depth -= 1,
                _ => {}
            }
        }
        self.toks.len()
    }

    fn skip_statement(&mut self) {
        self.pos = self.statement_end(self.pos);
    }

    fn take_handle(&mut self) -> Option<u64> {
        let t = self.peek().filter(|t| t.kind(self.text) == Kind::Handle)?;
        self.pos += 1;
        lexer::handle_value(self.s(t).as_bytes())
    }

    /// Whether the line at `i` opens a block: `KEYWORD words... {` (then at most a handle).
    /// Returns the index of its `{`. A block may go on after its `{` on the same line, as `nft
    /// -f` files write short ones; `nft list ruleset` never does.
    fn header_brace(&self, i: usize) -> Option<usize> {
        let end = self.line_end(i);
        let brace = (i..end.min(i + 6)).find(|&j| self.toks[j].kind(self.text) == Kind::LBrace)?;
        let names_ok = self.toks[i + 1..brace]
            .iter()
            .all(|t| matches!(t.kind(self.text), Kind::Word | Kind::Str));
        // A table too: `table ip nat { chain post { ...; }; }` is one line of an `nft -f` file.
        let rest_ok = self.toks[brace + 1..end]
            .iter()
            .all(|t| t.kind(self.text) == Kind::Handle)
            || self.word_at(i).is_some();
        (brace > i + 1 && names_ok && rest_ok).then_some(brace)
    }

    /// `table ...{`, `chain X {`, `set X {` or `map X {` at `i`.
    fn block_kw(&self, i: usize) -> Option<&'a str> {
        let w = self.word_at(i)?;
        (matches!(w, "table" | "chain" | "set" | "map") && self.header_brace(i).is_some())
            .then_some(w)
    }

    fn at_line_start(&self, i: usize) -> bool {
        i == 0 || self.toks[i - 1].kind(self.text) == Kind::Newline
    }

    fn unclosed(&mut self, what: String, open: Span) {
        self.diags.push(
            Diagnostic::new(
                &codes::UNCLOSED_BLOCK,
                open,
                format!("{what} is not closed"),
            )
            .with_label("this block has no matching `}`")
            .with_help("the paste looks cut short: paste the whole output of `nft list ruleset`"),
        );
    }

    // ---- top level ----

    fn top(&mut self) {
        let mut implicit: Option<TableId> = None;
        let mut stray: Option<Span> = None;
        loop {
            self.skip_blank();
            let Some(t) = self.peek() else { break };
            let kw = self.block_kw(self.pos);
            match (t.kind(self.text), kw) {
                (_, Some("table")) => {
                    self.flush_stray(&mut stray);
                    implicit = None;
                    self.table();
                    if self.stopped.is_some() {
                        return;
                    }
                }
                (_, Some(kw)) => {
                    self.flush_stray(&mut stray);
                    let tid = match implicit {
                        Some(tid) => tid,
                        None => {
                            let tid = self.new_table(None, None, t.span());
                            self.diags.push(
                                Diagnostic::new(
                                    &codes::HEADERLESS_BLOCK,
                                    t.span(),
                                    format!("`{kw}` block without its table"),
                                )
                                .with_label("this block is outside any `table { }`")
                                .with_help("paste the whole table (`nft list table ip kube-proxy`) so family and table are known"),
                            );
                            implicit = Some(tid);
                            tid
                        }
                    };
                    self.member(tid, kw);
                    let end = self.last_end();
                    let table = &mut self.rs.tables[tid.index()];
                    table.span.end = table.span.end.max(end);
                }
                (Kind::RBrace, _) => {
                    self.flush_stray(&mut stray);
                    self.diags.push(
                        Diagnostic::new(&codes::UNMATCHED_CLOSE, t.span(), "`}` closes nothing")
                            .with_label("no block is open here")
                            .with_help("copy the block from its `table` line to its last `}`"),
                    );
                    self.pos += 1;
                }
                // `flush ruleset` above the tables: how `nft -f` files (`/etc/nftables.conf`)
                // start; it changes nothing in what the text declares.
                (Kind::Word, None)
                    if self.s(t) == "flush"
                        && self.word_at(self.pos + 1) == Some("ruleset")
                        && self.line_end(self.pos) == self.pos + 2 =>
                {
                    self.flush_stray(&mut stray);
                    self.pos += 2;
                }
                (Kind::Word, None)
                    if self.s(t) == "include"
                        && self
                            .toks
                            .get(self.pos + 1)
                            .is_some_and(|n| n.kind(self.text) == Kind::Str) =>
                {
                    self.flush_stray(&mut stray);
                    let end = self.line_end(self.pos);
                    let span = t.span().cover(self.toks[end - 1].span());
                    self.diags.push(codes::include_not_read(span));
                    self.pos = end;
                }
                // `define NAME = value` in such a file names a value for `$NAME` in its rules,
                // which stay opaque: it declares nothing in the ruleset.
                (Kind::Word, None)
                    if matches!(self.s(t), "define" | "redefine" | "undefine")
                        && self.word_at(self.pos + 1).is_some() =>
                {
                    self.flush_stray(&mut stray);
                    self.pos = self.line_end(self.pos);
                }
                _ => {
                    let end = self.line_end(self.pos);
                    let last = self.toks[end - 1].end;
                    let span = Span {
                        start: t.start,
                        end: last,
                    };
                    stray = Some(stray.map_or(span, |s| s.cover(span)));
                    self.pos = end;
                }
            }
        }
        self.flush_stray(&mut stray);
    }

    fn last_end(&self) -> u32 {
        self.toks[..self.pos]
            .iter()
            .rev()
            .find(|t| t.kind(self.text) != Kind::Newline)
            .map_or(0, |t| t.end)
    }

    fn flush_stray(&mut self, stray: &mut Option<Span>) {
        if let Some(span) = stray.take() {
            self.diags.push(
                Diagnostic::new(&codes::STRAY_TEXT, span, "text outside any table")
                    .with_label("not part of an `nft list ruleset` listing")
                    .with_help(
                        "keep only the output of `nft list ruleset`; rulelint skips these lines",
                    ),
            );
        }
    }

    fn new_table(&mut self, family: Option<Family>, name: Option<&'a str>, span: Span) -> TableId {
        let tid = TableId(self.rs.tables.len() as u32);
        self.rs.tables.push(Table {
            family,
            family_word: None,
            name,
            span,
            handle: None,
            comment: None,
            flags: Vec::new(),
            chains: Vec::new(),
            sets: Vec::new(),
            objects: Vec::new(),
            closed: false,
        });
        tid
    }

    // ---- table ----

    fn table(&mut self) {
        let kw = self.toks[self.pos];
        let head = self.table_head(self.pos);
        if let Some(fam) = head.unknown_family {
            self.diags.push(
                Diagnostic::new(
                    &codes::UNKNOWN_FAMILY,
                    fam.span(),
                    format!("unknown table family `{}`", self.s(fam)),
                )
                .with_label("not ip, ip6, inet, arp, bridge or netdev")
                .with_help("nft families are ip, ip6, inet, arp, bridge and netdev"),
            );
        }
        let tid = self.new_table(head.family, head.name, kw.span());
        self.rs.tables[tid.index()].family_word = head.family_word;
        self.pos = head.brace + 1;
        self.rs.tables[tid.index()].handle = self.take_handle();
        self.table_rest(tid, kw.span());
    }

    /// What the `table ... {` line at `i` declares (`i` must start a block: [`Self::block_kw`]).
    fn table_head(&self, i: usize) -> TableHead<'a> {
        let brace = self.header_brace(i).unwrap_or(i + 1).max(i + 1);
        let words = &self.toks[(i + 1).min(brace)..brace];
        let family_word = (words.len() >= 2).then(|| self.s(words[0]));
        let (family, name, unknown_family) = match words {
            [name] => (Some(Family::Ip), Some(*name), None),
            [fam, name, ..] => {
                let f = Family::from_word(self.s(*fam));
                (f, Some(*name), f.is_none().then_some(*fam))
            }
            [] => (Some(Family::Ip), None, None),
        };
        TableHead {
            brace,
            family_word,
            family,
            name: name.map(|t| unquote(self.s(t))),
            unknown_family,
        }
    }

    /// The table's body from the cursor (after its header), then its end.
    fn table_rest(&mut self, tid: TableId, open: Span) {
        let table = &self.rs.tables[tid.index()];
        let label = format!(
            "table {} {}",
            table.family.map_or("?", Family::as_str),
            table.name.unwrap_or("?")
        );
        let end = self.table_body(tid, label, open);
        if end == End::Split {
            return;
        }
        let last = self.last_end();
        let table = &mut self.rs.tables[tid.index()];
        table.closed = end == End::Closed;
        table.span.end = last;
    }

    fn table_body(&mut self, tid: TableId, label: String, open: Span) -> End {
        loop {
            self.skip_blank();
            if self.pos == self.stop_at {
                self.stopped = Some(tid);
                self.stopped_open = Some(open);
                return End::Split;
            }
            let Some(t) = self.peek() else {
                self.unclosed(format!("`{label}`"), open);
                return End::Eof;
            };
            if t.kind(self.text) == Kind::RBrace {
                self.pos += 1;
                return End::Closed;
            }
            match self.block_kw(self.pos) {
                Some("table") => {
                    self.unclosed(format!("`{label}`"), open);
                    return End::Interrupted;
                }
                Some(kw) => match self.member(tid, kw) {
                    End::Eof => return End::Eof,
                    End::Interrupted if self.block_kw(self.pos) == Some("table") => {
                        return End::Interrupted;
                    }
                    _ => continue,
                },
                None => {}
            }
            let w = self.word_at(self.pos);
            match w {
                Some("comment") => {
                    if let Some(s) = self
                        .toks
                        .get(self.pos + 1)
                        .filter(|t| t.kind(self.text) == Kind::Str)
                    {
                        self.rs.tables[tid.index()].comment = Some(unquote(self.s(*s)));
                    }
                    self.skip_statement();
                }
                Some("flags") => {
                    let flags = self.statement_words(self.pos + 1);
                    self.rs.tables[tid.index()].flags = flags;
                    self.inside_flags_written |= self.inside == Some(tid);
                    self.skip_statement();
                }
                Some(w) if OBJECTS.contains(&w) && self.header_brace(self.pos).is_some() => {
                    if self.object(tid) == End::Eof {
                        return End::Eof;
                    }
                }
                _ => {
                    self.invalid_line("table");
                }
            }
        }
    }

    /// Words of the statement from `i` ([`Self::statement_end`]), commas dropped.
    fn statement_words(&self, i: usize) -> Vec<&'a str> {
        let end = self.statement_end(i);
        self.toks[i.min(end)..end]
            .iter()
            .filter(|t| t.kind(self.text) == Kind::Word)
            .map(|t| self.s(*t))
            .collect()
    }

    fn invalid_line(&mut self, block: &str) {
        let start = self.toks[self.pos].start;
        // At least one token: the callers stand on a word, but a skip must always move on.
        let end_i = self.block_line_end(self.pos).max(self.pos + 1);
        let end = self.toks[end_i - 1].end;
        self.pos = end_i;
        if end_i == self.toks.len() && !self.text.ends_with('\n') {
            // The last line of a text that stops inside a block, cut mid-line: the open
            // block's `RL153` already says the paste is cut short.
            return;
        }
        self.diags.push(
            Diagnostic::new(
                &codes::INVALID_LINE,
                Span { start, end },
                format!("line is not part of a {block} block"),
            )
            .with_label(format!("not a property or member of this {block}"))
            .with_help(
                "paste the ruleset as `nft list ruleset` prints it; rulelint skips this line",
            ),
        );
        self.pos = end_i;
        if self.diags.len() >= self.next_cap {
            self.cap_diagnostics();
        }
    }

    /// Keeps of each code the parser's first diagnostics a report shows and one that counts
    /// the rest (`cap_per_code`), so a text of stray lines (200k lines of `{`: 860 bytes each)
    /// does not hold one diagnostic per line. Not in a text with a suppression marker: a
    /// suppression removes findings before the report caps them.
    fn cap_diagnostics(&mut self) {
        self.next_cap = rulelint_parser::cap::cap_tail(
            self.text,
            &mut self.may_cap,
            &mut self.diags,
            self.own_diags,
        );
    }

    /// A named object kept as text; skips its balanced braces.
    fn object(&mut self, tid: TableId) -> End {
        let start = self.pos;
        let brace = self.header_brace(start).unwrap_or(start);
        let kind_end = brace.saturating_sub(1).max(start + 1);
        let kind =
            &self.text[self.toks[start].start as usize..self.toks[kind_end - 1].end as usize];
        let name = self
            .word_at(kind_end)
            .or(self.word_at(brace - 1))
            .unwrap_or("");
        let mut depth = 0u32;
        let mut i = brace;
        while i < self.toks.len() {
            match self.toks[i].kind(self.text) {
                Kind::LBrace => depth += 1,
                Kind::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if i == self.toks.len() {
            self.pos = i;
            self.unclosed(format!("`{kind} {name}`"), self.toks[start].span());
            return End::Eof;
        }
        let text = &self.text[self.toks[start].start as usize..self.toks[i].end as usize];
        self.rs.tables[tid.index()].objects.push(Object {
            kind,
            name: unquote(name),
            text,
        });
        self.pos = i + 1;
        End::Closed
    }

    /// A `chain`/`set`/`map` block at the cursor.
    fn member(&mut self, tid: TableId, kw: &str) -> End {
        let kw_tok = self.toks[self.pos];
        let brace = self.header_brace(self.pos).unwrap_or(self.pos + 1);
        let name = self.toks[self.pos + 1..brace]
            .last()
            .map_or("", |t| unquote(self.s(*t)));
        self.pos = brace + 1;
        let handle = self.take_handle();
        if kw == "chain" {
            let cid = ChainId(self.rs.chains.len() as u32);
            self.rs.chains.push(Chain {
                table: tid,
                name,
                span: kw_tok.span(),
                handle,
                comment: None,
                base: None,
                rules: RuleList::default(),
                closed: false,
            });
            self.rs.tables[tid.index()].chains.push(cid);
            let first_rule = self.rs.rules.len();
            let end = self.chain_body(tid, cid, name, kw_tok.span());
            let last = self.last_end();
            let chain = &mut self.rs.chains[cid.index()];
            // A chain's rules are read one after the other: a range of the ruleset's shared ids
            // rather than an allocation per chain (`Ruleset::share_rule_lists`).
            chain.rules = RuleList::run(first_rule, self.rs.rules.len());
            chain.closed = end == End::Closed;
            chain.span.end = last;
            end
        } else {
            let sid = SetId(self.rs.sets.len() as u32);
            self.rs.sets.push(Set {
                table: tid,
                is_map: kw == "map",
                name,
                span: kw_tok.span(),
                handle,
                key_type: None,
                flags: Vec::new(),
                timeout: None,
                size: None,
                comment: None,
                properties: Vec::new(),
                elements: Vec::new(),
                closed: false,
            });
            self.rs.tables[tid.index()].sets.push(sid);
            let end = self.set_body(sid, kw, name, kw_tok.span());
            let last = self.last_end();
            let set = &mut self.rs.sets[sid.index()];
            set.closed = end == End::Closed;
            set.span.end = last;
            end
        }
    }

    /// A line inside a chain or set that starts another block closes it.
    fn interrupted_by_block(&self) -> bool {
        self.block_kw(self.pos).is_some()
    }

    // ---- chain ----

    fn chain_body(&mut self, tid: TableId, cid: ChainId, name: &str, open: Span) -> End {
        loop {
            self.skip_blank();
            let Some(t) = self.peek() else {
                self.unclosed(format!("chain `{name}`"), open);
                return End::Eof;
            };
            if t.kind(self.text) == Kind::RBrace {
                self.pos += 1;
                return End::Closed;
            }
            if self.interrupted_by_block() {
                self.unclosed(format!("chain `{name}`"), open);
                return End::Interrupted;
            }
            // The rules read last are this chain's, if it has any.
            let no_rules = self.rs.rules.last().is_none_or(|r| r.chain != cid);
            match self.word_at(self.pos) {
                Some("type")
                    if self.statement_words(self.pos).contains(&"hook")
                        || matches!(
                            self.word_at(self.pos + 1),
                            Some("filter" | "nat" | "route")
                        ) =>
                {
                    self.base_chain(tid, cid);
                    continue;
                }
                Some("policy") if self.rs.chains[cid.index()].base.is_some() => {
                    let policy = self.word_at(self.pos + 1);
                    if let Some(base) = self.rs.chains[cid.index()].base.as_mut() {
                        base.policy = policy;
                    }
                    self.skip_statement();
                    continue;
                }
                Some("comment") if no_rules => {
                    let end = self.statement_end(self.pos);
                    let rest = &self.toks[self.pos + 1..end];
                    if let [s, tail @ ..] = rest
                        && s.kind(self.text) == Kind::Str
                        && tail.is_empty()
                    {
                        self.rs.chains[cid.index()].comment = Some(unquote(self.s(*s)));
                        self.pos = end;
                        continue;
                    }
                }
                _ => {}
            }
            self.rule(cid);
        }
    }

    fn base_chain(&mut self, tid: TableId, cid: ChainId) {
        let start = self.pos;
        let mut end = self.block_line_end(start);
        if self
            .toks
            .get(end)
            .is_some_and(|t| t.kind(self.text) == Kind::RBrace)
        {
            // A chain on one line: its rules follow the declaration's statements there.
            end = self.declaration_end(start, end);
        }
        let (mut kind, mut hook, mut device, mut policy) = (None, None, None, None);
        let mut priority: Option<(usize, usize)> = None;
        let mut unknown: Option<Token> = None;
        let mut i = start;
        while i < end {
            let t = self.toks[i];
            let w = if t.kind(self.text) == Kind::Word {
                self.s(t)
            } else {
                ""
            };
            let next = self.toks.get(i + 1).filter(|_| i + 1 < end).copied();
            let next_word = next.filter(|n| matches!(n.kind(self.text), Kind::Word | Kind::Str));
            match (t.kind(self.text), w) {
                (Kind::Semi | Kind::Handle, _) => i += 1,
                (_, "type" | "hook" | "policy" | "device") => {
                    let v = next_word.map(|n| self.s(n)).filter(|v| {
                        !matches!(
                            *v,
                            "type" | "hook" | "policy" | "device" | "devices" | "priority"
                        )
                    });
                    if v.is_none() {
                        // The value is missing: reported below as a missing part.
                        i += 1;
                        continue;
                    }
                    match w {
                        "type" => kind = v,
                        "hook" => hook = v,
                        "policy" => policy = v,
                        _ => device = v,
                    }
                    i += 2;
                }
                (_, "devices") => {
                    let mut j = i + 1;
                    while j < end && self.toks[j].kind(self.text) != Kind::RBrace {
                        j += 1;
                    }
                    let last = j.min(end - 1);
                    device =
                        Some(&self.text[self.toks[i].start as usize..self.toks[last].end as usize]);
                    i = last + 1;
                }
                (_, "priority") => {
                    let mut j = i + 1;
                    while j < end && self.toks[j].kind(self.text) == Kind::Word {
                        j += 1;
                    }
                    priority = Some((i + 1, j));
                    i = j;
                }
                _ => {
                    unknown.get_or_insert(t);
                    i += 1;
                }
            }
        }
        self.pos = end;
        let line = Span {
            start: self.toks[start].start,
            end: self.toks[end - 1].end,
        };
        let family = self.rs.tables[tid.index()].family;
        // The last line of a text cut mid-line: the open chain's `RL153` says it all.
        let cut = end == self.toks.len() && !self.text.ends_with('\n');
        let prio = priority.filter(|(a, b)| a < b).map(|(a, b)| {
            let text = &self.text[self.toks[a].start as usize..self.toks[b - 1].end as usize];
            let words: Vec<&str> = self.toks[a..b].iter().map(|t| self.s(*t)).collect();
            let value = priority_value(family, &words);
            if value.is_none() && !cut {
                self.diags.push(
                    Diagnostic::new(
                        &codes::UNKNOWN_PRIORITY,
                        Span {
                            start: self.toks[a].start,
                            end: self.toks[b - 1].end,
                        },
                        format!("unknown chain priority `{text}`"),
                    )
                    .with_label("not a number nor a priority name of this family")
                    .with_help("use a number or raw, mangle, dstnat, filter, security, srcnat (bridge: dstnat, filter, out, srcnat), optionally `+ N` / `- N`"),
                );
            }
            Priority { text, value }
        });
        let missing: Vec<&str> = [
            ("type", kind.is_none()),
            ("hook", hook.is_none()),
            ("priority", prio.is_none()),
        ]
        .iter()
        .filter(|(_, m)| *m)
        .map(|(n, _)| *n)
        .collect();
        if (!missing.is_empty() || unknown.is_some()) && !cut {
            let msg = if missing.is_empty() {
                format!(
                    "base chain declaration has an unknown word `{}`",
                    unknown.map_or("", |t| self.s(t))
                )
            } else {
                format!("base chain declaration lacks {}", missing.join(", "))
            };
            self.diags.push(
                Diagnostic::new(&codes::INCOMPLETE_BASE_CHAIN, line, msg)
                    .with_label("this declaration")
                    .with_help("write `type T hook H priority P; policy accept|drop;`"),
            );
        }
        self.rs.chains[cid.index()].base = Some(Box::new(BaseChain {
            kind: kind.unwrap_or(""),
            hook: hook.unwrap_or(""),
            device,
            priority: prio.unwrap_or(Priority {
                text: "",
                value: None,
            }),
            policy,
            span: line,
        }));
    }

    fn rule(&mut self, cid: ChainId) {
        let start = self.pos;
        let mut depth = 0u32;
        let mut j = start;
        // A newline inside the rule: an anonymous set written over several lines.
        let mut wrapped = false;
        while j < self.toks.len() {
            let t = self.toks[j];
            match t.kind(self.text) {
                Kind::Newline => {
                    // An anonymous set written over several lines: the line ends in `{` or `,`,
                    // or the next line closes the set. `{` then a line with `}` is a rule cut
                    // short before the chain's `}` (empty anonymous sets do not exist).
                    let prev = self.toks[j - 1].kind(self.text);
                    let next = self.toks.get(j + 1).map(|t| t.kind(self.text));
                    let wraps = match (prev, next) {
                        (Kind::LBrace, Some(Kind::RBrace)) => false,
                        (Kind::LBrace | Kind::Comma, _) => true,
                        (_, Some(Kind::RBrace)) => true,
                        _ => false,
                    };
                    if depth == 0 || !wraps || self.block_kw(j + 1).is_some() {
                        break;
                    }
                    wrapped = true;
                }
                Kind::Semi | Kind::Handle if depth == 0 => break,
                Kind::RBrace if depth == 0 => break,
                Kind::LBrace => depth += 1,
                Kind::RBrace => depth -= 1,
                _ => {}
            }
            j += 1;
        }
        if j == start {
            // A lone `;`/handle/`}` never reaches here; consume one token to make progress.
            self.pos += 1;
            return;
        }
        let mut end = j;
        while end > start && self.toks[end - 1].kind(self.text) == Kind::Newline {
            end -= 1;
        }
        let span = Span {
            start: self.toks[start].start,
            end: self.toks[end - 1].end,
        };
        // A rule the text ends in, cut mid-line or inside `{`: the open chain's `RL153` reports
        // the truncation once, and what the cut left half-written is not reported again.
        let cut = j == self.toks.len() && (depth > 0 || !self.text.ends_with('\n'));
        if depth > 0 && !cut {
            self.diags.push(
                Diagnostic::new(
                    &codes::UNCLOSED_BLOCK,
                    span,
                    "`{` in this rule is not closed",
                )
                .with_label("this rule opens a set that never closes")
                .with_help("close the anonymous set with `}`; the paste may be cut short"),
            );
        }
        let before = self.diags.len();
        let (text, toks, diags) = (self.text, &self.toks[start..end], &mut self.diags);
        let statements = self.rs.read_statements(toks.len(), |out| {
            Cur::on_lines(text, toks, diags, wrapped).statements_into(out)
        });
        if cut {
            self.diags.truncate(before);
        }
        self.pos = j;
        if self.peek().is_some_and(|t| t.kind(self.text) == Kind::Semi) {
            self.pos += 1;
        }
        let handle = self.take_handle();
        self.rs.rules.push(Rule {
            chain: cid,
            span,
            handle,
            statements,
            _text: std::marker::PhantomData,
        });
    }

    /// In `start..end`, where the statements that declare a base chain (`type ...; policy
    /// ...;`) end and its first rule starts.
    fn declaration_end(&self, start: usize, end: usize) -> usize {
        let mut at_statement = false;
        for i in start + 1..end {
            match self.toks[i].kind(self.text) {
                Kind::Semi | Kind::Handle => at_statement = true,
                _ if at_statement => {
                    let declares = matches!(
                        self.word_at(i),
                        Some("type" | "hook" | "device" | "devices" | "priority" | "policy")
                    );
                    if !declares {
                        return i;
                    }
                    at_statement = false;
                }
                _ => {}
            }
        }
        end
    }

    // ---- set / map ----

    fn set_body(&mut self, sid: SetId, kw: &str, name: &str, open: Span) -> End {
        loop {
            self.skip_blank();
            let Some(t) = self.peek() else {
                self.unclosed(format!("{kw} `{name}`"), open);
                return End::Eof;
            };
            if t.kind(self.text) == Kind::RBrace {
                self.pos += 1;
                return End::Closed;
            }
            if self.interrupted_by_block() {
                self.unclosed(format!("{kw} `{name}`"), open);
                return End::Interrupted;
            }
            let set = sid.index();
            match self.word_at(self.pos) {
                Some(w @ ("type" | "typeof")) => {
                    let end = self.statement_end(self.pos);
                    match self.set_type(self.pos + 1, end, w == "typeof") {
                        Some(ty) => {
                            self.rs.sets[set].key_type = Some(ty);
                            self.pos = end;
                        }
                        None => self.invalid_line(kw),
                    }
                }
                Some("flags") => {
                    self.rs.sets[set].flags = self.statement_words(self.pos + 1);
                    self.skip_statement();
                }
                Some(w @ ("timeout" | "size")) if self.word_at(self.pos + 1).is_some() => {
                    let v = self.word_at(self.pos + 1);
                    if w == "timeout" {
                        self.rs.sets[set].timeout = v;
                    } else {
                        self.rs.sets[set].size = v;
                    }
                    self.skip_statement();
                }
                Some("comment")
                    if self
                        .toks
                        .get(self.pos + 1)
                        .is_some_and(|t| t.kind(self.text) == Kind::Str) =>
                {
                    let s = self.toks[self.pos + 1];
                    self.rs.sets[set].comment = Some(unquote(self.s(s)));
                    self.skip_statement();
                }
                // Also the state a set keeps per element (`counter`, `quota over 10 mbytes`,
                // `limit rate 10/second`, `ct count over 20`, `last`).
                Some(
                    "policy" | "gc-interval" | "counter" | "auto-merge" | "quota" | "limit" | "ct"
                    | "last",
                ) => {
                    let words = self.statement_words(self.pos);
                    self.rs.sets[set].properties.push(words);
                    self.skip_statement();
                }
                // `elements = $NAME` in an `nft -f` file: a value named by `define`, not read.
                Some("elements")
                    if self.word_at(self.pos + 1) == Some("=")
                        && self
                            .word_at(self.pos + 2)
                            .is_some_and(|w| w.starts_with('$')) =>
                {
                    self.skip_statement();
                }
                Some("elements")
                    if self.word_at(self.pos + 1) == Some("=")
                        && self
                            .toks
                            .get(self.pos + 2)
                            .is_some_and(|t| t.kind(self.text) == Kind::LBrace) =>
                {
                    let open_elems = self.toks[self.pos].span();
                    match self.element_list(sid, self.pos + 2) {
                        End::Closed => {}
                        End::Eof => {
                            self.unclosed(format!("elements of {kw} `{name}`"), open_elems);
                            return End::Eof;
                        }
                        End::Interrupted | End::Split => {
                            self.unclosed(format!("elements of {kw} `{name}`"), open_elems);
                            return End::Interrupted;
                        }
                    }
                }
                _ => self.invalid_line(kw),
            }
        }
    }

    fn set_type(&self, from: usize, end: usize, typeof_: bool) -> Option<SetType<'a>> {
        let toks = &self.toks[from..end];
        let colon = toks
            .iter()
            .position(|t| t.kind(self.text) == Kind::Word && self.s(*t) == ":");
        let (key, data) = match colon {
            Some(c) => (&toks[..c], Some(&toks[c + 1..])),
            None => (toks, None),
        };
        let key = self.parts(key)?;
        let data = match data {
            Some(d) => Some(self.parts(d)?),
            None => None,
        };
        Some(SetType { typeof_, key, data })
    }

    /// Words split on `.`: each part is the text from its first to its last word.
    fn parts(&self, toks: &[Token]) -> Option<Vec<&'a str>> {
        let mut parts = Vec::new();
        for group in toks
            .iter()
            .filter(|t| t.kind(self.text) != Kind::Handle)
            .collect::<Vec<_>>()
            .split(|t| self.s(**t) == ".")
        {
            let (first, last) = (group.first()?, group.last()?);
            if group.iter().any(|t| t.kind(self.text) != Kind::Word) {
                return None;
            }
            parts.push(&self.text[first.start as usize..last.end as usize]);
        }
        (!parts.is_empty()).then_some(parts)
    }

    /// `{ ... }` of `elements = { ... }` starting at `open`. Stops at the matching `}`, at the
    /// end of the text, or at a line that starts a block (a truncated paste).
    fn element_list(&mut self, sid: SetId, open: usize) -> End {
        let mut depth = 0u32;
        let mut j = open;
        let mut end = End::Eof;
        while j < self.toks.len() {
            match self.toks[j].kind(self.text) {
                Kind::LBrace => depth += 1,
                Kind::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        end = End::Closed;
                        break;
                    }
                }
                Kind::Word if self.at_line_start(j) && self.block_kw(j).is_some() => {
                    end = End::Interrupted;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let before = self.diags.len();
        let elements =
            Cur::new(self.text, &self.toks[open + 1..j], &mut self.diags).elements(false);
        if end != End::Closed {
            // The list is cut short: its last line may hold half an element, which the
            // `RL153` of the list already explains.
            let last_line = self.toks[open..j]
                .iter()
                .rev()
                .find(|t| t.kind(self.text) == Kind::Newline)
                .map_or(0, |t| t.end);
            let mut i = before;
            while i < self.diags.len() {
                if matches!(self.diags[i].code, "RL160" | "RL162")
                    && self.diags[i].span.start >= last_line
                {
                    self.diags.remove(i);
                } else {
                    i += 1;
                }
            }
        }
        self.rs.sets[sid.index()].elements = elements;
        self.pos = if end == End::Closed { j + 1 } else { j };
        end
    }
}

/// The table a `table ... {` line at `from..to` (one line, its newline included) opens, as
/// [`Parser::table`] reads it; `None` when the line does not open a table.
pub(crate) fn open_table_at(text: &str, from: usize, to: usize) -> Option<OpenTable<'_>> {
    let mut diags = Vec::new();
    let (toks, _) = lexer::tokenize_range(text, from, to, &mut diags);
    let p = Parser {
        text,
        toks,
        pos: 0,
        rs: Ruleset::default(),
        diags,
        stop_at: usize::MAX,
        stopped: None,
        stopped_open: None,
        inside: None,
        inside_flags_written: false,
        own_diags: 0,
        next_cap: usize::MAX,
        may_cap: None,
    };
    if p.block_kw(0) != Some("table") {
        return None;
    }
    let head = p.table_head(0);
    Some(OpenTable {
        family: head.family,
        name: head.name,
        open: p.toks[0].span(),
    })
}

/// Resolves `NUM`, `NAME`, `NAME + N`, `NAME - N` (also `NAME+N`) for `family`.
pub(crate) fn priority_value(family: Option<Family>, words: &[&str]) -> Option<i32> {
    let number = |w: &str| w.parse::<i32>().ok();
    match words {
        [w] => number(w)
            .or_else(|| standard_priority(family, w))
            .or_else(|| {
                let cut = w
                    .char_indices()
                    .skip(1)
                    .find(|(_, c)| matches!(c, '+' | '-'))?
                    .0;
                priority_value(family, &[&w[..cut], &w[cut..cut + 1], &w[cut + 1..]])
            }),
        [name, sign @ ("+" | "-"), n] => {
            let base = standard_priority(family, name)?;
            let n = number(n)?;
            if *sign == "+" {
                base.checked_add(n)
            } else {
                base.checked_sub(n)
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `nft -f` files (`/etc/nftables.conf`) write short chains, sets and maps on one line; each
    /// reads as the block `nft list ruleset` prints over several lines, without a finding.
    #[test]
    fn blocks_on_one_line_read_as_their_listed_form() {
        let cases = [
            (
                "chain forward { type filter hook forward priority 0; policy drop; }",
                "chain forward {\n\t\ttype filter hook forward priority 0; policy drop;\n\t}",
            ),
            (
                "chain c { ip saddr 10.0.0.1 accept; tcp dport { 22, 80 } drop }",
                "chain c {\n\t\tip saddr 10.0.0.1 accept\n\t\ttcp dport { 22, 80 } drop\n\t}",
            ),
            (
                "set s { type ipv4_addr; flags interval; elements = { 10.0.0.0/8, 192.0.2.1 } }",
                "set s {\n\t\ttype ipv4_addr\n\t\tflags interval\n\t\telements = { 10.0.0.0/8, 192.0.2.1 }\n\t}",
            ),
            (
                "map m { type inet_service : verdict; elements = { 22 : accept, 80 : drop } }",
                "map m {\n\t\ttype inet_service : verdict\n\t\telements = { 22 : accept, 80 : drop }\n\t}",
            ),
            (
                "chain i { type filter hook ingress device \"eth0\" priority -500; policy accept; }",
                "chain i {\n\t\ttype filter hook ingress device \"eth0\" priority -500; policy accept;\n\t}",
            ),
            ("chain empty { }", "chain empty {\n\t}"),
            (
                "chain input { type filter hook input priority 0; policy drop; ct state established accept; tcp dport 22 accept }",
                "chain input {\n\t\ttype filter hook input priority 0; policy drop;\n\t\tct state established accept\n\t\ttcp dport 22 accept\n\t}",
            ),
            ("counter hits { }", "counter hits {\n\t}"),
            (
                "set s { type ipv4_addr; flags dynamic; }\n\tchain d { add @s { ip saddr limit rate over 5/minute burst 5 packets } drop; update @s { ip saddr ct count over 20 } }",
                "set s {\n\t\ttype ipv4_addr\n\t\tflags dynamic\n\t}\n\tchain d {\n\t\tadd @s { ip saddr limit rate over 5/minute burst 5 packets } drop\n\t\tupdate @s { ip saddr ct count over 20 }\n\t}",
            ),
        ];
        for (one_line, listed) in cases {
            let table = |block: &str| {
                format!("table inet t {{\n\t{block}\n\tchain after {{\n\t\tjump c\n\t}}\n}}\n")
            };
            let (a, b) = (table(one_line), table(listed));
            let (a, b) = (parse(&a), parse(&b));
            assert!(a.diagnostics.is_empty(), "{one_line}: {:?}", a.diagnostics);
            assert!(b.diagnostics.is_empty(), "{listed}: {:?}", b.diagnostics);
            assert_eq!(
                crate::canon::content(&a.ruleset),
                crate::canon::content(&b.ruleset),
                "{one_line}"
            );
            assert_eq!(a.ruleset.chains.len(), b.ruleset.chains.len(), "{one_line}");
        }
        // `define` names a value for `$NAME` in an `nft -f` file: nothing to report.
        let parsed = parse(
            "define LAN = 10.0.0.0/8\ntable ip t {\n\tchain c {\n\t\tip saddr $LAN accept\n\t}\n}\n",
        );
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        assert_eq!(parsed.ruleset.rules.len(), 1);
        // A set update keeps per-element state (`limit`, `ct count`): a statement, not opaque.
        let parsed = parse(
            "table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t}\n\tchain c {\n\t\tadd @s { ip saddr limit rate 5/minute } accept\n\t}\n}\n",
        );
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let rule = &parsed.ruleset.rules[0];
        assert!(matches!(
            parsed.ruleset.statements_of(rule)[0].kind,
            crate::model::Stmt::SetUpdate { .. }
        ));
        // `elements = $NAME`: a value `define` named, not an invalid line.
        let parsed = parse(
            "table ip t {\n\tset s { type ipv4_addr; flags interval; elements = $nets; }\n}\n",
        );
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        // A bad statement inside a one-line block is reported, and the block still closes.
        let parsed =
            parse("table ip t {\n\tset s { type ipv4_addr; bogus; }\n\tchain c {\n\t}\n}\n");
        assert_eq!(parsed.diagnostics.len(), 1, "{:?}", parsed.diagnostics);
        assert_eq!(parsed.diagnostics[0].code, codes::INVALID_LINE.code);
        assert_eq!(parsed.ruleset.chains.len(), 1);
        assert!(parsed.ruleset.sets[0].closed);
    }

    #[test]
    fn stray_lines_hold_a_bounded_number_of_diagnostics() {
        use rulelint_parser::cap;
        let text = format!("table ip t {{\n{}}}\n", "{\n".repeat(50_000));
        let parsed = parse(&text);
        assert!(parsed.diagnostics.len() <= cap::CAP_EVERY + cap::MAX_PER_CODE + 2);
        cap::assert_capped_at_the_end(&parsed.diagnostics, codes::INVALID_LINE.code);
        let stands_for: usize = parsed
            .diagnostics
            .iter()
            .filter(|d| d.code == codes::INVALID_LINE.code)
            .map(|d| cap::left_out_count(d).unwrap_or(1))
            .sum();
        assert_eq!(stands_for, 50_000);
    }

    #[test]
    fn priorities_resolve_per_family() {
        let ip = Some(Family::Ip);
        assert_eq!(priority_value(ip, &["dstnat", "-", "10"]), Some(-110));
        assert_eq!(priority_value(ip, &["-110"]), Some(-110));
        assert_eq!(priority_value(ip, &["srcnat"]), Some(100));
        assert_eq!(priority_value(ip, &["filter+5"]), Some(5));
        assert_eq!(
            priority_value(Some(Family::Bridge), &["filter"]),
            Some(-200)
        );
        assert_eq!(priority_value(ip, &["dnat"]), None);
        assert_eq!(priority_value(ip, &["filter", "-", "x"]), None);
    }
}
