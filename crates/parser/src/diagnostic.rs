//! Diagnostics: what the parser (and later the linter) says about a dump, with a span, and the
//! miette rendering of it.

use crate::model::{ChainId, TableId};
use crate::span::Span;
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
    pub fn render(&self, file_name: &str, source: &str, color: bool) -> String {
        let theme = if color {
            GraphicalTheme::unicode()
        } else {
            GraphicalTheme::unicode_nocolor()
        };
        let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
        let report = Report {
            diagnostic: self,
            source: NamedText {
                name: file_name,
                text: source,
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
        write!(f, "{}[{} {}]: {}", d.severity, d.code, d.name, d.message)
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
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.diagnostic.span;
        let label = (!self.diagnostic.label.is_empty()).then(|| self.diagnostic.label.clone());
        let source_span = SourceSpan::new((span.start as usize).into(), span.len());
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            label,
            source_span,
        ))))
    }
}

/// Source text with a file name, borrowed: miette's own `NamedSource` wants owned `'static` text.
struct NamedText<'a> {
    name: &'a str,
    text: &'a str,
}

impl SourceCode for NamedText<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        let contents = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            contents.data(),
            *contents.span(),
            contents.line(),
            contents.column(),
            contents.line_count(),
        )))
    }
}
