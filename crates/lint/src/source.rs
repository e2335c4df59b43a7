//! What a file holds: the sections that are `iptables-save` output and those that are nftables
//! (`nft list ruleset` text, `nft -j` JSON, or the `add table ...` transaction form), so that
//! one file with `iptables-save; nft list ruleset` of one node is read by both parsers.
//!
//! One pass over the lines. nft blocks start at a line `table FAMILY NAME {` (or a headerless
//! `chain|set|map NAME {` of a partial copy) and end where its braces balance; a JSON document
//! starts at a line `{"nftables": [` and ends where its brackets balance; transaction lines
//! start with `add`, `flush`, `delete`, ... and a kind keyword. Lines that are none of these
//! and no iptables-save line either (blank, comments, prose) join a neighbouring section.
//!
//! **Invariant:** a text with no nftables block is one [`SectionKind::Iptables`] section
//! covering all of it, so a pure iptables-save file takes exactly the path it always took.

use crate::config::Config;
use crate::nft::check::check_nft;
use crate::nft::context::IptablesFacts;
use rulelint_parser::{Diagnostic, LineIndex, Parsed, Span};
use std::ops::Range;

/// The format of a section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SectionKind {
    /// `iptables-save` output (and everything the iptables parser tolerates around it).
    Iptables,
    /// `nft list ruleset` text (whole, one table, one chain, with `# handle` comments).
    Nft,
    /// `nft -j list ruleset` JSON.
    NftJson,
    /// The `add table ...`, `add rule ...` lines kube-proxy pipes to `nft -f`.
    NftTransaction,
    /// kube-proxy's IPVS-mode state: `ipvsadm -Ln` (or `ipvsadm-save -n`), `ipset save` /
    /// `ipset list`, `ip addr`, in any order (read by `rulelint-ipvs`).
    Ipvs,
}

impl SectionKind {
    /// A short name for messages.
    pub fn describe(self) -> &'static str {
        match self {
            SectionKind::Iptables => "iptables-save output",
            SectionKind::Nft => "`nft list ruleset` text",
            SectionKind::NftJson => "`nft -j list ruleset` JSON",
            SectionKind::NftTransaction => "nft transaction (`add table ...`) text",
            SectionKind::Ipvs => "ipvsadm, ipset or ip addr output",
        }
    }
}

/// A part of a file in one format. Ranges are byte ranges of the text, on line boundaries;
/// the sections of a text cover it in order, without gaps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// Its format.
    pub kind: SectionKind,
    /// Its bytes in the text.
    pub range: Range<usize>,
}

/// What one line is, for splitting.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LineClass {
    /// A line only iptables-save writes (`*nat`, `:CHAIN`, `-A`, `COMMIT`, its header).
    Iptables,
    /// Blank, a comment or prose: joins a neighbour.
    Neutral,
}

/// Splits `text` into sections. Linear in the text; never panics. `ipvsadm`, `ipset` and `ip
/// addr` output is one [`SectionKind::Ipvs`] section from its first line
/// ([`rulelint_ipvs::opens_output`]) to the next iptables-save line or nftables item.
///
/// ```
/// use rulelint_lint::source::{sections, SectionKind};
/// let text = "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\ntable ip kube-proxy {\n}\n";
/// let kinds: Vec<_> = sections(text).into_iter().map(|s| (s.kind, s.range)).collect();
/// assert_eq!(kinds, vec![(SectionKind::Iptables, 0..35), (SectionKind::Nft, 35..59)]);
/// ```
pub fn sections(text: &str) -> Vec<Section> {
    sections_with(text, false).0
}

/// Where [`sections_with`] guessed an `nft -j` document to end: its `{` and its last byte.
type JsonGuess = Option<(usize, usize)>;

/// [`sections`]; with `guess_json`, the first `nft -j` document is taken to end at the text's
/// last non-blank byte when that is a `}` (one file, one `nft -j list ruleset`), without
/// scanning it: the caller checks the guess with the document's reader, which reads the whole
/// text anyway ([`rulelint_nft::parse_json_with_extent`]), and splits again without guessing
/// when it was wrong.
fn sections_with(text: &str, guess_json: bool) -> (Vec<Section>, JsonGuess) {
    sections_noting_tables(text, guess_json, &mut Vec::new())
}

/// [`sections_with`], which also pushes to `table_lines` the start of each line it reads as
/// opening an nft `table` block (`table ` at the line's first byte), in order: where the
/// two-thread parse of a large listing looks for the table its second half starts in, rather
/// than searching the text's first half for it again.
fn sections_noting_tables(
    text: &str,
    guess_json: bool,
    table_lines: &mut Vec<usize>,
) -> (Vec<Section>, JsonGuess) {
    let mut guessed = None;
    if !opens_nft(text) {
        return (
            vec![Section {
                kind: SectionKind::Iptables,
                range: 0..text.len(),
            }],
            guessed,
        );
    }
    let bytes = text.as_bytes();
    let last = text.trim_end().len().checked_sub(1);
    let mut guess = last.filter(|&l| guess_json && bytes[l] == b'}');
    // (kind, range) of every nft item, and the classes of the lines between them.
    let mut items: Vec<(Option<SectionKind>, Range<usize>)> = Vec::new();
    let mut pos = 0;
    let mut any_nft = false;
    while pos < bytes.len() {
        let end = line_end(bytes, pos);
        let line = &text[pos..end];
        let word_start = line.len() - line.trim_start().len();
        let trimmed = line[word_start..].trim_end();
        if opens_ipvs(text, trimmed, end) {
            any_nft = true;
            let block_end = ipvs_end(text, end);
            push_item(&mut items, Some(SectionKind::Ipvs), pos..block_end);
            pos = block_end;
            continue;
        }
        if let Some(kind) = nft_opening(trimmed) {
            any_nft = true;
            if kind == SectionKind::Nft && line.starts_with("table ") {
                table_lines.push(pos);
            }
            let block_end = match kind {
                SectionKind::NftJson => {
                    let open = pos + word_start;
                    match guess.take().filter(|&close| close > open) {
                        Some(close) => {
                            guessed = Some((open, close));
                            line_end(bytes, close)
                        }
                        None => json_end(bytes, open),
                    }
                }
                SectionKind::NftTransaction => transaction_end(text, pos),
                _ => block_end(text, pos),
            };
            push_item(&mut items, Some(kind), pos..block_end);
            pos = block_end;
            continue;
        }
        let class = match classify(trimmed) {
            LineClass::Iptables => Some(SectionKind::Iptables),
            LineClass::Neutral => None,
        };
        push_item(&mut items, class, pos..end);
        pos = end;
    }
    if !any_nft {
        return (
            vec![Section {
                kind: SectionKind::Iptables,
                range: 0..text.len(),
            }],
            guessed,
        );
    }
    // Neutral runs join the section before them (or the first section, at the start).
    let mut out: Vec<Section> = Vec::new();
    let mut pending_start: Option<usize> = None;
    for (kind, range) in items {
        match kind {
            None => match out.last_mut() {
                Some(last) => last.range.end = range.end,
                None => {
                    pending_start.get_or_insert(range.start);
                }
            },
            Some(kind) => {
                let start = pending_start.take().unwrap_or(range.start);
                match out.last_mut() {
                    Some(last) if last.kind == kind => last.range.end = range.end,
                    _ => out.push(Section {
                        kind,
                        range: start..range.end,
                    }),
                }
            }
        }
    }
    if let Some(start) = pending_start {
        // Only possible when no item has a kind; `any_nft` rules that out, but stay total.
        out.push(Section {
            kind: SectionKind::Iptables,
            range: start..text.len(),
        });
    }
    join_scripts(text, &mut out);
    (out, guessed)
}

