//! The two-thread parse of a large listing: the text is cut at a line that opens a `chain`,
//! `set` or `map` inside a table near its middle, both parts are lexed and parsed at once, and
//! the second part's ruleset is appended to the first's with its indices shifted.
//!
//! The second part starts inside the table the cut is guessed to be in (the last `table` line
//! before it). The guess is checked afterwards: the first part must have stopped exactly at
//! the cut, in the body of that table, as the one-thread parse would reach it. Otherwise the
//! text is parsed again on one thread. Tokens never cross a line, and no look-ahead of the
//! parser crosses a line that opens a block, so the result is the one-thread parse's: same
//! ruleset, indices, spans and diagnostics in the same order (`tests/split.rs` compares them).

use crate::model::{ChainId, SetId, TableId};
use crate::parse::{OpenTable, Parsed, Part, PartParsed, open_table_at, parse_part, window_for};

/// The size from which [`crate::parse`] reads a listing on two threads. Measured idle (load
/// 1.5) on the 2-core machine (`benches/scale.rs`, rows `nft` and `nft-1thr`): faster at 708
/// KiB (500 Services: 1.42 ms against 1.74) and at 6.7 MiB (5,000 Services: 8.8-9.5 ms
/// against 12.7-12.8), slower at 72 KiB (0.17 against 0.13, under load). Under load 4-10 the
/// 6.7 MiB parse measured slower on two threads (15.3 against 12.3 ms): the second thread
/// then waits for a core. Two threads cost CPU (a second set of buffers to fault in, the
/// merge's copies: the CLI's check of the 5,000-Service node 40-43 -> 45-48 ms CPU, wall
/// unchanged) and peak memory (since each part is read in windows, `parse.rs`: 5.1 -> 6.0
/// times the input, the first part's stores being sized for the whole text).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const PARALLEL_PARSE_MIN_BYTES: usize = 512 << 10;

/// [`crate::parse`] on two threads when a cut is found and checked; `None` otherwise.
/// `table_lines`: as [`crate::parse_knowing_tables`] takes them.
pub(crate) fn parse_in_two<'a>(text: &'a str, table_lines: &[usize]) -> Option<Parsed<'a>> {
    let at = split_point(text)?;
    parse_split(text, at, None, table_lines)
}

/// [`parse_split_at`] with each part read a window of about `window` bytes at a time (0:
/// whole), whatever its size (for tests).
pub(crate) fn parse_split_at_in_windows(
    text: &str,
    at: usize,
    window: usize,
) -> Option<Parsed<'_>> {
    parse_split(text, at, Some(window), &[])
}

/// Where to cut `text`: the start of the first line after its middle that opens a chain, set or
/// map one tab in (as `nft list` prints a table's members), within the next quarter of the text.
pub(crate) fn split_point(text: &str) -> Option<usize> {
    member_line_from(text, text.len() / 2, text.len() - text.len() / 4)
}

/// The start of the first line after the one holding byte `from` that opens a chain, set or
/// map one tab in, before `limit` and ended by a newline; `None` when there is none.
pub(crate) fn member_line_from(text: &str, from: usize, limit: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = memchr::memchr(b'\n', b.get(from..)?)? + from + 1;
    while i < limit {
        let end = memchr::memchr(b'\n', &b[i..]).map_or(b.len(), |n| i + n);
        if end < b.len() && opens_member(&b[i..end]) {
            return Some(i);
        }
        i = end + 1;
    }
    None
}

/// `\tchain NAME {`, `\tset NAME {` or `\tmap NAME {` (then at most a `# handle N` comment).
fn opens_member(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"\t") else {
        return false;
    };
    let keyword = [&b"chain "[..], b"set ", b"map "]
        .iter()
        .any(|k| rest.starts_with(k));
    let code = rest
        .iter()
        .position(|&c| c == b'#')
        .map_or(rest, |n| &rest[..n]);
    let code = code.trim_ascii_end();
    keyword && code.ends_with(b"{") && !rest.contains(&b'"')
}

/// The table open at byte `at`, as guessed from the last `table` line at a line start before it:
/// the last of `table_lines` (line starts the caller saw opening a table) before `at` when
/// that line opens a table, else the last found by searching the text before `at` (a search of
/// half a 5,000-Service listing: 4.8 M instructions). The guess is checked after the parse.
fn open_table_before<'a>(text: &'a str, at: usize, table_lines: &[usize]) -> Option<OpenTable<'a>> {
    let noted = table_lines[..table_lines.partition_point(|&start| start < at)].last();
    // A line start before the cut (so a char boundary), whatever the caller passed.
    if let Some(&start) = noted
        && start < at
        && (start == 0 || text.as_bytes().get(start - 1) == Some(&b'\n'))
    {
        let end = memchr::memchr(b'\n', &text.as_bytes()[start..at]).map_or(at, |n| start + n + 1);
        if let Some(open) = open_table_at(text, start, end) {
            return Some(open);
        }
    }
    let b = &text.as_bytes()[..at];
    let start = if b.starts_with(b"table ") {
        Some(0)
    } else {
        None
    };
    let start = memchr::memmem::find_iter(b, b"\ntable ")
        .last()
        .map(|n| n + 1)
        .or(start)?;
    let end = memchr::memchr(b'\n', &b[start..]).map_or(at, |n| start + n + 1);
    open_table_at(text, start, end)
}

