//! Diagnostics: what the parser (and later the linter) says about a dump, with a span, and the
//! miette rendering of it.

use crate::model::{ChainId, TableId};
use crate::span::{LineIndex, Span};
use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};
use serde::Serialize;
use std::fmt;

/// How serious a diagnostic is. Ordered: `Info < Warning < Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing is wrong by itself.
    Info,
    /// Probably wrong, or analysis had to guess.
    Warning,
    /// Wrong: the dump would not restore, or traffic is mishandled.
    Error,
}

impl Severity {
    /// The lowercase name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding about the text, located by a byte span.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Stable code, e.g. `RL103`. Never reused for another meaning.
    pub code: &'static str,
    /// Stable kebab-case name, e.g. `missing-commit`.
    pub name: &'static str,
    /// Severity.
    pub severity: Severity,
    /// What is wrong, lowercase, no final period.
    pub message: String,
    /// Where: a byte range into the parsed text.
    pub span: Span,
    /// What the span is, shown under it.
    pub label: String,
    /// What to do about it.
    pub help: Option<String>,
    /// The table the finding is about, where one applies.
    pub table: Option<TableId>,
    /// The chain the finding is about, where one applies.
    pub chain: Option<ChainId>,
}

impl Diagnostic {
    /// A diagnostic for a catalogued code, with its default severity.
    pub fn new(info: &CodeInfo, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code: info.code,
            name: info.name,
            severity: info.severity,
            message: message.into(),
            span,
            label: String::new(),
            help: None,
            table: None,
            chain: None,
        }
    }

    /// Sets the table and chain the finding is about.
    pub fn in_chain(mut self, table: TableId, chain: ChainId) -> Diagnostic {
        self.table = Some(table);
        self.chain = Some(chain);
        self
    }

    /// Sets the table the finding is about.
    pub fn in_table(mut self, table: TableId) -> Diagnostic {
        self.table = Some(table);
        self
    }

    /// Sets the label shown under the span.
    pub fn with_label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = label.into();
        self
    }

    /// Sets the help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Renders the diagnostic the way a terminal shows it: `file:line:col`, the source snippet,
    /// the label under the span and the help. `color` picks the coloured theme.
    ///
    /// This indexes the lines of `source` first; to render many diagnostics of one file, index
    /// it once and call [`Diagnostic::render_indexed`].
    pub fn render(&self, file_name: &str, source: &str, color: bool) -> String {
        self.render_indexed(file_name, source, &LineIndex::new(source), color)
    }

    /// [`Diagnostic::render`] with the line index of `source` built by the caller: the snippet
    /// is found through the index and cut around the span, so rendering one diagnostic costs
    /// the size of its snippet, not of the file.
    pub fn render_indexed(
        &self,
        file_name: &str,
        source: &str,
        lines: &LineIndex,
        color: bool,
    ) -> String {
        let theme = if color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        let handler = GraphicalReportHandler::new_themed(theme)
            .with_width(100)
            .with_context_lines(CONTEXT_LINES);
        let (start, end) = shown_span(source, self.span.start as usize, self.span.end as usize);
        let (from, to) = snippet_window(source, lines, start, end);
        let report = Report {
            diagnostic: self,
            shown: (start, end),
            source: NamedText {
                name: file_name,
                text: source,
                lines,
                window_start: from,
                window: shown_bytes(&source.as_bytes()[from..to]),
            },
        };
        let mut out = String::new();
        // Writing into a String cannot fail; a miette error would only drop the snippet.
        if handler.render_report(&mut out, &report).is_err() {
            out = format!("{report}\n");
        }
        out
    }
}

/// The catalogue entry of a code: everything that does not change from one finding to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CodeInfo {
    /// Stable code, e.g. `RL103`.
    pub code: &'static str,
    /// Stable kebab-case name.
    pub name: &'static str,
    /// Default severity.
    pub severity: Severity,
    /// One line: what the code reports.
    pub summary: &'static str,
    /// Markdown docs with the headings *What it flags*, *Why it matters*, *Example*, *Instead*.
    pub docs: &'static str,
}

/// A diagnostic bound to its source, so that miette can render it.
struct Report<'a> {
    diagnostic: &'a Diagnostic,
    /// The part of the span the label underlines: [`shown_span`].
    shown: (usize, usize),
    source: NamedText<'a>,
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diagnostic, f)
    }
}