/// An `nft -f` script that mixes blocks and commands is one ruleset, its statements applied in
/// order: a run of nft text and transaction sections (nothing else between them) becomes one
/// [`SectionKind::NftTransaction`] section, which `rulelint_nft::parse_transaction` reads
/// whole, when it holds a command after a block or a command other than `flush ruleset` before
/// one. A listing under a `flush ruleset` line (`/etc/nftables.conf`) stays as it was read.
fn join_scripts(text: &str, sections: &mut Vec<Section>) {
    let has = |kind| sections.iter().any(|s| s.kind == kind);
    if !has(SectionKind::Nft) || !has(SectionKind::NftTransaction) {
        return;
    }
    let nft_text = |s: &Section| matches!(s.kind, SectionKind::Nft | SectionKind::NftTransaction);
    let mut joined = Vec::with_capacity(sections.len());
    let mut i = 0;
    while i < sections.len() {
        let run = sections[i..].iter().take_while(|s| nft_text(s)).count();
        if run == 0 {
            joined.push(sections[i].clone());
            i += 1;
            continue;
        }
        let parts = &sections[i..i + run];
        let first_block = parts.iter().position(|s| s.kind == SectionKind::Nft);
        let script = first_block.is_some_and(|first| {
            parts.iter().enumerate().any(|(k, s)| {
                s.kind == SectionKind::NftTransaction
                    && (k > first || !only_flush_ruleset(&text[s.range.clone()]))
            })
        });
        if script {
            joined.push(Section {
                kind: SectionKind::NftTransaction,
                range: parts[0].range.start..parts[run - 1].range.end,
            });
        } else {
            joined.extend_from_slice(parts);
        }
        i += run;
    }
    *sections = joined;
}

/// Whether every command of a transaction section is `flush ruleset`.
fn only_flush_ruleset(section: &str) -> bool {
    section.lines().all(|line| {
        let words: Vec<&str> = words(line.trim()).collect();
        matches!(
            words.as_slice(),
            [] | ["flush", "ruleset"] | ["flush", "ruleset;"]
        ) || !matches!(nft_opening(line.trim()), Some(SectionKind::NftTransaction))
    })
}

fn push_item(
    items: &mut Vec<(Option<SectionKind>, Range<usize>)>,
    kind: Option<SectionKind>,
    range: Range<usize>,
) {
    match items.last_mut() {
        Some((k, r)) if *k == kind && r.end == range.start && kind != Some(SectionKind::Nft) => {
            r.end = range.end
        }
        _ => items.push((kind, range)),
    }
}

/// The end of the line starting at `pos`, after its `\n`.
fn line_end(bytes: &[u8], pos: usize) -> usize {
    memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1)
}

/// Whether any line of `text` opens an nftables item or IPVS-mode output. Lines that start
/// (after blanks) with `-`, `:`, `*` or `#` cannot (but `-A -t`, ipvsadm-save's), and are
/// nearly all of an iptables-save dump: this runs before every check, so a pure iptables dump
/// costs one newline search per line here.
fn opens_nft(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        // The lines of a dump, told by their first byte (as below) before anything else is read.
        let plain = match bytes[pos] {
            b':' | b'*' | b'#' | b'\n' | b'\r' => true,
            b'-' => !bytes[pos..].starts_with(b"-A -"),
            _ => false,
        };
        let end = line_end(bytes, pos);
        if plain {
            pos = end;
            continue;
        }
        let line = &text[pos..end];
        let first = line.bytes().find(|b| !matches!(b, b' ' | b'\t'));
        let candidate = match first {
            None | Some(b':' | b'*' | b'#' | b'\n' | b'\r') => false,
            // iptables chain names never start with `-`: `-A -` is ipvsadm-save.
            Some(b'-') => line.trim_start().starts_with("-A -"),
            Some(_) => true,
        };
        if candidate && (nft_opening(line.trim()).is_some() || opens_ipvs(text, line.trim(), end)) {
            return true;
        }
        pos = end;
    }
    false
}

/// Whether the line (trimmed) opens IPVS-mode output; `next_start` is where the next line
/// starts (an `ipset list` block opens with `Name:` then `Type:`).
fn opens_ipvs(text: &str, trimmed: &str, next_start: usize) -> bool {
    let next = || {
        let bytes = text.as_bytes();
        (next_start < bytes.len()).then(|| &text[next_start..line_end(bytes, next_start)])
    };
    rulelint_ipvs::opens_output(
        trimmed,
        if trimmed.starts_with("Name:") {
            next()
        } else {
            None
        },
    )
}

/// The end of an IPVS-mode section whose first line ends at `from`: before the next
/// iptables-save line or nftables item, or the end of the text.
fn ipvs_end(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut pos = from;
    while pos < bytes.len() {
        let end = line_end(bytes, pos);
        let trimmed = text[pos..end].trim();
        if classify(trimmed) == LineClass::Iptables || nft_opening(trimmed).is_some() {
            return pos;
        }
        pos = end;
    }
    bytes.len()
}

fn classify(trimmed: &str) -> LineClass {
    let b = trimmed.as_bytes();
    let iptables = match b.first() {
        Some(b'*') => b.len() > 1 && b[1..].iter().all(|c| c.is_ascii_lowercase()),
        Some(b':') => b.len() > 1 && !b[1].is_ascii_whitespace(),
        Some(b'-') => {
            matches!(
                b.get(1),
                Some(b'A' | b'I' | b'N' | b'P' | b'D' | b'R' | b'X' | b'F' | b'Z')
            ) && b.get(2).is_none_or(|c| c.is_ascii_whitespace())
                // `-A -t 10.96.0.1:443 -s rr` is ipvsadm-save's: no chain starts with `-`.
                && !trimmed[2..].trim_start().starts_with('-')
        }
        _ => trimmed == "COMMIT" || trimmed.starts_with("# Generated by ip"),
    };
    if iptables {
        LineClass::Iptables
    } else {
        LineClass::Neutral
    }
}