/// The two-thread parse cut at byte `at` (a line start); `None` when the cut is not at a block
/// boundary inside the table guessed. Also what the tests call with every cut they try.
pub(crate) fn parse_split_at(text: &str, at: usize) -> Option<Parsed<'_>> {
    parse_split(text, at, None, &[])
}

/// [`parse_split_at`]; `window`: each part's window, else [`crate::parse::window_for`] its size;
/// `table_lines`: as [`crate::parse_knowing_tables`] takes them.
fn parse_split<'a>(
    text: &'a str,
    at: usize,
    window: Option<usize>,
    table_lines: &[usize],
) -> Option<Parsed<'a>> {
    if at == 0 || at >= text.len() || text.as_bytes()[at - 1] != b'\n' {
        return None;
    }
    // The first part lexes the cut's line too: the parser looks at the line after a rule or an
    // element list to see whether it opens a block.
    let line_end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |n| at + n + 1);
    let (first, second) = std::thread::scope(|s| {
        let second = std::thread::Builder::new()
            .name("rulelint-nft-parse".into())
            .spawn_scoped(s, || {
                let open = open_table_before(text, at, table_lines)?;
                let part = Part {
                    from: at,
                    to: text.len(),
                    stop_at: None,
                    inside: Some(open),
                    scale: (1, 1),
                    window: window.unwrap_or_else(|| window_for(text.len() - at)),
                };
                Some((open, parse_part(text, part)))
            })
            // No thread to be had: the caller parses on this one.
            .ok()?;
        let first = parse_part(
            text,
            Part {
                from: 0,
                to: line_end,
                stop_at: Some(at),
                inside: None,
                scale: (text.len(), at),
                window: window.unwrap_or_else(|| window_for(at)),
            },
        );
        // A panic in the second part is a bug that would have panicked on one thread too.
        let second = second
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        Some((first, second))
    })?;
    let (open, second) = second?;
    let tid = first.stopped?;
    let table = &first.rs.tables[tid.index()];
    if (table.family, table.name, table.span.start) != (open.family, open.name, open.open.start) {
        return None;
    }
    Some(merge(first, second, tid))
}

/// Appends the second part to the first: its table 0 is the first part's table `tid`.
fn merge<'a>(first: PartParsed<'a>, second: PartParsed<'a>, tid: TableId) -> Parsed<'a> {
    let mut rs = first.rs;
    let b = second.rs;
    let tables = rs.tables.len() as u32 - 1;
    let chains = rs.chains.len() as u32;
    let sets = rs.sets.len() as u32;
    let rules = rs.rules.len() as u32;
    let chunks = rs.statements.len() as u32;
    let table_of = |t: TableId| {
        if t.0 == 0 { tid } else { TableId(t.0 + tables) }
    };
    rs.chains.reserve_exact(b.chains.len());
    rs.chains.extend(b.chains.into_iter().map(|mut c| {
        c.table = table_of(c.table);
        c.rules.shift(rules);
        c
    }));
    rs.sets.extend(b.sets.into_iter().map(|mut s| {
        s.table = table_of(s.table);
        s
    }));
    rs.rules.reserve_exact(b.rules.len());
    rs.rules.extend(b.rules.into_iter().map(|mut r| {
        r.chain = ChainId(r.chain.0 + chains);
        r.statements.chunk += chunks;
        r
    }));
    rs.statements.extend(b.statements);
    for (i, mut t) in b.tables.into_iter().enumerate() {
        t.chains.iter_mut().for_each(|c| *c = ChainId(c.0 + chains));
        t.sets.iter_mut().for_each(|s| *s = SetId(s.0 + sets));
        if i > 0 {
            rs.tables.push(t);
            continue;
        }
        let open = &mut rs.tables[tid.index()];
        open.chains.append(&mut t.chains);
        open.sets.append(&mut t.sets);
        open.objects.append(&mut t.objects);
        if t.comment.is_some() {
            open.comment = t.comment;
        }
        if second.inside_flags_written {
            open.flags = t.flags;
        }
        open.closed = t.closed;
        open.span.end = t.span.end;
    }
    // The order the one-thread parse pushes them in (lexer, then parser), so that the stable
    // sort keeps diagnostics with equal spans and codes in the same order.
    let mut diagnostics = first.diags;
    let parsed_a = diagnostics.split_off(first.lexed);
    let mut lexed_b = second.diags;
    let parsed_b = lexed_b.split_off(second.lexed);
    diagnostics.append(&mut lexed_b);
    diagnostics.extend(parsed_a);
    diagnostics.extend(parsed_b);
    diagnostics.sort_by(|a, b| (a.span, a.code).cmp(&(b.span, b.code)));
    rulelint_parser::cap::cap_again_if_capped(&mut diagnostics);
    rs.share_rule_lists();
    Parsed {
        ruleset: rs,
        diagnostics,
    }
}