/// The headline: `error[RL401 bare-drop]: DROP in KUBE-FIREWALL matches every packet`, so the
/// severity reads as a word even without colour.
impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.diagnostic;
        write!(
            f,
            "{}[{} {}]: {}",
            d.severity,
            d.code,
            d.name,
            escape_control(&d.message)
        )
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diagnostic.severity {
            Severity::Info => miette::Severity::Advice,
            Severity::Warning => miette::Severity::Warning,
            Severity::Error => miette::Severity::Error,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.diagnostic
            .help
            .as_deref()
            .map(|h| Box::new(escape_control(h)) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let (start, end) = self.shown;
        let label = (!self.diagnostic.label.is_empty())
            .then(|| escape_control(&self.diagnostic.label).into_owned());
        let source_span = SourceSpan::new(start.into(), end - start);
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            label,
            source_span,
        ))))
    }
}

/// Source text with a file name and its line index, borrowed: miette's own `NamedSource` wants
/// owned `'static` text, and miette's reading of a `&str` counts lines from the first byte for
/// every snippet (quadratic over many findings). The bytes shown come from `window`, the
/// diagnostic's snippet with control characters made visible.
struct NamedText<'a> {
    name: &'a str,
    text: &'a str,
    lines: &'a LineIndex,
    /// Where `window` starts in `text`.
    window_start: usize,
    /// `text[window_start..]` as far as any snippet of this diagnostic reaches, escaped by
    /// [`shown_bytes`] (same length, so spans keep their offsets).
    window: Vec<u8>,
}

/// Context lines around a span; the window below is computed for this many.
const CONTEXT_LINES: usize = 1;

/// The most bytes of a line shown on each side of a span: a snippet of a 1 GB line stays small.
/// The trace report cuts the input's text it quotes at the same length.
pub const SNIPPET_REACH: usize = 1000;

/// The longest span underlined whole; a longer one (a whole file that is not a dump, a 1 GB line)
/// is underlined over its first line, at most [`SNIPPET_REACH`] bytes of it, so the snippet and
/// its underline stay small whatever the span. JSON and the header keep the whole span.
const MAX_SHOWN_SPAN: usize = 4 * SNIPPET_REACH;

/// The part of `start..end` a snippet underlines: all of it up to [`MAX_SHOWN_SPAN`] bytes, else
/// its start up to the end of its first line or [`SNIPPET_REACH`] bytes, on a character boundary.
fn shown_span(text: &str, start: usize, end: usize) -> (usize, usize) {
    let start = start.min(text.len());
    let end = end.min(text.len()).max(start);
    if end - start <= MAX_SHOWN_SPAN {
        return (start, end);
    }
    let reach = (start + SNIPPET_REACH).min(end);
    let mut to = memchr::memchr(b'\n', &text.as_bytes()[start..reach]).map_or(reach, |i| start + i);
    if to == start {
        to = start + 1;
    }
    while !text.is_char_boundary(to) {
        to += 1;
    }
    (start, to)
}

/// The bytes of `text` a snippet of `start..end` shows: its lines and [`CONTEXT_LINES`] around,
/// each side cut at [`SNIPPET_REACH`] bytes from the span (a huge line, or a huge context line,
/// is shown in part), on character boundaries.
fn snippet_window(text: &str, lines: &LineIndex, start: usize, end: usize) -> (usize, usize) {
    let start = start.min(text.len());
    let end = end.min(text.len()).max(start);
    let line = lines.line(start as u32);
    let last_line = lines.line(end as u32);
    let line_count = lines.line(text.len() as u32);
    let first = line.saturating_sub(CONTEXT_LINES as u32).max(1);
    let after = (last_line as usize + CONTEXT_LINES).min(line_count as usize) as u32;
    let next_line_start = |l: u32| {
        if l < line_count {
            lines.line_start(l + 1) as usize
        } else {
            text.len()
        }
    };
    let mut from = (lines.line_start(first) as usize).max(start.saturating_sub(SNIPPET_REACH));
    let mut to = next_line_start(after).min(end.saturating_add(SNIPPET_REACH));
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    while !text.is_char_boundary(to) {
        to += 1;
    }
    (from, to)
}

/// `bytes` as a terminal may show them: each control byte (other than tab, newline and carriage
/// return) becomes `?`, one byte for one, so that a `--comment` holding an escape sequence cannot
/// drive the terminal and every offset into the snippet still holds.
fn shown_bytes(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| {
            if (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f {
                b'?'
            } else {
                b
            }
        })
        .collect()
}

/// `text` with its control characters written as escapes (`\x1b`, `\u{9b}`), for messages,
/// labels and help that quote the input. Newlines and tabs are kept.
pub fn escape_control(text: &str) -> std::borrow::Cow<'_, str> {
    let shown = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if text.chars().all(shown) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shown(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}