/// The words of a line before a `#` comment.
fn words(trimmed: &str) -> impl Iterator<Item = &str> {
    trimmed
        .split('#')
        .next()
        .unwrap_or("")
        .split_ascii_whitespace()
}

/// Whether a line opens an nftables item, and which: a `nft -j` document, a block of a
/// listing (`table ip t {`, `chain c {`, or a table on one line), or a command of an `nft -f`
/// script ([`rulelint_nft::is_command_line`]).
fn nft_opening(trimmed: &str) -> Option<SectionKind> {
    if trimmed.starts_with('{') && trimmed[1..].trim_start().starts_with("\"nftables\"") {
        return Some(SectionKind::NftJson);
    }
    let mut w = words(trimmed);
    let first = w.next()?;
    let rest: Vec<&str> = w.collect();
    let opens_block = match first {
        // `table FAMILY NAME {` or `table NAME {`: a `{` ends the header line, or, in an
        // `nft -f` file, opens a table written on one line (`table ip nat { chain ... }`).
        "table" => {
            let brace = rest.iter().position(|w| *w == "{");
            matches!(rest.as_slice(), [_, "{"] | [_, _, "{"])
                || matches!(rest.as_slice(), [_, n] | [_, _, n] if n.ends_with('{') && n.len() > 1)
                || (matches!(brace, Some(1 | 2)) && brace.is_some_and(|b| rest.len() > b + 1))
        }
        "chain" | "set" | "map" => matches!(rest.as_slice(), [_, "{"]),
        _ => false,
    };
    if opens_block {
        Some(SectionKind::Nft)
    } else {
        rulelint_nft::is_command_line(trimmed).then_some(SectionKind::NftTransaction)
    }
}

/// The end of an nft text block that opens on the line at `pos`: after the line on which its
/// braces balance, or before an iptables-save line (a paste cut inside the block), or the end.
/// Braces count outside strings and before a `#` comment.
///
/// This runs over every byte of an nft listing before it is parsed, so it reads 64-byte blocks
/// from bit masks ([`rulelint_nft::extent::block_end`]); a line start costs a look at its first
/// word byte. (Events from `memchr` passes cost about 260 instructions a line, a tenth of
/// checking a 5,000-Service listing; a line-by-line reading about 400.)
fn block_end(text: &str, pos: usize) -> usize {
    rulelint_nft::extent::block_end_in_two(text, pos, |next| starts_iptables_line(text, next))
}

/// Whether the line starting at `start` is an iptables-save line (`classify` of it trimmed).
/// Only a line whose first word byte is `*`, `:`, `-`, `C`, `#`, a control or non-ASCII byte
/// can be: nft listing lines are looked at no further.
fn starts_iptables_line(text: &str, start: usize) -> bool {
    let bytes = text.as_bytes();
    let first = bytes[start..]
        .iter()
        .find(|&&b| b != b' ' && b != b'\t')
        .copied();
    if let Some(b) = first
        && b.is_ascii_graphic()
        && !matches!(b, b'*' | b':' | b'-' | b'C' | b'#')
    {
        return false;
    }
    classify(text[start..line_end(bytes, start)].trim()) == LineClass::Iptables
}

/// The end of a JSON document that starts at `start`: after the line of its closing bracket.
/// Strings are skipped with `memchr` to their closing quote: most of `nft -j` is strings.
fn json_end(bytes: &[u8], start: usize) -> usize {
    let mut depth: i64 = 0;
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                loop {
                    let Some(k) = bytes
                        .get(i..)
                        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                    else {
                        return bytes.len();
                    };
                    if bytes[i + k] == b'"' {
                        i += k + 1;
                        break;
                    }
                    i += k + 2; // a backslash and the byte it escapes
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth <= 0 {
                    return line_end(bytes, i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The end of a run of transaction lines starting at `pos` (blank and `#` lines in between
/// belong to it when more transaction lines follow).
fn transaction_end(text: &str, pos: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end_of_run = line_end(bytes, pos);
    let mut cursor = end_of_run;
    while cursor < bytes.len() {
        let end = line_end(bytes, cursor);
        let trimmed = text[cursor..end].trim();
        if nft_opening(trimmed) == Some(SectionKind::NftTransaction) {
            end_of_run = end;
        } else if !(trimmed.is_empty() || trimmed.starts_with('#')) {
            break;
        }
        cursor = end;
    }
    end_of_run
}

/// One file read and checked: the iptables part, the nft sections and every finding, with
/// spans into the file's text.
pub struct CheckedSource<'a> {
    /// The sections of the text.
    pub sections: Vec<Section>,
    /// The iptables part: the whole text when it has no nftables section; otherwise the
    /// iptables sections read at their place (the other sections read as blank lines), over the
    /// file's text.
    pub iptables: Parsed<'a>,
    /// Each `nft list ruleset` section: its offset in the text and what was read from it
    /// (spans relative to the section).
    pub nft: Vec<(usize, rulelint_nft::Parsed<'a>)>,
    /// The IPVS-mode state of the [`SectionKind::Ipvs`] sections (spans into the text), when
    /// there are any.
    pub ipvs: Option<rulelint_ipvs::Ipvs<'a>>,
    /// Parser diagnostics and findings of both kinds, sorted by position then code.
    pub diagnostics: Vec<Diagnostic>,
}

impl CheckedSource<'_> {
    /// Caps the findings as [`check_source`] does ([`cap_findings`]).
    pub fn cap_findings(&mut self) {
        cap_findings(&mut self.diagnostics);
    }

    /// True when the text held nothing that looks like either kind of ruleset.
    pub fn has_no_content(&self) -> bool {
        self.iptables.has_no_content()
            && self
                .sections
                .iter()
                .all(|s| s.kind == SectionKind::Iptables)
    }
}

/// Reads `text` by sections and checks each with its own parser and lints; the configuration
/// applies to both. A text without nftables sections is checked exactly as
/// [`crate::check`] checks `rulelint_parser::parse(text)`.
pub fn check_source<'a>(text: &'a str, config: &Config) -> CheckedSource<'a> {
    let mut checked = check_source_with(text, config, false, true);
    checked.cap_findings();
    checked
}

/// [`check_source`] that leaves what it reads and does not return (an `nft -j` section's
/// model) to the process exit instead of freeing it: for a run that checks one file and then
/// exits, where freeing a large model one node at a time is wasted work.
pub fn check_source_unfreed<'a>(text: &'a str, config: &Config) -> CheckedSource<'a> {
    let mut checked = check_source_with(text, config, true, true);
    checked.cap_findings();
    checked
}

