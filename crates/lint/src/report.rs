//! Output shapes of `rulelint check`: the stable JSON document, GitHub annotation lines and the
//! per-severity summary. SARIF is in [`crate::sarif`]. All of it is plain data: the caller writes it.

use rulelint_parser::json::{DiagnosticDoc, FORMAT_VERSION};
use rulelint_parser::{Diagnostic, LineCol, LineIndex, Ruleset, Severity};
use serde::Serialize;
use std::fmt::Write as _;

/// One checked input: what a report is made from.
pub struct CheckedFile<'r, 'a> {
    /// The path as the user gave it (`-` for stdin).
    pub path: &'r str,
    /// The parsed dump; its source is the text the spans point into.
    pub ruleset: &'r Ruleset<'a>,
    /// Findings, sorted (see [`crate::check`]).
    pub diagnostics: &'r [Diagnostic],
}

/// A finding with what every report format needs from its file, owned: the file's text and
/// parse can be dropped once its findings are located (the CLI checks many files that way).
#[derive(Clone, Debug)]
pub struct LocatedFinding {
    /// The finding.
    pub diagnostic: Diagnostic,
    /// Where its span starts.
    pub start: LineCol,
    /// Where its span ends.
    pub end: LineCol,
    /// The name of the table it is about, where one applies.
    pub table: Option<String>,
    /// The name of the chain it is about, where one applies.
    pub chain: Option<String>,
}

/// One checked input's findings, located ([`LocatedFinding`]).
#[derive(Clone, Debug)]
pub struct LocatedFile {
    /// The path as the user gave it (`-` for stdin).
    pub path: String,
    /// Findings in output order.
    pub findings: Vec<LocatedFinding>,
}

impl LocatedFile {
    /// Locates `diagnostics` (findings about `ruleset`, in output order) in its source.
    pub fn new(path: String, ruleset: &Ruleset<'_>, diagnostics: Vec<Diagnostic>) -> LocatedFile {
        if diagnostics.is_empty() {
            // Nothing to locate: a clean dump does not pay for a line index of its text.
            return LocatedFile {
                path,
                findings: Vec::new(),
            };
        }
        let index = LineIndex::new(ruleset.source());
        LocatedFile::with_index(path, ruleset, diagnostics, &index)
    }

    /// [`LocatedFile::new`] with `index`, the line index of `ruleset`'s source, already built.
    pub fn with_index(
        path: String,
        ruleset: &Ruleset<'_>,
        diagnostics: Vec<Diagnostic>,
        index: &LineIndex,
    ) -> LocatedFile {
        let source = ruleset.source();
        let findings = diagnostics
            .into_iter()
            .map(|d| LocatedFinding {
                start: index.line_col(source, d.span.start),
                end: index.line_col(source, d.span.end),
                // Ids of another parser's model (nftables findings) are not looked up here.
                table: d
                    .table
                    .filter(|t| t.index() < ruleset.tables.len())
                    .map(|t| ruleset.table(t).name().to_string()),
                chain: d
                    .chain
                    .filter(|c| c.index() < ruleset.chains.len())
                    .map(|c| ruleset.chain(c).name().to_string()),
                diagnostic: d,
            })
            .collect();
        LocatedFile { path, findings }
    }

    /// A [`CheckedFile`] located (its findings copied).
    pub fn of(file: &CheckedFile<'_, '_>) -> LocatedFile {
        LocatedFile::new(
            file.path.to_string(),
            file.ruleset,
            file.diagnostics.to_vec(),
        )
    }

    /// Counts of its findings per severity.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for f in &self.findings {
            s.add(f.diagnostic.severity);
        }
        s
    }

    /// The JSON form of its findings.
    fn doc(&self) -> CheckFileDoc<'_> {
        CheckFileDoc {
            path: &self.path,
            summary: self.summary(),
            diagnostics: self
                .findings
                .iter()
                .map(|f| {
                    let d = &f.diagnostic;
                    DiagnosticDoc {
                        code: d.code,
                        name: d.name,
                        severity: d.severity,
                        message: &d.message,
                        line: f.start.line,
                        column: f.start.column,
                        end_line: f.end.line,
                        end_column: f.end.column,
                        table: f.table.as_deref(),
                        chain: f.chain.as_deref(),
                        label: &d.label,
                        help: d.help.as_deref(),
                    }
                })
                .collect(),
        }
    }
}

/// Counts of findings per severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Number of errors.
    pub error: usize,
    /// Number of warnings.
    pub warning: usize,
    /// Number of infos.
    pub info: usize,
}

impl Summary {
    /// Counts the findings.
    pub fn of(diagnostics: &[Diagnostic]) -> Summary {
        let mut s = Summary::default();
        for d in diagnostics {
            s.add(d.severity);
        }
        s
    }

    fn add(&mut self, severity: Severity) {
        match severity {
            Severity::Error => self.error += 1,
            Severity::Warning => self.warning += 1,
            Severity::Info => self.info += 1,
        }
    }

    /// Adds another summary's counts.
    pub fn merge(&mut self, other: Summary) {
        self.error += other.error;
        self.warning += other.warning;
        self.info += other.info;
    }

    /// The highest severity counted, if any.
    pub fn highest(&self) -> Option<Severity> {
        if self.error > 0 {
            Some(Severity::Error)
        } else if self.warning > 0 {
            Some(Severity::Warning)
        } else if self.info > 0 {
            Some(Severity::Info)
        } else {
            None
        }
    }

    /// `2 errors, 1 warning, 0 infos`.
    pub fn to_text(&self) -> String {
        fn plural(n: usize, word: &str) -> String {
            format!("{n} {word}{}", if n == 1 { "" } else { "s" })
        }
        format!(
            "{}, {}, {}",
            plural(self.error, "error"),
            plural(self.warning, "warning"),
            plural(self.info, "info")
        )
    }
}

