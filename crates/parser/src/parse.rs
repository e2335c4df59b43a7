//! Text -> [`Ruleset`] plus diagnostics. Line by line; a bad line becomes a diagnostic and the
//! parser goes on with the next one.

use crate::cap;
use crate::chain_index::{ChainIndex, same_name};
use crate::codes;
use crate::diagnostic::Diagnostic;
use crate::fragment::{self, Plan};
use crate::huge_pages;
use crate::lexer::{self, is_blank, offset_in};
use crate::model::*;
use crate::prefix::{self, Prefix};
use crate::rule_tokens::rule_tokens;
use crate::span::Span;
use rustc_hash::FxHashMap;

/// The result of [`parse`]: the ruleset and everything the parser had to say about the text.
#[derive(Clone, Debug)]
pub struct Parsed<'a> {
    /// What was read. Always present, possibly empty.
    pub ruleset: Ruleset<'a>,
    /// Parser diagnostics (`RL1xx`), in order of position.
    pub diagnostics: Vec<Diagnostic>,
}

impl Parsed<'_> {
    /// True when the text held nothing that looks like iptables-save output.
    pub fn has_no_content(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.code == codes::NO_CONTENT.code)
    }
}

/// Parses iptables-save (or iptables-restore input) text. Never fails and never panics: problems
/// in the text become diagnostics, and everything readable is kept.
///
/// ```
/// let text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p tcp --dport 22 -j ACCEPT\nCOMMIT\n";
/// let parsed = rulelint_parser::parse(text);
/// assert!(parsed.diagnostics.is_empty());
/// let rule = parsed.ruleset.iter_rules().next().unwrap();
/// assert_eq!(rule.chain().name(), "INPUT");
/// assert_eq!(rule.target().unwrap().name(), "ACCEPT");
/// ```
pub fn parse(text: &str) -> Parsed<'_> {
    let mut parser = Parser::new(text);
    if text.len() >= u32::MAX as usize {
        parser.diags.push(
            Diagnostic::new(
                &codes::INPUT_TOO_LARGE,
                Span::default(),
                format!(
                    "input is {} bytes; rulelint reads dumps below 4 GiB",
                    text.len()
                ),
            )
            .with_label("start of the input")
            .with_help("split the input, one dump per file"),
        );
    } else {
        parser.run();
    }
    parser.finish()
}

/// A run of lines of one kind (stray text, or headerless rules), reported once.
struct Block {
    first: Span,
    lines: u32,
    prompt: bool,
    after_dump: bool,
    tables: [bool; 6],
}