/// [`check_source`] (or [`check_source_unfreed`], when `unfreed`) that keeps every finding of
/// the lints, not [`MAX_FINDINGS_PER_CODE`] of each code, for a caller that drops some before
/// it reports the rest and then caps them ([`cap_findings`]). A baseline needs
/// it: it must record every finding, and a known finding past the cap that moves into the
/// report when another one is fixed must still be known. The parsers cap their own findings
/// as they read unless the process asked them not to
/// ([`rulelint_parser::cap::keep_every_finding`]), as the CLI does with a baseline.
pub fn check_source_every_finding<'a>(
    text: &'a str,
    config: &Config,
    unfreed: bool,
) -> CheckedSource<'a> {
    check_source_with(text, config, unfreed, true)
}

fn check_source_with<'a>(
    text: &'a str,
    config: &Config,
    unfreed: bool,
    guess_json: bool,
) -> CheckedSource<'a> {
    let SplitText {
        mut sections,
        guessed,
        parsed,
        markers,
        mut table_lines,
    } = sections_beside_parse(text, guess_json);
    // An `nft -j` document whose end was guessed is read first: its reader confirms the guess
    // (then this read is the section's), or the text is split again the slow way.
    let ahead_strings = rulelint_nft::Strings::new();
    let mut ahead = None;
    if let Some((open, close)) = guessed {
        let section = sections
            .iter()
            .find(|s| s.kind == SectionKind::NftJson && s.range.contains(&open));
        let confirmed = section.and_then(|section| {
            let start = section.range.start;
            let body = &text[section.range.clone()];
            let (parsed, extent) = rulelint_nft::parse_json_with_extent(body, &ahead_strings);
            if extent == Some(open - start..close + 1 - start) {
                Some((start, parsed))
            } else {
                if unfreed {
                    std::mem::forget(parsed);
                }
                None
            }
        });
        if confirmed.is_none() {
            table_lines.clear();
            sections = sections_noting_tables(text, false, &mut table_lines).0;
        }
        ahead = confirmed;
    }
    if sections.iter().all(|s| s.kind == SectionKind::Iptables) {
        let (iptables, mut diagnostics) = match parsed {
            Some(parsed) => {
                let unsupported = markers.is_none_or(|m| m.unsupported);
                let diagnostics =
                    crate::check::check_knowing_unsupported_marker(&parsed, config, unsupported);
                (parsed, diagnostics)
            }
            None => {
                let parsed = rulelint_parser::parse(text);
                let diagnostics = crate::check(&parsed, config);
                (parsed, diagnostics)
            }
        };
        // Without its marker in the text, `apply` finds nothing to suppress or report.
        if markers.is_none_or(|m| m.suppression) {
            crate::suppression::apply(text, &mut diagnostics, config);
        }
        crate::sort(&mut diagnostics);
        return CheckedSource {
            sections,
            iptables,
            nft: Vec::new(),
            ipvs: None,
            diagnostics,
        };
    }
    let iptables = parse_iptables_sections(text, &sections);
    let mut diagnostics: Vec<Diagnostic> = crate::check(&iptables, config)
        .into_iter()
        .filter(|d| d.code != rulelint_parser::codes::NO_CONTENT.code)
        .collect();
    let facts = iptables_facts(&iptables);
    let mut nft = Vec::new();
    for section in &sections {
        let body = &text[section.range.clone()];
        let offset = section.range.start;
        let shift = |mut d: Diagnostic| {
            d.span = Span::new(d.span.start as usize + offset, d.span.end as usize + offset);
            d
        };
        match section.kind {
            SectionKind::Nft => {
                // The table lines are in text order: the section's are found by two binary
                // searches, not a pass over every section's (a paste of many short sections).
                let from = table_lines.partition_point(|&at| at < section.range.start);
                let to = table_lines.partition_point(|&at| at < section.range.end);
                let tables: Vec<usize> = table_lines[from..to.max(from)]
                    .iter()
                    .map(|&at| at - offset)
                    .collect();
                let parsed = rulelint_nft::parse_knowing_tables(body, &tables);
                diagnostics.extend(check_nft(&parsed, &facts, config).into_iter().map(shift));
                nft.push((offset, parsed));
            }
            SectionKind::NftTransaction => {
                let parsed = rulelint_nft::parse_transaction(body);
                diagnostics.extend(check_nft(&parsed, &facts, config).into_iter().map(shift));
                nft.push((offset, parsed));
            }
            // Read together below: one node's ipvsadm, ipset and ip addr are compared.
            SectionKind::Iptables | SectionKind::Ipvs => {}
            SectionKind::NftJson => {
                // Strings the JSON escapes are interned in a store that lives for this check
                // only: the findings are owned, the model is not kept.
                let strings = rulelint_nft::Strings::new();
                let parsed = match ahead.take_if(|(start, _)| *start == offset) {
                    Some((_, parsed)) => parsed,
                    None => rulelint_nft::parse_json(body, &strings),
                };
                diagnostics.extend(check_nft(&parsed, &facts, config).into_iter().map(shift));
                if unfreed {
                    std::mem::forget(parsed);
                    std::mem::forget(strings);
                }
            }
        }
    }
    if unfreed {
        std::mem::forget(ahead);
        std::mem::forget(ahead_strings);
    }
    let ipvs = crate::ipvs::check::read_ipvs(text, &sections).map(|(ipvs, read)| {
        let has_iptables = sections
            .iter()
            .any(|s| s.kind == SectionKind::Iptables && !text[s.range.clone()].trim().is_empty());
        diagnostics.extend(crate::ipvs::check::check_ipvs(
            text,
            &ipvs,
            &read,
            has_iptables.then_some(&iptables),
            config,
        ));
        ipvs
    });
    if markers.is_none_or(|m| m.suppression) {
        crate::suppression::apply(text, &mut diagnostics, config);
    }
    crate::sort(&mut diagnostics);
    CheckedSource {
        sections,
        iptables,
        nft,
        ipvs,
        diagnostics,
    }
}

/// Whether a text holds the words that only two passes look for, each over the whole text:
/// RL502's `[unsupported` and a suppression's `rulelint:allow=`. Searched on the second thread
/// of a large text's split into sections (`sections_beside_parse`), where the core is otherwise
/// idle, rather than after the lints, which keep both cores busy.
#[derive(Clone, Copy, Debug)]
struct TextMarkers {
    unsupported: bool,
    suppression: bool,
}

impl TextMarkers {
    /// Only a suppression's marker, for a text that is not parsed as iptables-save beside its
    /// split (`unsupported` is then true: unknown).
    fn find_suppression(text: &str) -> TextMarkers {
        TextMarkers {
            unsupported: true,
            suppression: contains(text, crate::suppression::MARKER.as_bytes()),
        }
    }