/// The JSON document of `rulelint check --format json` (format version 1).
#[derive(Debug, Serialize)]
pub struct CheckDocument<'r> {
    /// [`FORMAT_VERSION`]: bumped on any incompatible change.
    pub format_version: u32,
    /// `rulelint` and its version.
    pub tool: ToolDoc,
    /// One entry per input, in the order given.
    pub files: Vec<CheckFileDoc<'r>>,
    /// Counts over all files.
    pub summary: Summary,
    /// Inputs that could not be read, with why; present only when there are some (additive to
    /// format version 1).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
}

/// An input that could not be read: it has no findings, and the run fails (exit 2).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Unreadable {
    /// The path as given.
    pub path: String,
    /// Why it could not be read, one line.
    pub error: String,
}

/// The tool that wrote a report.
#[derive(Debug, Serialize)]
pub struct ToolDoc {
    /// `rulelint`.
    pub name: &'static str,
    /// The crate version.
    pub version: &'static str,
}

/// The tool's name and version.
pub const TOOL: ToolDoc = ToolDoc {
    name: "rulelint",
    version: env!("CARGO_PKG_VERSION"),
};

/// One file of a [`CheckDocument`].
#[derive(Debug, Serialize)]
pub struct CheckFileDoc<'r> {
    /// The path as given.
    pub path: &'r str,
    /// Counts for this file.
    pub summary: Summary,
    /// Findings in output order.
    pub diagnostics: Vec<DiagnosticDoc<'r>>,
}

impl<'r> CheckDocument<'r> {
    /// Builds the document.
    pub fn new(files: &[CheckedFile<'r, '_>]) -> CheckDocument<'r> {
        let mut summary = Summary::default();
        let files = files
            .iter()
            .map(|f| {
                let index = LineIndex::new(f.ruleset.source());
                let file_summary = Summary::of(f.diagnostics);
                summary.merge(file_summary);
                CheckFileDoc {
                    path: f.path,
                    summary: file_summary,
                    diagnostics: f
                        .diagnostics
                        .iter()
                        .map(|d| DiagnosticDoc::new(d, f.ruleset, &index))
                        .collect(),
                }
            })
            .collect();
        CheckDocument {
            format_version: FORMAT_VERSION,
            tool: TOOL,
            files,
            summary,
            unreadable: Vec::new(),
        }
    }

    /// The document of files already located; the same JSON as [`CheckDocument::new`] gives
    /// for the same findings.
    pub fn located(files: &'r [LocatedFile]) -> CheckDocument<'r> {
        let files: Vec<CheckFileDoc<'r>> = files.iter().map(LocatedFile::doc).collect();
        let mut summary = Summary::default();
        for f in &files {
            summary.merge(f.summary);
        }
        CheckDocument {
            format_version: FORMAT_VERSION,
            tool: TOOL,
            files,
            summary,
            unreadable: Vec::new(),
        }
    }

    /// Adds the inputs that could not be read.
    pub fn with_unreadable(mut self, unreadable: &[Unreadable]) -> CheckDocument<'r> {
        self.unreadable = unreadable.to_vec();
        self
    }
}

/// GitHub Actions workflow commands, one line per finding:
/// `::error file=node.txt,line=4,col=1,endLine=4,endColumn=25,title=RL401 bare-drop::message`.
pub fn github_annotations(file: &CheckedFile<'_, '_>) -> String {
    github_annotations_located(&LocatedFile::of(file))
}

/// [`github_annotations`] of a file already located.
pub fn github_annotations_located(file: &LocatedFile) -> String {
    let mut out = String::new();
    for f in &file.findings {
        let d = &f.diagnostic;
        let (start, end) = (f.start, f.end);
        let command = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let mut message = d.message.clone();
        if let Some(help) = &d.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        let _ = writeln!(
            out,
            "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}",
            escape_property(&file.path),
            start.line,
            start.column,
            end.line,
            end.column,
            escape_property(&format!("{} {}", d.code, d.name)),
            escape_data(&message)
        );
    }
    out
}

/// Escaping of a workflow command's message (GitHub's `escapeData`), after the control
/// characters a quoted input may hold (an escape sequence in a `--comment`) are written out:
/// the workflow log is a terminal too.
fn escape_data(s: &str) -> String {
    let s = s
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A");
    rulelint_parser::escape_control(&s).into_owned()
}

/// Escaping of a workflow command's property value (GitHub's `escapeProperty`).
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_text_and_highest() {
        let s = Summary {
            error: 1,
            warning: 2,
            info: 0,
        };
        assert_eq!(s.to_text(), "1 error, 2 warnings, 0 infos");
        assert_eq!(s.highest(), Some(Severity::Error));
        assert_eq!(Summary::default().highest(), None);
    }

    #[test]
    fn github_messages_write_control_characters_out() {
        assert_eq!(escape_data("a\x1b[31m%\n\x07"), "a\\x1b[31m%25%0A\\x07");
    }

    #[test]
    fn github_lines_escape_their_fields() {
        let text = "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n";
        let parsed = rulelint_parser::parse(text);
        let diagnostics = crate::check(&parsed, &crate::Config::default());
        let file = CheckedFile {
            path: "a,b:c.txt",
            ruleset: &parsed.ruleset,
            diagnostics: &diagnostics,
        };
        let out = github_annotations(&file);
        assert!(
            out.starts_with("::error file=a%2Cb%3Ac.txt,line=5,col=1,endLine=5,endColumn=25,title=RL401 bare-drop::"),
            "{out}"
        );
        assert!(out.contains("%0Ahelp: "), "{out}");
        assert_eq!(out.lines().count(), 1);
    }
}