/// How many rules a target lookup trails behind: enough to cover a cache miss.
const PENDING_TARGETS: usize = 16;

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    line_no: u32,
    set: Ruleset<'a>,
    diags: Vec<Diagnostic>,
    open: Option<TableId>,
    table_lines: Vec<u32>,
    /// Per table: a rule has been read.
    tables_with_rules: Vec<bool>,
    /// Per table: a chain was created after a rule (see `resolve_late_targets`).
    late_chains: Vec<bool>,
    /// Where the declaration lines already prefetched end (see `prefetch_declarations`).
    declarations_prefetched: usize,
    /// Rules whose target is still to be resolved, with the hash of its name.
    /// A ring: `pending_len` entries in use, the oldest first, the next written at `pending_at`.
    /// (rule, hash of its target's name, the name): the name kept so that resolving does not
    /// look for the target token again.
    pending_targets: [(u32, u64, &'a str); PENDING_TARGETS],
    pending_len: usize,
    pending_at: usize,
    tables_by_name: FxHashMap<&'a str, TableId>,
    implicit_tables: [Option<TableId>; 6],
    stray: Option<Block>,
    fragment: Option<Block>,
    /// The one RL107 diagnostic of a hand-wrapped paste and where the later wrapped rules are:
    /// a paste wrapped by hand wraps many rules, and one finding with their lines says it.
    wrapped_rules: Option<(usize, Vec<Span>)>,
    /// How many diagnostics the next capping waits for (`cap::CAP_EVERY` more after each;
    /// `usize::MAX` when the text holds a suppression marker).
    next_cap: usize,
    /// Whether the text holds no suppression marker, once a capping asked.
    may_cap: Option<bool>,
    words: Vec<Span>,
    last_chain: Option<(TableId, &'a str, ChainId)>,
    /// The chain of the last rule read.
    last_rule_chain: ChainId,
    /// The rules read so far belong to chains in the order the chains were created.
    rules_in_chain_order: bool,
    seen_table: bool,
    /// The prefix every line of a prefixed paste carries (see [`crate::prefix`]).
    prefix: Option<Prefix>,
    /// The tables of the run of lines outside any table being read.
    plan: Plan,
    /// Lines read past their prefix, and the first such prefix.
    prefixed_lines: u32,
    first_prefix: Option<Span>,
}

fn table_slot(kind: TableKind) -> usize {
    kind as usize
}

enum Verb {
    Rule(RuleOp),
    Command(CommandVerb),
}

fn verb(word: &str) -> Option<Verb> {
    Some(match word {
        "-A" | "--append" => Verb::Rule(RuleOp::Append),
        "-I" | "--insert" => Verb::Rule(RuleOp::Insert),
        "-D" | "--delete" => Verb::Rule(RuleOp::Delete),
        "-R" | "--replace" => Verb::Rule(RuleOp::Replace),
        "-N" | "--new-chain" => Verb::Command(CommandVerb::NewChain),
        "-X" | "--delete-chain" => Verb::Command(CommandVerb::DeleteChain),
        "-F" | "--flush" => Verb::Command(CommandVerb::Flush),
        "-P" | "--policy" => Verb::Command(CommandVerb::Policy),
        "-Z" | "--zero" => Verb::Command(CommandVerb::Zero),
        "-E" | "--rename-chain" => Verb::Command(CommandVerb::Rename),
        _ => return None,
    })
}

/// The span of `part`, a slice of `src`.
fn span_in(src: &str, part: &str) -> Span {
    let o = offset_in(src, part);
    Span::new(o, o + part.len())
}

/// Heuristic for a pasted shell prompt or command line.
fn looks_like_prompt(line: &str) -> bool {
    let has_prompt_char = line.contains("$ ") || line.contains("# ") || line.ends_with('$');
    has_prompt_char && (line.contains('@') || line.contains("iptables") || line.contains("sudo "))
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Parser<'a> {
        let bytes = src.as_bytes();
        // Reserve for a dump of typical density (a rule line is 40 to 300 bytes, a token 8 to 12),
        // capped by the byte length so that odd input (millions of empty lines) cannot make us
        // reserve more than about twice its size. Vectors grow past this if needed and are
        // trimmed when parsing ends.
        let lines = bytecount::count(bytes, b'\n') + 1;
        let rules_capacity = lines.min(bytes.len() / 40 + 1);
        let tokens_capacity = lines.saturating_mul(8).min(bytes.len() / 10 + 1);
        let rules = Vec::with_capacity(rules_capacity);
        let tokens = Vec::with_capacity(tokens_capacity);
        huge_pages::advise(&rules);
        huge_pages::advise(&tokens);
        Parser {
            src,
            pos: 0,
            line_no: 0,
            set: Ruleset {
                source: src,
                tables: Vec::new(),
                chains: Vec::new(),
                rules,
                commands: Vec::new(),
                comments: Vec::new(),
                family: None,
                tokens,
                chain_rules: ChainRules::default(),
                positions: Vec::new(),
                far_targets: Vec::new(),
                token_blocks: Vec::new(),
                far_tokens: Vec::new(),
                far_chain_spans: Box::default(),
                target_classes: Vec::with_capacity(rules_capacity),
            },
            diags: Vec::new(),
            open: None,
            table_lines: Vec::new(),
            tables_with_rules: Vec::new(),
            late_chains: Vec::new(),
            declarations_prefetched: 0,
            pending_targets: [(0, 0, ""); PENDING_TARGETS],
            pending_len: 0,
            pending_at: 0,
            tables_by_name: FxHashMap::default(),
            implicit_tables: [None; 6],
            stray: None,
            fragment: None,
            wrapped_rules: None,
            next_cap: cap::CAP_EVERY,
            may_cap: None,
            words: Vec::with_capacity(64),
            last_chain: None,
            last_rule_chain: ChainId(0),
            rules_in_chain_order: true,
            seen_table: false,
            prefix: None,
            plan: Plan::default(),
            prefixed_lines: 0,
            first_prefix: None,
        }
    }

    /// The next physical line, trimmed of the line break, `\r` and surrounding blanks.
    /// Returns (start, end) of the trimmed content, and advances past the line.
    fn next_line(&mut self) -> (usize, usize) {
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let nl = memchr::memchr(b'\n', &bytes[start..]).map(|i| start + i);
        let end = nl.unwrap_or(bytes.len());
        self.pos = nl.map_or(bytes.len(), |i| i + 1);
        self.line_no += 1;
        let ((s, e), skipped) = prefix::content(bytes, start, end, self.prefix);
        if let Some((from, to)) = skipped {
            self.prefixed_lines += 1;
            self.first_prefix.get_or_insert(Span::new(from, to));
        }
        (s, e)
    }

    fn run(&mut self) {
        self.prefix = prefix::detect(self.src.as_bytes());
        while self.pos < self.src.len() {
            if self.src.as_bytes()[self.pos] == b'-' && self.plain_rule_line() {
                continue;
            }
            let (start, end) = self.next_line();
            if start == end {
                continue;
            }
            if self.diags.len() >= self.next_cap {
                self.cap_diagnostics();
            }
            let line = &self.src[start..end];
            let span = Span::new(start, end);
            match line.as_bytes()[0] {
                b'#' => {
                    self.flush_blocks();
                    self.comment(span, line);
                }
                // `*name` is a table header; `* some prose` around a paste is not.
                b'*' if line.len() > 1 && !line[1..].contains([' ', '\t']) => {
                    self.flush_blocks();
                    self.table_header(span, line);
                }
                b':' => self.chain_declaration(span, line),
                b'-' | b'[' => self.rule_line(span),
                _ if line == "COMMIT" => {
                    self.flush_blocks();
                    self.commit(span);
                }
                _ if self.open.is_some() => {
                    self.flush_blocks();
                    self.diags.push(
                        Diagnostic::new(
                            &codes::INVALID_LINE,
                            span,
                            format!(
                                "line in table `{}` is not a rule, chain declaration, COMMIT or comment",
                                self.open_table_name()
                            ),
                        )
                        .with_label("not iptables-save syntax")
                        .with_help("rules start with `-A CHAIN`, chain declarations with `:CHAIN`; remove or fix this line"),
                    );
                }
                _ => self.stray_line(span, line),
            }
        }
    }

    fn open_table_name(&self) -> &'a str {
        self.open
            .map_or("", |t| self.set.text(self.set.tables[t.index()].name))
    }

    /// Says in the first RL107 diagnostic how many more rules are wrapped, and on which lines.
    fn count_wrapped_rules(&mut self) {
        const LINES_SHOWN: usize = 10;
        let Some((first, later)) = self.wrapped_rules.take() else {
            return;
        };
        if later.is_empty() {
            return;
        }
        // The spans come in text order: one pass counts the newlines before each.
        let bytes = self.src.as_bytes();
        let (mut line, mut counted_to) = (1usize, 0usize);
        let mut lines = Vec::with_capacity(later.len().min(LINES_SHOWN));
        for at in later.iter().take(LINES_SHOWN) {
            let to = (at.start as usize).min(bytes.len());
            line += bytecount::count(&bytes[counted_to..to], b'\n');
            counted_to = to;
            lines.push(line.to_string());
        }
        let more = later.len() - lines.len();
        let mut where_ = lines.join(", ");
        if more > 0 {
            where_.push_str(&format!(" and {more} more"));
        }
        let n = later.len();
        let diagnostic = &mut self.diags[first];
        diagnostic.message = format!(
            "rule is wrapped onto the next line with a backslash, and so {} {n} more rule{} (lines {where_})",
            if n == 1 { "is" } else { "are" },
            if n == 1 { "" } else { "s" }
        );
    }

    /// Keeps of each code the first diagnostics a report shows and one that counts the rest
    /// (`cap::cap_per_code`), so a file of garbage does not hold one diagnostic per line. Not
    /// while a wrapped rule's diagnostic is referred to by index, nor in a text with a
    /// suppression marker (a suppression removes findings before the report caps them).
    fn cap_diagnostics(&mut self) {
        let src = self.src;
        if !*self.may_cap.get_or_insert_with(|| cap::may_cap(src)) {
            self.next_cap = usize::MAX;
            return;
        }
        if self.wrapped_rules.is_some() {
            self.next_cap = self.diags.len() + cap::CAP_EVERY;
            return;
        }
        self.diags.sort_by_key(|d| (d.span.start, d.code));
        cap::cap_per_code(&mut self.diags);
        self.next_cap = self.diags.len() + cap::CAP_EVERY;
    }

    fn finish(mut self) -> Parsed<'a> {
        self.flush_blocks();
        self.count_wrapped_rules();
        if let (Some(prefix), Some(first)) = (self.prefix, self.first_prefix) {
            let lines = self.prefixed_lines;
            self.diags.push(
                Diagnostic::new(
                    &codes::PREFIXED_PASTE,
                    first,
                    format!(
                        "{lines} line{} prefixed with {}: read without the prefix",
                        if lines == 1 { " is" } else { "s are" },
                        prefix.describe()
                    ),
                )
                .with_label("prefix of the first line")
                .with_help("rulelint read the dump past the prefix; for `iptables-restore`, paste the output of iptables-save as it printed it"),
            );
        }
        if let Some(open) = self.open.take() {
            let table = &self.set.tables[open.index()];
            let name = self.set.text(table.name);
            self.diags.push(
                Diagnostic::new(
                    &codes::MISSING_COMMIT,
                    table.header,
                    format!("table `{name}` ends without COMMIT: the paste looks truncated"),
                )
                .with_label("table opened here is never committed")
                .with_help(
                    "paste the whole dump; iptables-restore applies a table only at its COMMIT",
                ),
            );
        }
        if self.set.tables.is_empty() && self.set.rules.is_empty() && self.set.commands.is_empty() {
            // The whole text is stray: one not-a-dump error says it better than stray-text.
            self.diags.retain(|d| d.code != codes::STRAY_TEXT.code);
            let span = Span::new(
                0,
                self.src
                    .len()
                    .min(self.src.find('\n').unwrap_or(self.src.len())),
            );
            self.diags.push(
                Diagnostic::new(
                    &codes::NO_CONTENT,
                    span,
                    "no ruleset: no iptables-save or nftables table, chain or rule",
                )
                .with_label("this does not look like the output of iptables-save, nft or ipvsadm")
                .with_help(
                    "run `iptables-save` (and `ip6tables-save`) on the node, or `nft list ruleset` \
                     where kube-proxy runs in nftables mode, and analyse its output",
                ),
            );
        }
        for k in 0..self.pending_len {
            let slot = (self.pending_at + PENDING_TARGETS - self.pending_len + k) % PENDING_TARGETS;
            let (rule, hash, name) = self.pending_targets[slot];
            self.resolve_target(rule, hash, name);
        }
        self.pending_len = 0;
        self.resolve_late_targets();
        self.index_chain_rules();
        self.set.rules.shrink_to_fit();
        self.set.target_classes.shrink_to_fit();
        self.set.tokens.shrink_to_fit();
        self.set.chains.shrink_to_fit();
        self.diags.sort_by_key(|d| (d.span.start, d.code));
        cap::cap_again_if_capped(&mut self.diags);
        Parsed {
            ruleset: self.set,
            diagnostics: self.diags,
        }
    }

    /// Groups rule ids by chain, so each chain lists its rules in order. The rules of each
    /// chain were counted as they were read. iptables-save prints rules chain by chain in
    /// declaration order, so the grouping is mostly the identity; otherwise a counting sort.
    fn index_chain_rules(&mut self) {
        let set = &mut self.set;
        // Each chain's rule count becomes where its rules start.
        let mut next = 0u32;
        for chain in &mut set.chains {
            let count = chain.rules_start;
            chain.rules_start = next;
            next += count;
        }
        if self.rules_in_chain_order {
            set.chain_rules.identity = true;
            return;
        }
        let mut ids = vec![RuleId(0); set.rules.len()];
        huge_pages::advise(&ids);
        let mut fill: Vec<u32> = set.chains.iter().map(|c| c.rules_start).collect();
        for (i, rule) in set.rules.iter().enumerate() {
            let slot = &mut fill[rule.chain.index()];
            ids[*slot as usize] = RuleId(i as u32);
            *slot += 1;
        }
        set.chain_rules.ids = ids;
    }

    fn flush_blocks(&mut self) {
        if let Some(block) = self.stray.take() {
            let what = if block.prompt {
                "a shell prompt"
            } else {
                "text that is not iptables-save output"
            };
            let lines = if block.lines == 1 {
                String::from("1 line")
            } else {
                format!("{} lines", block.lines)
            };
            let place = if block.after_dump {
                "outside any table"
            } else {
                "before the dump"
            };
            self.diags.push(
                Diagnostic::new(
                    &codes::STRAY_TEXT,
                    block.first,
                    format!("{lines} {place}: {what}, skipped"),
                )
                .with_label(if block.prompt {
                    "shell prompt pasted with the dump"
                } else {
                    "first line of the text"
                })
                .with_help(
                    "keep only the output of iptables-save; iptables-restore rejects these lines",
                ),
            );
        }
        if let Some(block) = self.fragment.take() {
            let names: Vec<&str> = [
                TableKind::Raw,
                TableKind::Mangle,
                TableKind::Nat,
                TableKind::Filter,
                TableKind::Security,
                TableKind::Other,
            ]
            .into_iter()
            .filter(|k| block.tables[table_slot(*k)])
            .map(|k| k.name())
            .collect();
            let rules = if block.lines == 1 {
                String::from("1 line")
            } else {
                format!("{} lines", block.lines)
            };
            self.diags.push(
                Diagnostic::new(
                    &codes::HEADERLESS_RULES,
                    block.first,
                    format!(
                        "{rules} outside any `*table` block: read as a fragment of table `{}`",
                        names.join("` and `")
                    ),
                )
                .with_label("no `*table` header before this line")
                .with_help("the table was inferred from chain names and targets; analyse the whole iptables-save output for certain results"),
            );
        }
    }

    fn stray_line(&mut self, span: Span, line: &'a str) {
        if self.fragment.is_some() {
            self.flush_blocks();
        }
        let prompt = looks_like_prompt(line);
        match &mut self.stray {
            Some(block) => {
                block.lines += 1;
                block.prompt |= prompt;
            }
            None => {
                self.stray = Some(Block {
                    first: span,
                    lines: 1,
                    prompt,
                    after_dump: self.seen_table,
                    tables: [false; 6],
                })
            }
        }
    }

    fn comment(&mut self, span: Span, line: &'a str) {
        let kind = if let Ok((_, (tool, version, backend))) = lexer::generated_by(line) {
            let base = offset_in(self.src, tool);
            let tool_span = Span::new(base, base + tool.len());
            let version_span = version.map_or(
                Span::new(tool_span.end as usize, tool_span.end as usize),
                |v| {
                    let o = offset_in(self.src, v);
                    Span::new(o, o + v.len())
                },
            );
            if tool.starts_with("ip6tables") && self.set.family.is_none() {
                self.set.family = Some(Family::Ipv6);
            } else if tool.starts_with("iptables") && self.set.family.is_none() {
                self.set.family = Some(Family::Ipv4);
            }
            CommentKind::Generated(Generator {
                tool: tool_span,
                version: version_span,
                nf_tables: backend == Some("nf_tables") || tool.contains("-nft"),
                legacy: backend == Some("legacy") || tool.contains("-legacy"),
            })
        } else if line.starts_with("# Completed") {
            CommentKind::Completed
        } else if line.contains("iptables-legacy tables present") {
            CommentKind::LegacyTablesPresent
        } else if line.contains("is incompatible, use 'nft' tool") {
            CommentKind::IncompatibleTable
        } else {
            CommentKind::Other
        };
        self.set.comments.push(Comment { span, kind });
    }

    fn table_header(&mut self, span: Span, line: &'a str) {
        // The caller passes only `*name` lines (trimmed, no blank inside).
        let name = &line[1..];
        let name_span = Span::new(span.start as usize + 1, span.end as usize);
        if let Some(open) = self.open.take() {
            let open_name = self.set.text(self.set.tables[open.index()].name);
            let open_header = self.set.tables[open.index()].header;
            self.diags.push(
                Diagnostic::new(
                    &codes::MISSING_COMMIT,
                    open_header,
                    format!(
                        "table `{open_name}` is not closed by COMMIT before `*{name}` at line {}",
                        self.line_no
                    ),
                )
                .with_label("table opened here is never committed")
                .with_help("add COMMIT at the end of the table; iptables-restore applies a table only at its COMMIT"),
            );
        }
        let kind = TableKind::from_name(name);
        if kind == TableKind::Other {
            self.diags.push(
                Diagnostic::new(
                    &codes::UNKNOWN_TABLE,
                    name_span,
                    format!("`{name}` is not an iptables table"),
                )
                .with_label("unknown table name")
                .with_help("tables are raw, mangle, nat, filter and security"),
            );
        }
        let id = TableId(self.set.tables.len() as u32);
        if let Some(&previous) = self.tables_by_name.get(name) {
            self.set.tables[previous.index()].superseded = true;
            let first_line = self.table_lines[previous.index()];
            self.diags.push(
                Diagnostic::new(
                    &codes::REPEATED_TABLE,
                    span,
                    format!(
                        "table `{name}` appears again (first at line {first_line}): two dumps back to back"
                    ),
                )
                .with_label("second block of the same table")
                .with_help("put one dump per file; rulelint analyses this later block and ignores the earlier one"),
            );
        }
        self.tables_by_name.insert(name, id);
        self.table_lines.push(self.line_no);
        self.tables_with_rules.push(false);
        self.late_chains.push(false);
        self.set.tables.push(Table {
            name: name_span,
            kind,
            header: span,
            commit: None,
            superseded: false,
            implicit: false,
            chains: Vec::new(),
            chain_names: ChainIndex::default(),
        });
        // Declarations follow the header as a block: size the chain index for them at once.
        let declarations = self.count_declaration_lines();
        self.set.tables[id.index()]
            .chain_names
            .reserve(self.src, declarations);
        self.set.chains.reserve(declarations);
        huge_pages::advise(&self.set.chains);
        self.open = Some(id);
        self.seen_table = true;
        self.last_chain = None;
    }

    /// Number of consecutive `:` lines from the current position.
    fn count_declaration_lines(&self) -> usize {
        let bytes = self.src.as_bytes();
        let mut pos = self.pos;
        let mut count = 0;
        while bytes.get(pos) == Some(&b':') {
            count += 1;
            pos = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1);
        }
        count
    }

    fn commit(&mut self, span: Span) {
        match self.open.take() {
            Some(id) => self.set.tables[id.index()].commit = Some(span),
            None => self.diags.push(
                Diagnostic::new(
                    &codes::COMMIT_OUTSIDE_TABLE,
                    span,
                    "COMMIT with no open table",
                )
                .with_label("nothing to commit here")
                .with_help("each `*table` block ends with exactly one COMMIT; remove this one"),
            ),
        }
    }

    fn span_of(&self, part: &str) -> Span {
        span_in(self.src, part)
    }

    fn chain_declaration(&mut self, span: Span, line: &'a str) {
        let table_id = match self.open {
            Some(table) => {
                self.prefetch_declarations(table);
                table
            }
            None => {
                // Outside a table, only a whole declaration is one (`:NAME POLICY [p:b]`, as
                // grep or a partial copy leaves it); other `:` lines are prose.
                let whole = lexer::chain_declaration(line).is_ok_and(|(rest, d)| {
                    d.policy.is_some() && rest.trim_matches(is_blank).is_empty()
                });
                if !whole {
                    self.stray_line(span, line);
                    return;
                }
                self.fragment_table(span)
            }
        };
        let Ok((rest, decl)) = lexer::chain_declaration(line) else {
            self.diags.push(
                Diagnostic::new(
                    &codes::INVALID_CHAIN_DECLARATION,
                    span,
                    "chain declaration has no chain name",
                )
                .with_label("`:` must be followed by the chain name")
                .with_help("write `:NAME POLICY [packets:bytes]`, e.g. `:KUBE-SERVICES - [0:0]`"),
            );
            return;
        };
        let rest = rest.trim_matches(is_blank);
        let name_span = self.span_of(decl.name);
        let kind = self.set.tables[table_id.index()].kind;
        let implicit = self.set.tables[table_id.index()].implicit;
        // In a fragment the table is a guess: a built-in chain of any table takes a policy.
        let builtin =
            kind.is_builtin(decl.name) || (implicit && fragment::is_builtin_anywhere(decl.name));
        if !rest.is_empty() {
            let (info, msg, help) = if rest.starts_with('[') {
                (
                    &codes::INVALID_COUNTERS,
                    format!(
                        "counters of chain `{}` are not `[packets:bytes]`",
                        decl.name
                    ),
                    "write counters as `[packets:bytes]`, e.g. `[0:0]`",
                )
            } else {
                (
                    &codes::INVALID_CHAIN_DECLARATION,
                    format!(
                        "unexpected text after the declaration of chain `{}`",
                        decl.name
                    ),
                    "write `:NAME POLICY [packets:bytes]`",
                )
            };
            self.diags.push(
                Diagnostic::new(info, self.span_of(rest), msg)
                    .with_label("not part of a chain declaration")
                    .with_help(help),
            );
        }
        match decl.policy {
            None => self.diags.push(
                Diagnostic::new(
                    &codes::INVALID_CHAIN_DECLARATION,
                    span,
                    format!("chain `{}` is declared without a policy", decl.name),
                )
                .with_label("policy missing after the chain name")
                .with_help(if builtin {
                    "built-in chains take `ACCEPT` or `DROP`, e.g. `:INPUT ACCEPT [0:0]`"
                } else {
                    "user chains take `-`, e.g. `:KUBE-SERVICES - [0:0]`"
                }),
            ),
            Some(policy) if kind != TableKind::Other => {
                // `-` on a built-in chain is restore input that keeps the current policy:
                // iptables-restore accepts it, and kube-proxy writes it.
                let ok = if builtin {
                    matches!(policy, "ACCEPT" | "DROP" | "-")
                } else {
                    policy == "-"
                };
                if !ok {
                    let (msg, help) = if builtin {
                        (
                            format!(
                                "built-in chain `{}` has policy `{policy}`; it must be ACCEPT or DROP",
                                decl.name
                            ),
                            "built-in chains take `ACCEPT` or `DROP` (or `-` in restore input, to keep the current policy)",
                        )
                    } else if matches!(policy, "ACCEPT" | "DROP") {
                        (
                            format!(
                                "`{}` is not a built-in chain of table `{}`, so it cannot have policy `{policy}`",
                                decl.name,
                                kind.name()
                            ),
                            "user chains are declared with `-` as their policy: `:NAME - [0:0]`",
                        )
                    } else {
                        (
                            format!(
                                "chain `{}` has policy `{policy}`; user chains take `-`",
                                decl.name
                            ),
                            "user chains are declared with `-` as their policy: `:NAME - [0:0]`",
                        )
                    };
                    self.diags.push(
                        Diagnostic::new(
                            &codes::INVALID_CHAIN_DECLARATION,
                            self.span_of(policy),
                            msg,
                        )
                        .with_label("wrong policy for this chain")
                        .with_help(help),
                    );
                }
            }
            Some(_) => {}
        }
        let existing = self.set.tables[table_id.index()]
            .chain_names
            .get(self.src, decl.name);
        let chain_id = match existing {
            Some(id) => {
                // Two tables' declarations of one name can meet in a fragment.
                if self.set.chains[id.index()].declaration().is_some() && !implicit {
                    self.diags.push(
                        Diagnostic::new(
                            &codes::INVALID_CHAIN_DECLARATION,
                            span,
                            format!(
                                "chain `{}` is declared twice in table `{}`",
                                decl.name,
                                self.open_table_name()
                            ),
                        )
                        .with_label("second declaration")
                        .with_help("declare each chain once per table"),
                    );
                }
                id
            }
            None => {
                let builtin = kind.is_builtin(decl.name);
                self.new_chain(table_id, decl.name, name_span, builtin)
            }
        };
        if self.set.chains[chain_id.index()].declaration().is_none() {
            self.set.set_chain_declaration(
                chain_id,
                span,
                decl.policy.is_some(),
                decl.counters.is_some(),
            );
        }
    }

    /// Prefetches the index slots of the declaration lines just ahead. A large dump declares
    /// hundreds of thousands of chains, each a cache miss in the index: fetched ahead, the
    /// misses overlap instead of stalling one declaration at a time.
    fn prefetch_declarations(&mut self, table: TableId) {
        const AHEAD_BYTES: usize = 512;
        let bytes = self.src.as_bytes();
        let index = &self.set.tables[table.index()].chain_names;
        let mut cursor = self.declarations_prefetched.max(self.pos);
        while cursor - self.pos < AHEAD_BYTES && bytes.get(cursor) == Some(&b':') {
            let line = &bytes[cursor + 1..];
            let name_len = memchr::memchr3(b' ', b'\t', b'\n', line).unwrap_or(line.len());
            index.prefetch(ChainIndex::hash(&line[..name_len]));
            cursor += 1 + memchr::memchr(b'\n', line).map_or(line.len(), |i| i + 1);
        }
        self.declarations_prefetched = cursor;
    }

    fn new_chain(
        &mut self,
        table: TableId,
        name: &'a str,
        name_span: Span,
        builtin: bool,
    ) -> ChainId {
        let id = ChainId(self.set.chains.len() as u32);
        self.set.chains.push(Chain::new(name_span, table, builtin));
        let t = &mut self.set.tables[table.index()];
        t.chains.push(id);
        t.chain_names.insert(self.src, name_span.start, name, id);
        if self.tables_with_rules[table.index()] {
            self.late_chains[table.index()] = true;
        }
        id
    }

    /// Reads the line at `self.pos`, which starts with `-`, as a rule when the fast lexer can
    /// split it (see [`lexer::scan_line_words`]): most lines of a dump. Returns false, having
    /// read nothing, for a line that needs the exact lexer.
    fn plain_rule_line(&mut self) -> bool {
        self.words.clear();
        let start = self.pos;
        let Some(newline) = lexer::scan_line_words(self.src.as_bytes(), start, &mut self.words)
        else {
            return false;
        };
        // The line starts with a word, so its last word ends it.
        let end = self.words.last().map_or(start, |w| w.end as usize);
        self.pos = (newline + 1).min(self.src.len());
        self.line_no += 1;
        self.rule_words(Span::new(start, end), end, None, None);
        true
    }

    /// Splits the words of a rule into `self.words`: its line, plus continuation lines when the
    /// line ends with a backslash. Returns the end of the last line read and the position of the
    /// first backslash, if the rule was wrapped.
    fn lex_rule(&mut self, start: usize, end: usize) -> (usize, Option<Span>) {
        self.words.clear();
        let bytes = self.src.as_bytes();
        if lexer::scan_line_words(bytes, start, &mut self.words).is_some() {
            return (end, None);
        }
        self.words.clear();
        let base = bytes.as_ptr() as usize;
        let mut seg_end = end;
        let mut rest = &bytes[start..end];
        let mut wrapped_at = None;
        loop {
            let blank = rest
                .iter()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count();
            rest = &rest[blank..];
            if rest.is_empty() {
                break;
            }
            let at = rest.as_ptr() as usize - base;
            match lexer::word_len(rest) {
                Ok(len) => {
                    let word = &rest[..len];
                    let span = Span::new(at, at + len);
                    rest = &rest[len..];
                    if word.ends_with(b"\\")
                        && !word.ends_with(b"\"\\")
                        && rest.iter().all(|&b| b == b' ' || b == b'\t')
                        && self.next_line_is_continuation()
                    {
                        wrapped_at
                            .get_or_insert(Span::new(span.end as usize - 1, span.end as usize));
                        if word.len() > 1 {
                            self.words
                                .push(Span::new(span.start as usize, span.end as usize - 1));
                        }
                        let (s, e) = self.next_line();
                        seg_end = e;
                        rest = &bytes[s..e];
                        continue;
                    }
                    if len > u16::MAX as usize {
                        self.diags.push(
                            Diagnostic::new(&codes::INPUT_TOO_LARGE, Span::new(at, at + 1), format!("a word of {len} bytes; rulelint reads words below 64 KiB"))
                                .with_label("this word is too long")
                                .with_help("iptables limits comments to 256 bytes; this is not iptables-save output"),
                        );
                        self.words.clear();
                        return (seg_end, wrapped_at);
                    }
                    self.words.push(span);
                }
                Err(quote) => {
                    self.diags.push(
                        Diagnostic::new(
                            &codes::UNTERMINATED_QUOTE,
                            Span::new(at + quote, at + quote + 1),
                            "quoted argument is not closed before the end of the line",
                        )
                        .with_label("this quote is never closed")
                        .with_help("close the quote; write a quote inside it as `\\\"`"),
                    );
                    // The rest of the line is the unfinished word.
                    if rest.len() <= u16::MAX as usize {
                        self.words.push(Span::new(at, at + rest.len()));
                    }
                    break;
                }
            }
        }
        (seg_end, wrapped_at)
    }

    fn next_line_is_continuation(&self) -> bool {
        matches!(self.src.as_bytes().get(self.pos), Some(b' ' | b'\t'))
    }

    fn rule_line(&mut self, line_span: Span) {
        let mut start = line_span.start as usize;
        let line = &self.src[line_span.range()];
        let mut counters = None;
        if line.starts_with('[') {
            match lexer::counters(line) {
                Ok((rest, (whole, _, _))) => {
                    counters = Some(self.span_of(whole));
                    start += line.len() - rest.len();
                }
                Err(_) => {
                    let close = line.find(']').map_or(line.len(), |i| i + 1);
                    let is_rule = line[close..].trim_start_matches(is_blank).starts_with('-');
                    if !is_rule && self.open.is_none() {
                        self.stray_line(line_span, line);
                        return;
                    }
                    self.diags.push(
                        Diagnostic::new(
                            &codes::INVALID_COUNTERS,
                            Span::new(start, start + close),
                            "rule counters are not `[packets:bytes]`",
                        )
                        .with_label("malformed counters")
                        .with_help(
                            "iptables-save -c writes `[packets:bytes]` with two decimal numbers",
                        ),
                    );
                    start += close;
                }
            }
        }
        let (end, wrapped_at) = self.lex_rule(start, line_span.end as usize);
        self.rule_words(line_span, end, wrapped_at, counters);
    }

    /// Reads the rule (or restore command) whose words are in `self.words`. `line_span` is its
    /// first line; the rule ends at `end`, after any continuation lines.
    fn rule_words(
        &mut self,
        line_span: Span,
        end: usize,
        wrapped_at: Option<Span>,
        counters: Option<Span>,
    ) {
        let line = &self.src[line_span.range()];
        let Some(&verb_span) = self.words.first() else {
            return;
        };
        let verb_word = self.set.text(verb_span);
        let Some(verb) = verb(verb_word) else {
            if self.open.is_some() {
                self.diags.push(
                    Diagnostic::new(&codes::INVALID_LINE, line_span, format!("line starts with `{verb_word}`, not with a verb such as `-A`"))
                        .with_label("not a rule")
                        .with_help("rules start with `-A CHAIN`; restore input may also use -I, -D, -R, -N, -X, -F, -P, -Z, -E"),
                );
            } else {
                self.stray_line(line_span, line);
            }
            return;
        };
        if let Some(at) = wrapped_at {
            match &mut self.wrapped_rules {
                Some((_, later)) => later.push(at),
                None => {
                    self.wrapped_rules = Some((self.diags.len(), Vec::new()));
                    self.diags.push(
                        Diagnostic::new(&codes::WRAPPED_RULE, at, "rule is wrapped onto the next line with a backslash")
                            .with_label("line continues here")
                            .with_help("join the lines: iptables-save writes one rule per line and iptables-restore rejects wrapped ones; rulelint read the joined rule"),
                    );
                }
            }
        }
        let rule_span = Span::new(verb_span.start as usize, end);
        let Some(&chain_span) = self.words.get(1) else {
            self.diags.push(
                Diagnostic::new(
                    &codes::MISSING_ARGUMENT,
                    verb_span,
                    format!("`{verb_word}` has no chain name"),
                )
                .with_label("chain name missing after this")
                .with_help("write `-A CHAIN ...`"),
            );
            return;
        };
        let chain_name = self.set.text(chain_span);
        match verb {
            Verb::Command(cmd) => self.command(cmd, rule_span, chain_span),
            Verb::Rule(op) => self.rule(op, rule_span, chain_span, chain_name, counters),
        }
    }

    /// The table a line outside any block belongs to: inferred (see [`crate::fragment`]),
    /// grouped in an implicit table. `span` is the line's span from its `:` or verb.
    fn fragment_table(&mut self, span: Span) -> TableId {
        if span.start as usize >= self.plan.end {
            let bytes = self.src.as_bytes();
            let line_start =
                memchr::memrchr(b'\n', &bytes[..span.start as usize]).map_or(0, |i| i + 1);
            self.plan = fragment::plan(self.src, line_start, self.prefix);
        }
        let kind = self
            .plan
            .kind_at(span.start)
            .or_else(|| {
                self.last_chain
                    .map(|(t, _, _)| self.set.tables[t.index()].kind)
            })
            .unwrap_or(TableKind::Filter);
        if self.stray.is_some() {
            self.flush_blocks();
        }
        let block = self.fragment.get_or_insert(Block {
            first: span,
            lines: 0,
            prompt: false,
            after_dump: self.seen_table,
            tables: [false; 6],
        });
        block.lines += 1;
        block.tables[table_slot(kind)] = true;
        if let Some(id) = self.implicit_tables[table_slot(kind)] {
            return id;
        }
        let id = TableId(self.set.tables.len() as u32);
        self.set.tables.push(Table {
            name: Span::default(),
            kind,
            header: Span::default(),
            commit: None,
            superseded: false,
            implicit: true,
            chains: Vec::new(),
            chain_names: ChainIndex::default(),
        });
        self.table_lines.push(self.line_no);
        self.tables_with_rules.push(false);
        self.late_chains.push(false);
        self.implicit_tables[table_slot(kind)] = Some(id);
        id
    }

    fn command(&mut self, verb: CommandVerb, span: Span, chain_span: Span) {
        let chain_name = self.set.text(chain_span);
        let table = match self.open {
            Some(t) => t,
            None => self.fragment_table(span),
        };
        let args = match self.words.get(2) {
            Some(first) => Span::new(first.start as usize, span.end as usize),
            None => Span::new(span.end as usize, span.end as usize),
        };
        if verb == CommandVerb::NewChain {
            let id = match self.set.tables[table.index()]
                .chain_names
                .get(self.src, chain_name)
            {
                Some(id) => id,
                None => {
                    let builtin = self.set.tables[table.index()].kind.is_builtin(chain_name);
                    self.new_chain(table, chain_name, chain_span, builtin)
                }
            };
            let chain = &mut self.set.chains[id.index()];
            if chain.declaration().is_none() {
                chain.set_declaration(span);
            }
        }
        // `-P CHAIN POLICY` (restore input, `iptables -S`) sets a built-in chain's policy.
        if verb == CommandVerb::Policy
            && let Some(&policy) = self.words.get(2)
            && matches!(self.set.text(policy), "ACCEPT" | "DROP")
            && self.set.tables[table.index()].kind.is_builtin(chain_name)
        {
            let id = match self.set.tables[table.index()]
                .chain_names
                .get(self.src, chain_name)
            {
                Some(id) => id,
                None => self.new_chain(table, chain_name, chain_span, true),
            };
            self.set.set_chain_policy(id, policy);
        }
        self.set.commands.push(Command {
            span,
            verb,
            table,
            chain: chain_span,
            args,
        });
    }

    fn rule(
        &mut self,
        op: RuleOp,
        span: Span,
        chain_span: Span,
        chain_name: &'a str,
        counters: Option<Span>,
    ) {
        let mut first_option = 2;
        let mut position = 0;
        if matches!(op, RuleOp::Insert | RuleOp::Replace | RuleOp::Delete)
            && let Some(&w) = self.words.get(2)
            && let Ok(n) = self.set.text(w).parse::<u32>()
        {
            position = n;
            first_option = 3;
        }
        let (tokens_start, target) = rule_tokens(
            self.src,
            self.words.get(first_option..).unwrap_or_default(),
            &mut self.set.tokens,
            &mut self.diags,
            &mut self.set.family,
        );
        let table = match self.open {
            Some(t) => t,
            None => self.fragment_table(span),
        };
        let chain = self.chain_for_rule(table, chain_name, chain_span);
        self.tables_with_rules[table.index()] = true;
        let id = self.set.rules.len() as u32;
        self.set.chains[chain.index()].count_rule();
        self.rules_in_chain_order &= chain.0 >= self.last_rule_chain.0;
        self.last_rule_chain = chain;
        let mut flags = 0;
        if counters.is_some() {
            flags |= Rule::HAS_COUNTERS;
        }
        if position != 0 {
            flags |= Rule::HAS_POSITION;
            self.set.positions.push((RuleId(id), position));
        }
        let target_name = (target != Rule::NO_TARGET)
            .then(|| crate::model::token_text(self.src, &self.set.tokens[target as usize]));
        self.set
            .target_classes
            .push(target_name.map_or(TargetClass::None, TargetClass::of_name));
        if target != Rule::NO_TARGET {
            flags |= Rule::HAS_TARGET;
            if self.set.tokens[target as usize].is_goto() {
                flags |= Rule::GOTO;
            }
            // The target is found again by a look at the rule's last tokens; one further back
            // (thousands of target options) is kept aside.
            let from_end = self.set.tokens.len() - 1 - target as usize;
            flags |=
                (from_end.min(Rule::TARGET_SCAN as usize) as u8) << Rule::TARGET_FROM_END_SHIFT;
            if from_end >= Rule::NEAR_TARGET {
                flags |= Rule::FAR_TARGET;
                self.set.far_targets.push((RuleId(id), target));
            }
            // A rule whose only word is its jump keeps no token when the text gives it back
            // exactly: `Ruleset::lone_target` produces it on demand.
            if target == tokens_start
                && self.set.tokens.len() == target as usize + 1
                && crate::model::lone_target_token(self.src, span)
                    == Some(self.set.tokens[target as usize])
            {
                self.set.tokens.truncate(target as usize);
            }
        }
        let block = id as usize / Ruleset::TOKEN_BLOCK;
        if block == self.set.token_blocks.len() {
            self.set.token_blocks.push(tokens_start);
        }
        let tokens_rel = match self
            .set
            .token_blocks
            .get(block)
            .and_then(|&b| tokens_start.checked_sub(b))
        {
            Some(rel) if rel <= u16::MAX as u32 => rel as u16,
            _ => {
                flags |= Rule::FAR_TOKENS;
                self.set.far_tokens.push((RuleId(id), tokens_start));
                0
            }
        };
        self.set.rules.push(Rule {
            span,
            chain,
            op,
            flags,
            tokens_rel,
            target_chain: Rule::NO_CHAIN,
        });
        if let Some(name) = target_name {
            self.queue_target(table, id, name);
        }
    }

    /// Queues the target of rule `rule` to be resolved a few rules later. In a large dump each
    /// lookup misses the cache; prefetching now and looking up later overlaps those misses
    /// with parsing instead of waiting on each.
    fn queue_target(&mut self, table: TableId, rule: u32, name: &'a str) {
        let slot = self.pending_at;
        if self.pending_len == PENDING_TARGETS {
            // The ring is full: the slot to write holds the oldest entry.
            let (oldest, hash, oldest_name) = self.pending_targets[slot];
            self.resolve_target(oldest, hash, oldest_name);
            // Halfway through the ring the index slots have arrived: fetch the name they point
            // at in the text, the last miss of a lookup.
            let (halfway, hash, name) =
                self.pending_targets[(slot + PENDING_TARGETS / 2) % PENDING_TARGETS];
            let table = self.set.chains[self.set.rules[halfway as usize].chain.index()].table;
            self.set.tables[table.index()]
                .chain_names
                .prefetch_name(self.src, hash, name.len());
        } else {
            self.pending_len += 1;
        }
        let hash = ChainIndex::hash(name.as_bytes());
        self.set.tables[table.index()].chain_names.prefetch(hash);
        self.pending_targets[slot] = (rule, hash, name);
        self.pending_at = (slot + 1) % PENDING_TARGETS;
    }

    /// Records the chain that rule `rule`'s target names in the rule's table, if any; `hash` is
    /// the hash of `name`, the target's name.
    fn resolve_target(&mut self, rule: u32, hash: u64, name: &str) {
        let table = self.set.chains[self.set.rules[rule as usize].chain.index()].table;
        let found = self.set.tables[table.index()]
            .chain_names
            .get_hashed(self.src, hash, name);
        self.set.rules[rule as usize].target_chain = found.map_or(Rule::NO_CHAIN, |c| c.0);
    }

    /// The target name of a rule that has a target.
    fn target_name(&self, rule: u32) -> &'a str {
        self.set
            .target_token(rule as usize)
            .map_or("", |t| crate::model::token_text(self.src, &t))
    }

    /// Resolves again the targets of rules that came before a chain of their table was
    /// created (restore input, undeclared chains): iptables-save declares every chain first,
    /// so a normal dump has none.
    fn resolve_late_targets(&mut self) {
        if !self.late_chains.iter().any(|&late| late) {
            return;
        }
        for i in 0..self.set.rules.len() {
            let rule = &self.set.rules[i];
            let table = self.set.chains[rule.chain.index()].table;
            if rule.target_chain == Rule::NO_CHAIN
                && rule.has_target()
                && self.late_chains[table.index()]
            {
                let name = self.target_name(i as u32);
                let hash = ChainIndex::hash(name.as_bytes());
                self.resolve_target(i as u32, hash, name);
            }
        }
    }

    fn chain_for_rule(&mut self, table: TableId, name: &'a str, name_span: Span) -> ChainId {
        if let Some((t, n, id)) = self.last_chain
            && t == table
        {
            if same_name(n.as_bytes(), name.as_bytes()) {
                return id;
            }
            // iptables-save prints rules chain by chain in declaration order: try the chain
            // declared next before hashing (a sequential read instead of a cache miss).
            let next = ChainId(id.0 + 1);
            if let Some(chain) = self.set.chains.get(next.index())
                && chain.table == table
                && same_name(self.set.text(chain.name).as_bytes(), name.as_bytes())
            {
                self.last_chain = Some((table, name, next));
                return next;
            }
        }
        let t = &self.set.tables[table.index()];
        let id = match t.chain_names.get(self.src, name) {
            Some(id) => id,
            None => {
                let builtin = t.kind.is_builtin(name);
                let report = !builtin && !t.implicit && t.kind != TableKind::Other;
                let table_name = self.set.text(t.name);
                let id = self.new_chain(table, name, name_span, builtin);
                if report {
                    self.diags.push(
                        Diagnostic::new(&codes::UNDECLARED_CHAIN, name_span, format!("chain `{name}` is not declared in table `{table_name}`"))
                            .with_label("rule added to an undeclared chain")
                            .with_help(format!("declare it before its rules with `:{name} - [0:0]`; iptables-restore fails with \"Chain '{name}' does not exist\""))
                            .in_chain(table, id),
                    );
                }
                id
            }
        };
        self.last_chain = Some((table, name, id));
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The class and goto flag kept for each rule say what its target says.
    #[test]
    fn target_classes_are_those_of_the_target_names() {
        let text = "*nat\n:PREROUTING ACCEPT [0:0]\n:DNAT - [0:0]\n:X - [0:0]\n\
            -A PREROUTING -j DNAT\n-A PREROUTING -p tcp -j DNAT --to-destination 1.2.3.4:5\n\
            -A PREROUTING -g X\n-A PREROUTING -s 1.2.3.4/32 -j KUBE-MARK-MASQ\n-A X -j MARK --set-xmark 0x4000/0x4000\n\
            -A X -j ACCEPT\n-A X -j DROP\n-A X -j REJECT\n-A X -j RETURN\n-A X -j MASQUERADE\n-A X -j SNAT --to-source 1.1.1.1\n\
            -A X -j REDIRECT\n-A X -j NETMAP --to 10.0.0.0/8\n-A X -j LOG\n-A X -s 10.0.0.0/8\n-A X -j\nCOMMIT\n";
        let generated =
            rulelint_dumpgen::generate(&rulelint_dumpgen::Shape::with_rule_target(3_000));
        for text in [text, generated.as_str()] {
            let parsed = parse(text);
            let mut classes = std::collections::HashSet::new();
            for rule in parsed.ruleset.iter_rules() {
                let target = rule.target();
                let class = target.map_or(TargetClass::None, |t| TargetClass::of_name(t.name()));
                assert_eq!(
                    rule.target_class(),
                    class,
                    "{}",
                    parsed.ruleset.text(rule.get().span)
                );
                assert_eq!(rule.is_goto(), target.is_some_and(|t| t.is_goto()));
                classes.insert(class);
            }
            if text.len() < 1000 {
                assert_eq!(classes.len(), 13, "{classes:?}");
            }
        }
    }

    #[test]
    fn each_chain_lists_its_rules_in_order_however_they_interleave() {
        let rules_of = |text: &str| -> Vec<(String, Vec<u32>)> {
            let parsed = parse(text);
            let set = &parsed.ruleset;
            set.iter_chains()
                .map(|c| (c.name().to_string(), c.rules().map(|r| r.id.0).collect()))
                .collect()
        };
        let in_order = "*filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n\
                        -A INPUT -j A\n-A A -j B\n-A A -j RETURN\n-A B -j ACCEPT\nCOMMIT\n";
        assert_eq!(
            rules_of(in_order),
            [
                ("INPUT".to_string(), vec![0]),
                ("A".to_string(), vec![1, 2]),
                ("B".to_string(), vec![3]),
            ]
        );
        let interleaved = "*filter\n:INPUT ACCEPT [0:0]\n:A - [0:0]\n:B - [0:0]\n\
                           -A B -j ACCEPT\n-A A -j B\n-A INPUT -j A\n-A B -j DROP\n-A A -j RETURN\nCOMMIT\n";
        assert_eq!(
            rules_of(interleaved),
            [
                ("INPUT".to_string(), vec![2]),
                ("A".to_string(), vec![1, 4]),
                ("B".to_string(), vec![0, 3]),
            ]
        );
    }

    #[test]
    fn targets_resolve_to_chains_created_after_the_rule() {
        // Restore input may jump to a chain before `-N` creates it; so may an undeclared chain.
        // The filler rules push the first lookup out of the queue before `-N` runs.
        let filler = "-A FORWARD -j ACCEPT\n".repeat(PENDING_TARGETS + 1);
        let text = format!(
            "*filter\n-A INPUT -j LATER\n{filler}-N LATER\n-A OUTPUT -g UNDECLARED\n\
             -A UNDECLARED -j RETURN\nCOMMIT\n"
        );
        let parsed = parse(&text);
        let set = &parsed.ruleset;
        let later = set.find_chain(TableId(0), "LATER").unwrap().id;
        let undeclared = set.find_chain(TableId(0), "UNDECLARED").unwrap().id;
        let targets: Vec<_> = set.iter_rules().map(|r| r.target_chain()).collect();
        assert_eq!(targets[0], Some(later));
        assert!(targets[1..=PENDING_TARGETS + 1].iter().all(Option::is_none));
        assert_eq!(targets[PENDING_TARGETS + 2..], [Some(undeclared), None]);
        let graph = crate::ChainGraph::build(set);
        assert_eq!(graph.jumps_into(later).count(), 1);
        let gotos: Vec<bool> = graph.jumps_into(undeclared).map(|(_, j)| j.goto).collect();
        assert_eq!(gotos, [true]);
    }

    fn codes(parsed: &Parsed<'_>) -> Vec<&'static str> {
        parsed.diagnostics.iter().map(|d| d.code).collect()
    }

    #[test]
    fn a_bullet_in_prose_is_not_a_table_header() {
        let text = "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n* note: this node was rebooted\n";
        assert_eq!(codes(&parse(text)), ["RL101"]);
    }

    #[test]
    fn huge_words_are_refused_not_stored() {
        let long = "x".repeat(70_000);
        let text = format!(
            "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -m comment --comment {long} -j ACCEPT\n-A INPUT -j DROP\nCOMMIT\n"
        );
        let parsed = parse(&text);
        assert_eq!(codes(&parsed), ["RL115"]);
        // The next rule is still read.
        assert_eq!(parsed.ruleset.rules.len(), 1);
    }

    #[test]
    fn old_style_negation_and_restore_verbs() {
        let text = "*filter\n:INPUT ACCEPT [0:0]\n:X - [0:0]\n-A INPUT -s ! 10.0.0.0/8 -p tcp -m tcp --dport ! 22 -j X\n-I INPUT 2 -j ACCEPT\n-N Y\n-A Y -j RETURN\n-F X\nCOMMIT\n";
        let parsed = parse(text);
        assert!(parsed.diagnostics.is_empty(), "{:#?}", parsed.diagnostics);
        let set = &parsed.ruleset;
        let first = set.iter_rules().next().expect("rule");
        assert!(first.source().expect("-s").negated);
        assert!(first.destination_ports().expect("--dport").negated);
        let insert = set.iter_rules().nth(1).expect("insert");
        assert_eq!((insert.get().op, insert.position()), (RuleOp::Insert, 2));
        assert_eq!(set.commands.len(), 2);
        assert!(
            set.find_chain(TableId(0), "Y")
                .expect("Y")
                .get()
                .declaration()
                .is_some()
        );
    }

    #[test]
    fn side_facts_of_rules_read_back() {
        // Counters (read back from the text), positions, a target far from its rule's end and
        // tokens far from their block's start live outside the 20-byte rule.
        let far = "--dport 1 ".repeat(40_000);
        let marks = "--set-mark 1 ".repeat(9);
        let text = format!(
            "*filter\n:INPUT ACCEPT [0:0]\n:X - [0:0]\n[5:300] \t-A INPUT -j X\n\
             -I INPUT 7 -j DROP\n-A INPUT -p tcp {far}-g X\n[1:2]-R X 3 -j ACCEPT\n-A X\n\
             -A X -p tcp -j MARK {marks}\nCOMMIT\n"
        );
        let parsed = parse(&text);
        let set = &parsed.ruleset;
        assert_eq!(std::mem::size_of::<Rule>(), 20);
        let rules: Vec<_> = set.iter_rules().collect();
        assert_eq!(rules.len(), 6);
        let counters = |i: usize| rules[i].counters_span().map(|s| set.text(s));
        assert_eq!(
            (0..6).map(counters).collect::<Vec<_>>(),
            [Some("[5:300]"), None, None, Some("[1:2]"), None, None]
        );
        assert_eq!(
            rules.iter().map(|r| r.position()).collect::<Vec<_>>(),
            [0, 7, 0, 3, 0, 0]
        );
        let targets: Vec<_> = rules
            .iter()
            .map(|r| r.target().map(|t| (t.name(), t.is_goto())))
            .collect();
        assert_eq!(
            targets,
            [
                Some(("X", false)),
                Some(("DROP", false)),
                Some(("X", true)),
                Some(("ACCEPT", false)),
                None,
                Some(("MARK", false)),
            ]
        );
        assert_eq!(rules[2].tokens().len(), 2 + 80_000 + 1);
        assert_eq!(rules[2].target_chain(), rules[0].target_chain());
        assert_eq!(rules[4].tokens().len(), 0);
        // The rules after the long one start too far from their block's first token; the MARK
        // target is 19 tokens from its rule's end.
        assert_eq!(set.far_tokens.len(), 3);
        assert_eq!(set.far_targets.len(), 1);
        assert_eq!(rules[5].tokens().len(), 2 + 1 + 18);
        assert_eq!(rules[5].target().map(|t| t.options().count()), Some(9));
        assert_eq!(rules[5].matches().count(), 1);
        assert_eq!(rules[3].tokens().len(), 1);
        let printed = crate::print(set);
        for line in [
            "[5:300] -A INPUT -j X\n",
            "-I INPUT 7 -j DROP\n",
            "[1:2] -R X 3 -j ACCEPT\n",
        ] {
            assert!(printed.contains(line), "{line}");
        }
    }

    /// A rule whose only word is its jump stores no token: the token is produced from the
    /// text, the same as the one the parser made, in every spelling; odd spellings stay stored.
    #[test]
    fn lone_jump_tokens_are_produced_not_stored() {
        let cases: &[(&str, &str, bool, bool)] = &[
            // (rule, the token's text, goto, produced)
            ("-A INPUT -j X", "-j X", false, true),
            ("-A INPUT -g X", "-g X", true, true),
            ("-A INPUT --jump X", "--jump X", false, true),
            ("-A INPUT --goto X", "--goto X", true, true),
            ("-A INPUT -j \t  X  ", "-j \t  X", false, true),
            ("[3:4] -A INPUT -j ACCEPT", "-j ACCEPT", false, true),
            ("-I INPUT 2 -j X", "-j X", false, true),
            ("-A INPUT -j X\r", "-j X", false, true),
            ("-A INPUT -j \"X\"", "-j \"X\"", false, true),
            ("-A INPUT -j X --log-prefix a", "-j X", false, false),
            ("-A INPUT -p tcp -j X", "-j X", false, false),
        ];
        for &(rule, token_text, goto, produced) in cases {
            let text = format!("*filter\n:INPUT ACCEPT [0:0]\n:X - [0:0]\n{rule}\nCOMMIT\n");
            let parsed = parse(&text);
            let set = &parsed.ruleset;
            let r = set.rule(RuleId(0));
            let target = r.target().expect(rule);
            assert_eq!(set.text(target.token().span()), token_text, "{rule}");
            assert_eq!(target.is_goto(), goto, "{rule}");
            assert_eq!(set.token_count() == 0, produced, "{rule}");
            if produced {
                assert_eq!(r.tokens().len(), 1, "{rule}");
                assert_eq!(r.tokens()[0], target.token(), "{rule}");
                assert_eq!(r.tokens().into_iter().count(), 1, "{rule}");
                assert_eq!(r.matches().count(), 0, "{rule}");
                assert_eq!(target.options().count(), 0, "{rule}");
                assert_eq!(r.target_chain().is_some(), target.name() == "X", "{rule}");
            }
            // The rule reads and prints the same as when its token was stored.
            let printed = crate::print(set);
            let again = parse(&printed);
            assert!(set.same_content(&again.ruleset), "{rule}");
        }
    }

    #[test]
    fn fragment_tables_are_inferred() {
        let text =
            "-A KUBE-SVC-AAAA -j KUBE-SEP-BBBB\n-A KUBE-SERVICES -d 10.96.0.1/32 -j REJECT\n";
        let parsed = parse(text);
        assert_eq!(codes(&parsed), ["RL104"]);
        assert!(parsed.diagnostics[0].message.contains("`nat` and `filter`"));
        let kinds: Vec<TableKind> = parsed.ruleset.tables.iter().map(|t| t.kind).collect();
        assert_eq!(kinds, [TableKind::Nat, TableKind::Filter]);
    }

    #[test]
    fn fragment_declarations_are_read_into_the_inferred_table() {
        let text = ":FORWARD ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:KUBE-FORWARD - [0:0]\n\
                    -A FORWARD -j KUBE-FORWARD\n:) not a declaration\n";
        let parsed = parse(text);
        assert_eq!(
            codes(&parsed),
            ["RL104", "RL101"],
            "{:#?}",
            parsed.diagnostics
        );
        let set = &parsed.ruleset;
        let policy = |kind| {
            let table = set.table_by_kind(kind).expect("table");
            assert!(table.get().implicit);
            table.chain("FORWARD").and_then(|c| c.policy())
        };
        assert_eq!(policy(TableKind::Mangle), Some("ACCEPT"));
        assert_eq!(policy(TableKind::Filter), Some("DROP"));
        let printed = crate::print(set);
        let reparsed = parse(&printed);
        assert!(set.same_content(&reparsed.ruleset));
    }

    #[test]
    fn policy_commands_set_the_policy() {
        let text = "-P INPUT ACCEPT\n-P FORWARD DROP\n-P OUTPUT ACCEPT\n-N KUBE-FORWARD\n\
                    -A FORWARD -j KUBE-FORWARD\n";
        let parsed = parse(text);
        let set = &parsed.ruleset;
        let filter = set.table_by_kind(TableKind::Filter).expect("filter");
        assert_eq!(set.tables.len(), 1);
        assert_eq!(
            filter.chain("FORWARD").and_then(|c| c.policy()),
            Some("DROP")
        );
        let printed = crate::print(set);
        let reparsed = parse(&printed);
        assert!(set.same_content(&reparsed.ruleset));
    }

    #[test]
    fn chain_spans_near_and_far_from_the_declaration() {
        // Policy and counters are read again from the declaration line, however long; a `-P`
        // command elsewhere goes to the side table.
        let long = "L".repeat(70_000);
        let text = format!(
            "*filter\n:INPUT DROP [3:4]\n:{long} - [1:2]\n:Y - [0:0]\n-P INPUT ACCEPT\n\
             -N Z\nCOMMIT\n"
        );
        let parsed = parse(&text);
        let set = &parsed.ruleset;
        assert_eq!(std::mem::size_of::<Chain>(), 28);
        let filter = set.table_by_kind(TableKind::Filter).expect("filter");
        let spans: Vec<_> = filter
            .chains()
            .map(|c| {
                let text = |s: Option<Span>| s.map(|s| set.text(s));
                (
                    text(c.get().declaration()).map(|d| d.len()),
                    text(c.policy_span()),
                    text(c.counters_span()),
                )
            })
            .collect();
        assert_eq!(
            spans,
            [
                (Some(17), Some("ACCEPT"), Some("[3:4]")),
                (Some(long.len() + 9), Some("-"), Some("[1:2]")),
                (Some(10), Some("-"), Some("[0:0]")),
                (Some(4), None, None),
            ]
        );
        assert_eq!(set.far_chain_spans.policies.len(), 1);
        let printed = crate::print(set);
        let reparsed = parse(&printed);
        assert!(set.same_content(&reparsed.ruleset));
    }

    #[test]
    fn comments_do_not_make_a_rule_conditional() {
        let text = "*filter\n:KUBE-FIREWALL - [0:0]\n\
            -A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -j DROP\n\
            -A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 -j DROP\n\
            COMMIT\n";
        let parsed = parse(text);
        let rules: Vec<bool> = parsed
            .ruleset
            .iter_rules()
            .map(|r| r.is_unconditional())
            .collect();
        assert_eq!(rules, [true, false]);
    }
}

#[cfg(test)]
mod prefix_tests {
    use super::*;

    const DUMP: &str = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT ACCEPT [0:0]\n\
        :KUBE-FORWARD - [0:0]\n-A FORWARD -m comment --comment \"kubernetes forwarding rules\" -j KUBE-FORWARD\n\
        -A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT\nCOMMIT\n";

    fn prefixed(prefix: impl Fn(usize) -> String, crlf: bool) -> String {
        let end = if crlf { "\r\n" } else { "\n" };
        DUMP.lines()
            .enumerate()
            .map(|(i, l)| format!("{}{l}{end}", prefix(i)))
            .collect()
    }

    #[test]
    fn prefixed_pastes_read_like_the_dump_with_spans_in_the_original() {
        let plain = parse(DUMP);
        type LinePrefix = Box<dyn Fn(usize) -> String>;
        let prefixes: [(&str, LinePrefix); 6] = [
            ("quote", Box::new(|_| "> ".to_string())),
            (
                "nested",
                Box::new(|i| if i % 2 == 0 { ">> " } else { "> > " }.to_string()),
            ),
            ("hash", Box::new(|_| "  # ".to_string())),
            ("plus", Box::new(|_| "+ ".to_string())),
            (
                "cri",
                Box::new(|i| format!("2024-05-02T10:11:{i:02}.123456789Z stdout F ")),
            ),
            (
                "timestamp",
                Box::new(|i| format!("2024-05-02T10:11:{i:02}.1+02:00 ")),
            ),
        ];
        for (name, prefix) in prefixes {
            for crlf in [false, true] {
                let text = prefixed(&prefix, crlf);
                let parsed = parse(&text);
                assert_eq!(
                    codes(&parsed),
                    ["RL118"],
                    "{name} {crlf}: {:#?}",
                    parsed.diagnostics
                );
                assert!(
                    parsed.ruleset.same_content(&plain.ruleset),
                    "{name} {crlf}: content differs"
                );
                // Spans are in the original text: the first rule starts after line 6's prefix.
                let rule = parsed.ruleset.iter_rules().next().expect("rule");
                let line_start = text.match_indices('\n').nth(4).map(|(i, _)| i + 1).unwrap();
                assert_eq!(
                    rule.get().span.start as usize,
                    line_start + prefix(5).len(),
                    "{name} {crlf}"
                );
                assert!(text[rule.get().span.range()].starts_with("-A FORWARD"));
            }
        }
    }

    #[test]
    fn prefix_lines_can_be_missing_or_blank() {
        // Blank quote lines, a line that lost its prefix, prose after, truncated.
        let text = "> *filter\n>\n> :INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\n> -A INPUT -j DROP\n";
        let parsed = parse(text);
        assert_eq!(codes(&parsed), ["RL118", "RL103"]);
        assert_eq!(parsed.ruleset.rules.len(), 2);
    }

    fn codes(parsed: &Parsed<'_>) -> Vec<&'static str> {
        parsed.diagnostics.iter().map(|d| d.code).collect()
    }
}

#[cfg(test)]
mod wrapped_rule_tests {
    use super::*;

    fn wrapped(rules: usize) -> String {
        let mut text = String::from("*filter\n:INPUT ACCEPT [0:0]\n");
        for i in 0..rules {
            text.push_str(&format!(
                "-A INPUT -p tcp --dport {} \\\n  -j ACCEPT\n",
                1000 + i
            ));
        }
        text.push_str("-A INPUT -j DROP\nCOMMIT\n");
        text
    }

    #[test]
    fn a_hand_wrapped_paste_is_one_finding_that_counts_its_rules() {
        for (rules, message) in [
            (1, "rule is wrapped onto the next line with a backslash"),
            (
                2,
                "rule is wrapped onto the next line with a backslash, and so is 1 more rule (lines 5)",
            ),
            (
                13,
                "rule is wrapped onto the next line with a backslash, and so are 12 more rules (lines 5, 7, 9, 11, 13, 15, 17, 19, 21, 23 and 2 more)",
            ),
        ] {
            let text = wrapped(rules);
            let parsed = parse(&text);
            let found: Vec<&Diagnostic> = parsed
                .diagnostics
                .iter()
                .filter(|d| d.code == "RL107")
                .collect();
            assert_eq!(found.len(), 1, "{rules} wrapped rules: {found:?}");
            assert_eq!(found[0].message, message);
            // Every rule is still read, joined.
            assert_eq!(parsed.ruleset.rules.len(), rules + 1);
        }
    }
}