    fn find(text: &str) -> TextMarkers {
        TextMarkers {
            unsupported: contains(text, crate::context::UNSUPPORTED_MARKER),
            ..TextMarkers::find_suppression(text)
        }
    }
}

/// Whether `word` occurs in `text` (memchr's SIMD search over the whole text).
fn contains(text: &str, word: &[u8]) -> bool {
    memchr::memmem::find(text.as_bytes(), word).is_some()
}

/// From this size on, a text that opens like an iptables-save dump is parsed whole while its
/// sections are found on a second thread: the split reads every line once more (about 8% of
/// the parse), and nearly every such text has no other section.
pub const PARSE_BESIDE_SECTIONS_BYTES: usize = 1 << 20;

/// What [`sections_beside_parse`] returns.
struct SplitText<'a> {
    sections: Vec<Section>,
    /// The guessed end of an `nft -j` document.
    guessed: JsonGuess,
    /// The iptables parse made beside the split.
    parsed: Option<Parsed<'a>>,
    /// The text's markers, found beside the split of a large text (`None`: not searched).
    markers: Option<TextMarkers>,
    /// The start of each nft `table` line the split read.
    table_lines: Vec<usize>,
}

/// The text's sections ([`sections_with`], with its guess of an `nft -j` document's end). A
/// large text's [`TextMarkers`] are found meanwhile on a second thread, and when it opens with
/// an iptables-save table (`opens_with_table`), it is parsed as a whole on this one, the
/// sections on the other. The parse is thrown away when another section turns up: the
/// iptables parser then reads only the iptables sections. In WebAssembly, one thread: no
/// markers, no parse.
fn sections_beside_parse(text: &str, guess_json: bool) -> SplitText<'_> {
    let mut table_lines = Vec::new();
    if cfg!(target_arch = "wasm32") || text.len() < PARSE_BESIDE_SECTIONS_BYTES {
        let (sections, guessed) = sections_noting_tables(text, guess_json, &mut table_lines);
        return SplitText {
            sections,
            guessed,
            parsed: None,
            markers: None,
            table_lines,
        };
    }
    if !opens_with_table(text) {
        // An nft listing: its section scan (a millisecond on a 5,000-Service node) hides the
        // marker search, which would otherwise run alone after the lints.
        return std::thread::scope(|scope| {
            let markers = scope.spawn(|| TextMarkers::find_suppression(text));
            let (sections, guessed) = sections_noting_tables(text, guess_json, &mut table_lines);
            let markers = match markers.join() {
                Ok(markers) => markers,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            SplitText {
                sections,
                guessed,
                parsed: None,
                markers: Some(markers),
                table_lines,
            }
        });
    }
    std::thread::scope(|scope| {
        let split = scope.spawn(|| (sections_with(text, guess_json), TextMarkers::find(text)));
        let parsed = rulelint_parser::parse(text);
        let ((sections, guessed), markers) = match split.join() {
            Ok(split) => split,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        // No table lines: an nft section after an iptables-save dump is rare, and its parse
        // finds its tables itself.
        SplitText {
            sections,
            guessed,
            parsed: Some(parsed),
            markers: Some(markers),
            table_lines,
        }
    })
}

/// Whether the first line that is neither blank nor a `#` comment opens an iptables-save
/// table (`*filter`): how every `iptables-save` dump starts.
pub fn opens_with_table(text: &str) -> bool {
    // Skips blanks and comment lines without looking for the end of the line that decides: a
    // JSON ruleset is one line of megabytes.
    let mut rest = text;
    loop {
        let line = rest.trim_start();
        if !line.starts_with('#') {
            return line.starts_with('*');
        }
        rest = line.find('\n').map_or("", |n| &line[n..]);
    }
}

/// The most findings of one code shown for one file; past it, one more finding says how many
/// were left out. A cut-off copy of a large node or a file of garbage holds tens of thousands
/// of findings of one kind: the first ones say it, the rest would bury the others.
pub const MAX_FINDINGS_PER_CODE: usize = rulelint_parser::cap::MAX_PER_CODE;

/// Keeps at most [`MAX_FINDINGS_PER_CODE`] of each code of `diagnostics` (sorted), and for
/// each code over it one finding at the first one left out that counts them (the parsers' own
/// capped findings count as the findings they stand for).
pub fn cap_findings(diagnostics: &mut Vec<Diagnostic>) {
    rulelint_parser::cap::cap_per_code(diagnostics);
}

/// The iptables parser over the iptables sections only, in place: every byte of the other
/// sections but `\n` reads as a blank, so offsets and lines are the file's.
pub(crate) fn parse_iptables_sections<'a>(text: &'a str, sections: &[Section]) -> Parsed<'a> {
    if sections.iter().all(|s| s.kind != SectionKind::Iptables) {
        // Nothing for the iptables parser. Of a text of blank lines it says one thing, no
        // content, over the first line: parse a one-line probe and move that span, rather than
        // blank a copy of a whole nft listing (22 MB on one line for `nft -j`) and trim it.
        let first_end = memchr::memchr(b'\n', text.as_bytes()).unwrap_or(text.len());
        let probe = rulelint_parser::parse(" \n");
        let mut diagnostics = probe.diagnostics;
        for d in &mut diagnostics {
            if d.code == rulelint_parser::codes::NO_CONTENT.code {
                d.span = Span::new(0, first_end);
            }
        }
        if let Some(ruleset) = probe.ruleset.with_source(text) {
            return Parsed {
                ruleset,
                diagnostics,
            };
        }
    }
    let mut blank = text.as_bytes().to_vec();
    for s in sections.iter().filter(|s| s.kind != SectionKind::Iptables) {
        for b in &mut blank[s.range.clone()] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    // Only ASCII bytes were written over whole lines: still UTF-8, same length.
    let blank = String::from_utf8(blank)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let parsed = rulelint_parser::parse(&blank);
    match parsed.ruleset.with_source(text) {
        Some(ruleset) => Parsed {
            ruleset,
            diagnostics: parsed.diagnostics,
        },
        None => rulelint_parser::parse(text),
    }
}

