//! At most [`MAX_PER_CODE`] diagnostics of one code, and one that counts the rest: what every
//! report shows of a file. The parsers apply it as they go, so a file of garbage (200k lines of
//! `{`) holds a few hundred diagnostics instead of one per line (860 bytes a 2-byte line).
//!
//! A report over several parses (sections of one file) caps again with [`cap_per_code`]: a
//! diagnostic made by [`left_out`] counts as the findings it stands for ([`left_out_count`]), so
//! capping a capped list gives what capping the whole list would have given.

use crate::diagnostic::Diagnostic;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most diagnostics of one code shown for one file; past it, one more says how many were
/// left out. A cut-off copy of a large node or a file of garbage holds tens of thousands of
/// findings of one kind: the first ones say it, the rest would bury the others.
pub const MAX_PER_CODE: usize = 200;

/// The marker of a suppression in a rule's comment (`rulelint:allow=RL401`). A parse whose text
/// holds one keeps every diagnostic: which of them a suppression removes is decided later.
pub const SUPPRESSION_MARKER: &str = "rulelint:allow=";

/// How many diagnostics a parser holds before it caps them ([`cap_per_code`]): capping sorts
/// them, so it runs once per this many new ones (amortised linear).
pub const CAP_EVERY: usize = 4096;

/// `first` (the first finding of its code not shown) turned into the finding that says `more`
/// findings of its code, from it on, are not shown.
pub fn left_out(first: Diagnostic, more: usize) -> Diagnostic {
    let code = first.code;
    Diagnostic {
        message: format!(
            "{more} more {code} finding{} in this file, from here on, are not shown",
            if more == 1 { "" } else { "s" }
        ),
        label: left_out_label(code),
        help: Some(format!(
            "fix the first {MAX_PER_CODE}, or `--select {code}` on a smaller part of the file; so many usually means the file is cut off or not a dump"
        )),
        ..first
    }
}

fn left_out_label(code: &str) -> String {
    format!("the first {code} finding not shown")
}

/// How many findings `d` stands for when [`left_out`] made it; `None` for any other.
pub fn left_out_count(d: &Diagnostic) -> Option<usize> {
    let digits = d.message.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || d.label != left_out_label(d.code) {
        return None;
    }
    d.message[..digits].parse().ok()
}

/// How many findings `d` counts for: those a [`left_out`] finding stands for, else one. What
/// counts a parse's errors (a summary's `parse_errors`, `rulelint stats`) sums this, so that
/// the parsers' capping changes no count.
pub fn stands_for(d: &Diagnostic) -> usize {
    left_out_count(d).unwrap_or(1)
}

/// A reader's capping as it goes: `diagnostics[from..]` (the reader's own) sorted by position
/// and capped ([`cap_per_code`]), unless `text` holds a suppression marker (asked once, the
/// answer kept in `may`); returns the length at which to cap again (`usize::MAX`: never).
pub fn cap_tail(
    text: &str,
    may: &mut Option<bool>,
    diagnostics: &mut Vec<Diagnostic>,
    from: usize,
) -> usize {
    if !*may.get_or_insert_with(|| may_cap(text)) {
        return usize::MAX;
    }
    let mut own = diagnostics.split_off(from.min(diagnostics.len()));
    own.sort_by(|a, b| (a.span, a.code).cmp(&(b.span, b.code)));
    cap_per_code(&mut own);
    diagnostics.append(&mut own);
    diagnostics.len() + CAP_EVERY
}

/// At a parse's end, with `diagnostics` sorted by position: when a capping ran while reading,
/// caps once more, so that the diagnostics read after it do not follow the finding that says
/// they are not shown (what `rulelint parse` prints). A list never capped is left as it is.
pub fn cap_again_if_capped(diagnostics: &mut Vec<Diagnostic>) {
    if diagnostics.iter().any(|d| left_out_count(d).is_some()) {
        cap_per_code(diagnostics);
    }
}

/// Asserts that of `code` a parse kept the first [`MAX_PER_CODE`] findings and, last, the one
/// that counts the rest (for the parsers' tests).
#[doc(hidden)]
pub fn assert_capped_at_the_end(diagnostics: &[Diagnostic], code: &str) {
    let of_code: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.code == code).collect();
    assert_eq!(of_code.len(), MAX_PER_CODE + 1);
    assert!(
        of_code[..MAX_PER_CODE]
            .iter()
            .all(|d| left_out_count(d).is_none())
    );
    assert!(left_out_count(of_code[MAX_PER_CODE]).is_some());
}