impl SourceCode for NamedText<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        let text = self.text;
        let start = span.offset().min(text.len());
        let end = (span.offset() + span.len()).min(text.len()).max(start);
        let (window_from, window_to) = (self.window_start, self.window_start + self.window.len());
        // The snippet is the window, or (without context: the header) the span within it.
        let (from, to) = if context_lines_before == 0 && context_lines_after == 0 {
            (
                start.clamp(window_from, window_to),
                end.clamp(window_from, window_to),
            )
        } else {
            (window_from, window_to)
        };
        let data = &self.window[from - window_from..to - window_from];
        let data_line = self.lines.line(from as u32);
        let line_start = self.lines.line_start(data_line) as usize;
        // Without context miette asks for the header's `file:line:column`: the span's own.
        let column_of = if context_lines_before == 0 && context_lines_after == 0 {
            start
        } else {
            from
        };
        let column = text
            .get(line_start..column_of)
            .map_or(0, |s| s.chars().count());
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            data,
            SourceSpan::new(from.into(), to - from),
            data_line as usize - 1,
            column,
            data.iter().filter(|&&b| b == b'\n').count() + 1,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: usize, len: usize) -> Diagnostic {
        Diagnostic::new(
            &crate::codes::UNEXPECTED_WORD,
            Span::new(start, start + len),
            "a word",
        )
        .with_label("this word")
    }

    #[test]
    fn a_snippet_of_a_huge_line_is_cut_around_the_span() {
        let text = format!("*filter\n-A INPUT {} -j DROP\n", "x".repeat(1 << 20));
        let start = text.find("-j DROP").expect("span");
        let out = at(start, 7).render("big.txt", &text, false);
        assert!(
            out.contains("-j DROP") && out.contains("big.txt:2:"),
            "{out}"
        );
        assert!(out.len() < 8 * SNIPPET_REACH, "{} bytes", out.len());
    }

    #[test]
    fn a_huge_span_is_underlined_in_part() {
        for text in [
            format!("{}\n", "x".repeat(1 << 20)),
            "x y\n".repeat(1 << 18),
            format!("é{}", "é".repeat(1 << 19)),
        ] {
            let whole = at(0, text.len()).render("big.txt", &text, false);
            assert!(
                whole.contains("big.txt:1:1") && whole.contains("this word"),
                "{whole}"
            );
            assert!(whole.len() < 16 * SNIPPET_REACH, "{} bytes", whole.len());
        }
    }

    #[test]
    fn a_huge_context_line_is_cut_too() {
        let text = format!(
            "*filter\n-A INPUT {} -j DROP\n-A INPUT -x 1\n",
            "x".repeat(1 << 20)
        );
        let start = text.find("-x").expect("span");
        let out = at(start, 2).render("big.txt", &text, false);
        assert!(out.contains("big.txt:3:10"), "{out}");
        assert!(out.len() < 8 * SNIPPET_REACH, "{} bytes", out.len());
    }

    #[test]
    fn control_characters_of_the_input_never_reach_the_terminal() {
        let text =
            "*filter\n-A INPUT -m comment --comment \"\x1b]0;owned\x07\x1b[31mred\" -x 1\nCOMMIT\n";
        let start = text.find("-x").expect("span");
        let finding = Diagnostic::new(
            &crate::codes::UNEXPECTED_WORD,
            Span::new(start, start + 2),
            "after \"\x1b[31mred\u{9b}\"",
        )
        .with_label("a \x1b label")
        .with_help("a \x07 help");
        let plain = finding.render("t.txt", text, false);
        assert!(
            !plain.chars().any(|c| c.is_control() && c != '\n'),
            "{plain:?}"
        );
        assert!(plain.contains("after \"\\x1b[31mred\\u{9b}\""), "{plain}");
        assert!(plain.contains("?]0;owned??[31mred"), "{plain}");
        assert!(
            plain.contains("a \\x1b label") && plain.contains("a \\x07 help"),
            "{plain}"
        );
        // In colour, the only escape sequences are the theme's (SGR `ESC [ ... m`).
        let coloured = finding.render("t.txt", text, true);
        assert!(
            !coloured.contains('\x07') && !coloured.contains("\x1b]"),
            "{coloured:?}"
        );
        assert!(!coloured.contains("\x1b[31mred"), "{coloured:?}");
    }

    #[test]
    fn the_header_and_context_lines_are_those_of_the_span() {
        let text = "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j ACCEPT\n-A INPUT -x 1\nCOMMIT\n";
        let start = text.find("-x").expect("span");
        let lines = LineIndex::new(text);
        let out = at(start, 2).render_indexed("t.txt", text, &lines, false);
        assert!(out.contains("[t.txt:4:10]"), "{out}");
        assert!(
            out.contains(" 3 │ -A INPUT -j ACCEPT") && out.contains(" 5 │ COMMIT"),
            "{out}"
        );
    }
}