/// The first kube-proxy iptables-mode Service or endpoint chain with rules, with its line.
fn iptables_facts(parsed: &Parsed<'_>) -> IptablesFacts {
    let set = &parsed.ruleset;
    let chain = set
        .iter_tables()
        .filter(|t| !t.get().superseded)
        .flat_map(|t| t.get().chains.iter().map(|&c| set.chain(c)))
        .find(|c| {
            let name = c.name();
            (name.starts_with("KUBE-SVC-") || name.starts_with("KUBE-SEP-"))
                && c.rules().next().is_some()
        });
    IptablesFacts {
        kube_proxy_chain: chain.map(|c| {
            let at = c
                .rules()
                .next()
                .map_or(c.get().name.start, |r| r.get().span.start);
            (c.name().to_string(), LineIndex::new(set.source()).line(at))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line-by-line reading `block_end` replaced, as the reference it must agree with.
    fn block_end_by_lines(text: &str, pos: usize) -> usize {
        let bytes = text.as_bytes();
        let mut depth: i64 = 0;
        let mut line_start = pos;
        while line_start < bytes.len() {
            let end = line_end(bytes, line_start);
            let line = &text[line_start..end];
            if line_start > pos && classify(line.trim()) == LineClass::Iptables {
                return line_start;
            }
            depth += brace_balance(line.as_bytes());
            line_start = end;
            if depth <= 0 {
                return end;
            }
        }
        bytes.len()
    }

    /// `{` minus `}` on one line, outside strings and before a `#` comment. Strings and comments
    /// are found with `memchr` and the braces between them counted in bulk: this runs over every
    /// byte of an nft listing before it is parsed.
    fn brace_balance(line: &[u8]) -> i64 {
        // Byte-wide sums over runs of at most 255 bytes vectorize 16 bytes a step.
        let count = |run: &[u8]| {
            run.chunks(255)
                .map(|c| {
                    let (open, close) = c.iter().fold((0u8, 0u8), |(o, l), &b| {
                        (o + u8::from(b == b'{'), l + u8::from(b == b'}'))
                    });
                    i64::from(open) - i64::from(close)
                })
                .sum::<i64>()
        };
        let mut balance = 0;
        let mut i = 0;
        while i < line.len() {
            let Some(k) = memchr::memchr2(b'"', b'#', &line[i..]).map(|k| i + k) else {
                return balance + count(&line[i..]);
            };
            balance += count(&line[i..k]);
            if line[k] == b'#' {
                return balance;
            }
            // A string runs to its closing quote, or (unclosed) to the line's end.
            match memchr::memchr(b'"', &line[k + 1..]) {
                Some(m) => i = k + 1 + m + 1,
                None => return balance,
            }
        }
        balance
    }

    /// `block_end` agrees with the line-by-line reading from every line start of texts with
    /// strings, comments, unclosed quotes, iptables lines inside blocks, CRLF, non-ASCII blanks
    /// and no final newline, and of a generated listing cut at many places.
    #[test]
    fn block_end_agrees_with_the_line_by_line_reading() {
        let mut texts: Vec<String> = [
            "table ip t {\n\tchain a {\n\t\tcomment \"x { # }\" } {\n\t}\n}\nrest\n",
            "table ip t { # {\n\tset s { \"open {\n\t}\n}}\n}\n-A X -j Y\n",
            "table ip t {\r\n\tchain a {\r\n  -A KUBE -j X\r\n}\r\n}\r\n",
            "table ip t {\n\u{a0}-A KUBE -j X\n\u{2003}COMMIT\n}\n",
            "table ip t {\n\t:PREROUTING ACCEPT\n*nat\n# Generated by iptables\n}",
            "table ip t {\n\t# Generated by ip\n\tCOMMIT \n\t-Achain\n\t-A -t x\n}\n}\n",
            "table ip t {}\n} {\n\"\"\"{\n#\n\n{ } } {",
            "table ip t {\n\tchain a {\n\tCOMMIT\n\t}\n}\n",
            "table ip t {\n\tchain a {\n\t\t*nat\n  :X -\n -A X\n#c\n# Generated by ip\n}\n",
            "table ip t {\n\tchain c { \"a\" \"b { \" } # } {\n\t}\n\n}\n\n\nx",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let shape = rulelint_dumpgen::Shape::with_services(10);
        let listing = rulelint_dumpgen::generate_nft(&shape, rulelint_dumpgen::NftForm::List);
        for cut in (0..listing.len()).step_by(211) {
            if listing.is_char_boundary(cut) {
                texts.push(format!(
                    "{}\n-A KUBE-SERVICES -j X\n{}",
                    &listing[..cut],
                    &listing[cut..]
                ));
                texts.push(listing[..cut].to_string());
            }
        }
        texts.push(listing);
        for text in &texts {
            // Every line start of the short texts; of the long ones, the first and every 40th.
            let step = if text.len() < 2_000 { 1 } else { 40 };
            let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
            for start in starts.step_by(step).filter(|&s| s < text.len()) {
                assert_eq!(
                    block_end(text, start),
                    block_end_by_lines(text, start),
                    "{:?} from {start}",
                    &text[start..text.len().min(start + 80)]
                );
            }
        }
    }

    #[test]
    fn brace_balance_counts_like_a_byte_walk() {
        // The plain walk `brace_balance` replaced: quotes toggle, `#` outside a string ends.
        let walk = |line: &[u8]| {
            let (mut depth, mut in_string) = (0i64, false);
            for &b in line {
                match b {
                    b'"' => in_string = !in_string,
                    b'#' if !in_string => break,
                    b'{' if !in_string => depth += 1,
                    b'}' if !in_string => depth -= 1,
                    _ => {}
                }
            }
            depth
        };
        let line = "chain a { comment \"x { # }\" } { \"open { # handle 3 } {";
        for start in 0..line.len() {
            for end in start..=line.len() {
                let part = &line.as_bytes()[start..end];
                assert_eq!(brace_balance(part), walk(part), "{:?}", &line[start..end]);
            }
        }
    }

    #[test]
    fn a_text_without_iptables_reads_as_if_every_line_were_blanked() {
        for text in [
            "table ip kube-proxy {\n\tchain services {\n\t}\n}\n",
            "{\"nftables\": [{\"metainfo\": {\"json_schema_version\": 1}}]}",
            "add table ip kube-proxy\nadd chain ip kube-proxy services\n",
            "table ip t {\n}",
            "{\"nftables\": [{\"metainfo\": {\"json_schema_version\": 1}}]}\n",
            "table ip t {\n\n\n}\n\n",
        ] {
            let sections = sections(text);
            assert!(
                sections.iter().all(|s| s.kind != SectionKind::Iptables),
                "{text}"
            );
            let blanked: String = text
                .chars()
                .map(|c| if c == '\n' { c } else { ' ' })
                .collect();
            let every_line = rulelint_parser::parse(&blanked);
            let fast = parse_iptables_sections(text, &sections);
            assert_eq!(
                format!("{:?}", fast.diagnostics),
                format!("{:?}", every_line.diagnostics)
            );
            assert_eq!(
                format!("{:?}", fast.ruleset),
                format!(
                    "{:?}",
                    every_line.ruleset.with_source(text).expect("as long")
                )
            );
        }
    }

    /// The byte-at-a-time reading `json_end` replaced, as the reference it must agree with.
    fn json_end_reference(bytes: &[u8], start: usize) -> usize {
        let (mut depth, mut in_string, mut escaped) = (0i64, false, false);
        for (i, &b) in bytes[start..].iter().enumerate() {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth <= 0 {
                        return line_end(bytes, start + i);
                    }
                }
                _ => {}
            }
        }
        bytes.len()
    }

    #[test]
    fn json_end_agrees_with_the_byte_at_a_time_reading() {
        // Every string of up to 7 bytes over the characters that matter, from every start.
        let alphabet = b"{}[]\"\\\nx";
        let mut text = Vec::new();
        for len in 0..=7u32 {
            for mut n in 0..alphabet.len().pow(len) {
                text.clear();
                for _ in 0..len {
                    text.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                for start in 0..text.len() {
                    assert_eq!(
                        json_end(&text, start),
                        json_end_reference(&text, start),
                        "{:?} from {start}",
                        String::from_utf8_lossy(&text)
                    );
                }
            }
        }
    }

    #[test]
    fn findings_of_one_code_are_capped_with_a_count() {
        let text = format!("*filter\n{}COMMIT\n", "x\n".repeat(5000));
        let found = check_source(&text, &Config::default()).diagnostics;
        let stray: Vec<&Diagnostic> = found.iter().filter(|d| d.code == "RL102").collect();
        assert_eq!(stray.len(), MAX_FINDINGS_PER_CODE + 1);
        let last = stray.last().expect("summary");
        assert_eq!(
            last.message,
            format!(
                "{} more RL102 findings in this file, from here on, are not shown",
                5000 - MAX_FINDINGS_PER_CODE
            )
        );
        // The summary sits at the first finding left out, after the last one shown.
        assert!(stray[MAX_FINDINGS_PER_CODE - 1].span.start < last.span.start);
        // Under the cap nothing changes.
        let few = format!("*filter\n{}COMMIT\n", "x\n".repeat(10));
        assert_eq!(check_source(&few, &Config::default()).diagnostics.len(), 10);
    }

    fn kinds(text: &str) -> Vec<(SectionKind, &str)> {
        sections(text)
            .into_iter()
            .map(|s| (s.kind, &text[s.range]))
            .collect()
    }

    const IPT: &str = "# Generated by iptables-save v1.8.9\n*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\nCOMMIT\n";
    const NFT: &str = "table ip kube-proxy {\n\tchain a {\n\t\tcomment \"}\"\n\t}\n}\n";

    #[test]
    fn pure_iptables_is_one_section() {
        assert_eq!(kinds(IPT), vec![(SectionKind::Iptables, IPT)]);
        assert_eq!(kinds(""), vec![(SectionKind::Iptables, "")]);
        let prose = "hello\ntable of contents\n-A X -j Y\n";
        assert_eq!(kinds(prose), vec![(SectionKind::Iptables, prose)]);
    }

    #[test]
    fn pure_nft_with_prose_is_one_section() {
        let text = format!("root@n:~# nft list ruleset\n{NFT}\ntable inet f {{\n}}\n");
        assert_eq!(kinds(&text), vec![(SectionKind::Nft, text.as_str())]);
    }

    #[test]
    fn iptables_then_nft_and_back() {
        let text = format!("{IPT}\n{NFT}{IPT}");
        let got = kinds(&text);
        assert_eq!(
            got,
            vec![
                (SectionKind::Iptables, &text[..IPT.len() + 1]),
                (SectionKind::Nft, NFT),
                (SectionKind::Iptables, IPT),
            ]
        );
    }

    #[test]
    fn cut_nft_block_ends_before_iptables() {
        let text = format!("table ip t {{\n\tchain c {{\n{IPT}");
        assert_eq!(
            kinds(&text),
            vec![
                (SectionKind::Nft, "table ip t {\n\tchain c {\n"),
                (SectionKind::Iptables, IPT)
            ]
        );
    }

    #[test]
    fn headerless_chain_blocks_are_nft() {
        let text = "### a paste\n        chain filter-input {\n                type filter hook input priority -110; policy accept;\n        }\n";
        assert_eq!(kinds(text), vec![(SectionKind::Nft, text)]);
    }

    #[test]
    fn json_and_transaction_forms() {
        let json = "{\"nftables\": [{\"table\": {\"name\": \"a}]\"}}]}\n";
        let text = format!("{IPT}{json}");
        assert_eq!(
            kinds(&text),
            vec![(SectionKind::Iptables, IPT), (SectionKind::NftJson, json)]
        );
        let tx = "add table ip kube-proxy { comment \"x\" ; }\n\n# c\nadd chain ip kube-proxy services\nflush ruleset\n";
        assert_eq!(kinds(tx), vec![(SectionKind::NftTransaction, tx)]);
    }

    /// A large nft listing's suppression marker is searched beside its section scan: the
    /// suppressions are applied (an unknown code's directive is reported) exactly when the
    /// listing holds one.
    #[test]
    fn a_large_listing_finds_its_markers_beside_its_sections() {
        let shape = rulelint_dumpgen::Shape::with_services(1_000);
        let listing = rulelint_dumpgen::generate_nft(&shape, rulelint_dumpgen::NftForm::List);
        assert!(
            listing.len() >= PARSE_BESIDE_SECTIONS_BYTES,
            "{}",
            listing.len()
        );
        let marked = listing.replacen(
            "jump mark-for-masquerade\n",
            "jump mark-for-masquerade comment \"rulelint:allow=RL999\"\n",
            1,
        );
        assert_ne!(marked, listing);
        for (text, suppression) in [(&listing, false), (&marked, true)] {
            let split = sections_beside_parse(text, true);
            assert!(split.parsed.is_none());
            let markers = split.markers.expect("searched beside the split");
            assert_eq!(markers.suppression, suppression);
            let checked = check_source(text, &Config::default());
            assert_eq!(checked.sections.len(), 1);
            let reported = checked.diagnostics.iter().any(|d| d.code == "RL902");
            assert_eq!(reported, suppression, "{:?}", checked.diagnostics);
        }
    }

    /// A large dump is parsed beside the split into sections, and checked as if parsed after
    /// it; with an nftables section in it, that parse is dropped and the sections are read.
    #[test]
    fn a_large_dump_is_parsed_beside_its_sections() {
        let dump = rulelint_dumpgen::generate(&rulelint_dumpgen::Shape::with_rule_target(12_000));
        assert!(dump.len() >= PARSE_BESIDE_SECTIONS_BYTES, "{}", dump.len());
        assert!(opens_with_table(&dump));
        let split = sections_beside_parse(&dump, true);
        assert_eq!(split.sections.len(), 1);
        let parsed = split.parsed.expect("parsed beside the split");
        let markers = split.markers.expect("searched beside the split");
        assert!(!markers.unsupported && !markers.suppression, "{markers:?}");
        let alone = rulelint_parser::parse(&dump);
        assert_eq!(parsed.ruleset.rules.len(), alone.ruleset.rules.len());
        assert_eq!(
            format!("{:?}", parsed.diagnostics),
            format!("{:?}", alone.diagnostics)
        );
        let mut reference = crate::check(&alone, &Config::default());
        crate::suppression::apply(&dump, &mut reference, &Config::default());
        crate::sort(&mut reference);
        let checked = check_source(&dump, &Config::default());
        assert_eq!(
            format!("{reference:?}"),
            format!("{:?}", checked.diagnostics)
        );
        // With both marker words in it (found beside the parse): still as if parsed after it.
        let marked = dump.replacen(
            "-A KUBE-SERVICES ",
            "-A KUBE-SERVICES -m mark --mark 0x1 [unsupported revision] -m comment --comment \"x rulelint:allow=RL502,RL999\" ",
            1,
        );
        assert_ne!(marked, dump);
        let markers = sections_beside_parse(&marked, true).markers;
        let markers = markers.expect("searched beside the split");
        assert!(markers.unsupported && markers.suppression, "{markers:?}");
        let mut reference = crate::check(&rulelint_parser::parse(&marked), &Config::default());
        crate::suppression::apply(&marked, &mut reference, &Config::default());
        crate::sort(&mut reference);
        assert!(reference.iter().any(|d| d.code == "RL902"), "{reference:?}");
        let checked = check_source(&marked, &Config::default());
        assert_eq!(
            format!("{reference:?}"),
            format!("{:?}", checked.diagnostics)
        );
        // An nftables ruleset after it: two sections, each read by its own parser.
        let mixed = format!("{dump}table ip filter {{\n\tchain input {{\n\t}}\n}}\n");
        let checked = check_source(&mixed, &Config::default());
        let kinds: Vec<_> = checked.sections.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, [SectionKind::Iptables, SectionKind::Nft]);
        assert_eq!(checked.nft.len(), 1);
        assert_eq!(
            checked.iptables.ruleset.rules.len(),
            alone.ruleset.rules.len()
        );
        // Text before the first table, or none: no parse beside the split.
        assert!(opens_with_table("\n# Generated by iptables-save\n  *nat\n"));
        assert!(!opens_with_table("table ip filter {\n}\n*nat\n"));
        assert!(!opens_with_table("# only a comment\n"));
        assert!(!opens_with_table("# only a comment"));
        assert!(opens_with_table("#a\r\n \t\r\n# b *x\n*filter"));
        assert!(!opens_with_table("# node-1\n{\"nftables\": []}\n*nat\n"));
        let split = sections_beside_parse(&mixed[..1000], true);
        assert!(split.parsed.is_none() && split.markers.is_none());
        // An `nft -j` document after it, its end guessed while the dump is parsed: the same
        // sections and findings as without the guess, whether the guess holds or not.
        let doc = r#"{"nftables": [{"chain": {"family": "ip", "table": "t", "name": "c", "handle": 2}}]}"#;
        for text in [format!("{dump}{doc}\n"), format!("{dump}{doc}\n}}\n")] {
            let guessed = check_source_with(&text, &Config::default(), false, true);
            let scanned = check_source_with(&text, &Config::default(), false, false);
            let kinds: Vec<_> = guessed.sections.iter().map(|s| s.kind).collect();
            assert_eq!(kinds[..2], [SectionKind::Iptables, SectionKind::NftJson]);
            assert_eq!(guessed.sections, scanned.sections);
            assert_eq!(
                format!("{:?}", guessed.diagnostics),
                format!("{:?}", scanned.diagnostics)
            );
        }
    }

    #[test]
    fn guessed_json_end_checks_as_the_scan_does() {
        // A document with findings, so that a wrong guess would show in them too.
        let doc = include_str!(
            "../../../corpus/lints/RL453-rejected-service-key/fail-dispatched-and-rejected.json"
        )
        .trim_end();
        let item = r#"{"chain": {"family": "ip", "table": "t", "name": "c}", "handle": 2}}"#;
        let mut texts = vec![
            format!("{doc}\n"),
            format!("# node-1\n\n  {doc}  \n\n"),
            format!("{doc}\n{doc}\n"),
            format!("{doc}\n{NFT}"),
            format!("{IPT}{doc}\n"),
            format!("{doc}\n{IPT}}}\n"),
            format!("prose \"nftables\" {{\n{doc}\n"),
            format!("{{\"nftables\": [{item}, {item},]}}\n"),
            format!("{{\"nftables\": [{item} {item}]}}\n"),
            format!("{{\"nftables\": [{item}, \"}}\n"),
            format!("{{\"nftables\": [{item}]}} }}\n"),
            format!("{{\"nftables\": [{item}]}}}}\n"),
            format!("{{\"nftables\": [{item}] , \"x\": 1}}\n"),
            "{\"nftables\": []}".to_string(),
            "{\"nftables\": }".to_string(),
            "{\"nftables\"}".to_string(),
            "{ \"nftables\": [{\"rule\": {\"comment\": \"a\\\"}\"}}]}".to_string(),
        ];
        // The common case is guessed, and the reader confirms it.
        let whole = format!("{doc}\n");
        let open = doc.find("{\"nftables\"").unwrap_or_default();
        assert_eq!(sections_with(&whole, true).1, Some((open, doc.len() - 1)));
        let strings = rulelint_nft::Strings::new();
        let (_, extent) = rulelint_nft::parse_json_with_extent(&whole, &strings);
        assert_eq!(extent, Some(open..doc.len()));
        // Every cut of a small document, and of the last one ending in `}`.
        let small = format!("{{\"nftables\": [{item}, {item}]}}");
        texts.extend((1..small.len()).map(|n| format!("{}}}", &small[..n])));
        for text in &texts {
            let config = Config::default();
            let guessed = check_source_with(text, &config, false, true);
            let scanned = check_source_with(text, &config, false, false);
            assert_eq!(guessed.sections, scanned.sections, "{text}");
            assert_eq!(guessed.sections, sections(text), "{text}");
            assert_eq!(
                format!("{:?}", guessed.diagnostics),
                format!("{:?}", scanned.diagnostics),
                "{text}"
            );
        }
    }

    #[test]
    fn sections_cover_the_text_in_order() {
        for text in [
            "",
            "x",
            "{\"nftables\": [",
            "table ip a {",
            "add table",
            "add table ip a\n*nat\n",
            &format!("{NFT}prose\n{IPT}tail"),
            "}\n}\ntable {\n",
        ] {
            let s = sections(text);
            assert_eq!(s.first().map(|s| s.range.start), Some(0), "{text:?}");
            assert_eq!(s.last().map(|s| s.range.end), Some(text.len()), "{text:?}");
            for pair in s.windows(2) {
                assert_eq!(pair[0].range.end, pair[1].range.start, "{text:?}");
            }
        }
    }
}