/// Of `diagnostics` (sorted by position) keeps of each code the first [`MAX_PER_CODE`]; the
/// next becomes a [`left_out`] finding that counts it and every later one (earlier
/// [`left_out`] findings count as the findings they stand for).
pub fn cap_per_code(diagnostics: &mut Vec<Diagnostic>) {
    // Of each code: how many findings the list stands for.
    let mut seen: Vec<(&'static str, usize)> = Vec::new();
    for d in diagnostics.iter() {
        let n = left_out_count(d).unwrap_or(1);
        match seen.iter_mut().find(|(c, _)| *c == d.code) {
            Some((_, total)) => *total += n,
            None => seen.push((d.code, n)),
        }
    }
    if seen.iter().all(|&(_, total)| total <= MAX_PER_CODE) {
        return;
    }
    // Of each code: how many were kept, and whether its left_out finding was made.
    let mut shown: Vec<(&'static str, usize, bool)> = Vec::new();
    let mut kept: Vec<Diagnostic> = Vec::with_capacity(seen.len() * (MAX_PER_CODE + 1));
    for d in diagnostics.drain(..) {
        let i = match shown.iter().position(|(c, ..)| *c == d.code) {
            Some(i) => i,
            None => {
                shown.push((d.code, 0, false));
                shown.len() - 1
            }
        };
        let (_, n, summary) = &mut shown[i];
        if *n < MAX_PER_CODE && left_out_count(&d).is_none() {
            *n += 1;
            kept.push(d);
        } else if !*summary {
            let total = seen.iter().find(|(c, _)| *c == d.code).map_or(0, |s| s.1);
            *summary = true;
            kept.push(left_out(d, total - *n));
        }
    }
    *diagnostics = kept;
}

/// Set once by a process that records or applies a baseline ([`keep_every_finding`]).
static KEEP_EVERY_FINDING: AtomicBool = AtomicBool::new(false);

/// From now on, no parser in this process caps its diagnostics as it reads: every finding is
/// kept. For a process that records or applies a baseline (the CLI's `--baseline` and
/// `--write-baseline`): a baseline must know every finding, or one past the cap that moves
/// into the report when another is fixed would be reported as new. It is process-wide because
/// it is a mode of the whole run, and the parsers read on threads of their own.
pub fn keep_every_finding() {
    KEEP_EVERY_FINDING.store(true, Ordering::Relaxed);
}

/// Whether a parser may cap the diagnostics of `text` as it goes: no suppression marker in it
/// (a suppression removes findings before the report caps them) and no baseline in the run
/// ([`keep_every_finding`]).
pub fn may_cap(text: &str) -> bool {
    !KEEP_EVERY_FINDING.load(Ordering::Relaxed)
        && memchr::memmem::find(text.as_bytes(), SUPPRESSION_MARKER.as_bytes()).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Span;
    use crate::codes;

    fn many(n: usize, from: usize) -> Vec<Diagnostic> {
        (0..n)
            .map(|i| {
                Diagnostic::new(
                    &codes::INVALID_COUNTERS,
                    Span::new(from + 3 * i, from + 3 * i + 2),
                    "stray",
                )
            })
            .collect()
    }

    #[test]
    fn capping_in_parts_gives_what_capping_the_whole_gives() {
        let mut whole = many(1000, 0);
        cap_per_code(&mut whole);
        assert_eq!(whole.len(), MAX_PER_CODE + 1);
        assert_eq!(left_out_count(&whole[MAX_PER_CODE]), Some(800));
        // Capped as it grows, then two parts joined and capped again.
        let mut first = Vec::new();
        for chunk in many(700, 0).chunks(150) {
            first.extend_from_slice(chunk);
            first.sort_by_key(|d| d.span);
            cap_per_code(&mut first);
        }
        let mut second = many(300, 2100);
        cap_per_code(&mut second);
        first.append(&mut second);
        cap_per_code(&mut first);
        assert_eq!(first, whole);
    }

    #[test]
    fn a_list_within_the_cap_is_kept_whole() {
        let mut d = many(MAX_PER_CODE, 0);
        cap_per_code(&mut d);
        assert_eq!(d, many(MAX_PER_CODE, 0));
    }

    #[test]
    fn a_parse_of_stray_lines_holds_a_bounded_number_of_diagnostics() {
        let text = format!(
            "*filter\n:INPUT ACCEPT [0:0]\n{}COMMIT\n",
            "x\n".repeat(50_000)
        );
        let parsed = crate::parse(&text);
        assert!(parsed.diagnostics.len() <= CAP_EVERY + MAX_PER_CODE + 1);
        let code = parsed.diagnostics[0].code;
        assert_capped_at_the_end(&parsed.diagnostics, code);
        let stands_for: usize = parsed
            .diagnostics
            .iter()
            .filter(|d| d.code == code)
            .map(|d| left_out_count(d).unwrap_or(1))
            .sum();
        assert_eq!(stands_for, 50_000);
    }

    #[test]
    fn a_suppression_marker_keeps_every_diagnostic() {
        let text = format!(
            "*filter\n:INPUT ACCEPT [0:0]\n{}-A INPUT -m comment --comment \"rulelint:allow=RL301\" -j ACCEPT\nCOMMIT\n",
            "x\n".repeat(10_000)
        );
        assert!(crate::parse(&text).diagnostics.len() >= 10_000);
    }
}
