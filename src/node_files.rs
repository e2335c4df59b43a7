//! One node given as several files (`rulelint check --node NAME a.txt b.txt`, or a subfolder of
//! a folder): the files are checked as one text, as `cat` would join them, and each finding is
//! then moved back into the file it points into.

use crate::input::Part;
use rulelint_lint::report::{LocatedFile, LocatedFinding};
use rulelint_parser::{Diagnostic, LineIndex, Span};

/// The part (file) of the node's text that holds `offset`, with its text range.
fn part_of(text: &str, parts: &[Part], offset: u32) -> Option<(usize, usize, usize)> {
    let k = parts
        .partition_point(|p| p.start <= offset as usize)
        .checked_sub(1)?;
    let end = parts.get(k + 1).map_or(text.len(), |p| p.start);
    Some((k, parts[k].start, end))
}

/// The diagnostic with its span in its own file (cut at the file's end).
fn moved(d: &Diagnostic, start: usize, end: usize) -> Diagnostic {
    let mut d = d.clone();
    let from = (d.span.start as usize).clamp(start, end) - start;
    let to = (d.span.end as usize).clamp(start, end) - start;
    d.span = Span::new(from, to.max(from));
    d
}

/// The findings of a node's text, located, as one [`LocatedFile`] per file (every file, in the
/// order given, those without findings too).
pub fn split(union: LocatedFile, text: &str, parts: &[Part]) -> Vec<LocatedFile> {
    let mut files: Vec<LocatedFile> = parts
        .iter()
        .map(|p| LocatedFile {
            path: p.name.clone(),
            findings: Vec::new(),
        })
        .collect();
    let mut indexes: Vec<Option<LineIndex>> = parts.iter().map(|_| None).collect();
    for f in union.findings {
        let Some((k, start, end)) = part_of(text, parts, f.diagnostic.span.start) else {
            continue;
        };
        let part = &text[start..end];
        let index = indexes[k].get_or_insert_with(|| LineIndex::new(part));
        let diagnostic = moved(&f.diagnostic, start, end);
        files[k].findings.push(LocatedFinding {
            start: index.line_col(part, diagnostic.span.start),
            end: index.line_col(part, diagnostic.span.end),
            diagnostic,
            ..f
        });
    }
    files
}

/// The findings rendered (human output), each in its own file.
pub fn render(diagnostics: &[Diagnostic], text: &str, parts: &[Part], color: bool) -> String {
    let mut out = String::new();
    let mut indexes: Vec<Option<LineIndex>> = parts.iter().map(|_| None).collect();
    for d in diagnostics {
        let Some((k, start, end)) = part_of(text, parts, d.span.start) else {
            continue;
        };
        let part = &text[start..end];
        let index = indexes[k].get_or_insert_with(|| LineIndex::new(part));
        out.push_str(&moved(d, start, end).render_indexed(&parts[k].name, part, index, color));
        out.push('\n');
    }
    out
}
