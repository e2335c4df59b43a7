//! Running the lints: parser diagnostics and lint findings through one pipeline, with the
//! configuration applied and the output sorted.

use crate::config::{Config, Level};
use crate::context::{Findings, LintContext};
use crate::registry::{Category, CodeEntry, LINTS, find_code};
use rulelint_parser::{ChainGraph, CodeInfo, Diagnostic, Parsed, Ruleset, Severity};

const MISSING_COMMIT: &str = rulelint_parser::codes::MISSING_COMMIT.code;

/// Checks a parsed dump: its parser diagnostics and every enabled lint's findings, with the
/// configuration's severities and allowed chains applied, sorted by position then code.
pub fn check(parsed: &Parsed<'_>, config: &Config) -> Vec<Diagnostic> {
    let graph = ChainGraph::build(&parsed.ruleset);
    check_with_graph(parsed, &graph, config)
}

/// [`check`] with a graph the caller already built from `parsed.ruleset`.
pub fn check_with_graph(
    parsed: &Parsed<'_>,
    graph: &ChainGraph,
    config: &Config,
) -> Vec<Diagnostic> {
    let set = &parsed.ruleset;
    let mut out = Vec::with_capacity(parsed.diagnostics.len());
    out.extend(
        parsed
            .diagnostics
            .iter()
            .filter(|d| !allowed(config, set, d))
            .filter_map(|d| at_configured_level(config, d)),
    );
    let cx = LintContext::new(set, graph);
    let mut found = Vec::new();
    for lint in LINTS {
        let Some((severity, overridden)) = lint_level(config, &lint.info, lint.category) else {
            continue;
        };
        found.clear();
        (lint.check)(&cx, &mut Findings::new(lint, &mut found));
        for mut d in found.drain(..) {
            if allowed(config, set, &d) {
                continue;
            }
            // A lint may pick a severity per finding (ruleset-scale); a configured level wins.
            if overridden {
                d.severity = severity;
            }
            out.push(d);
        }
    }
    fold_cut_line(set, &mut out);
    sort(&mut out);
    out
}

/// A parser diagnostic at the severity `config` gives its code; `None` when the code is not
/// selected. Parser codes are always catalogued; an unknown one keeps its own severity.
pub(crate) fn at_configured_level(config: &Config, d: &Diagnostic) -> Option<Diagnostic> {
    let level = find_code(d.code).map_or(Level::At(d.severity), |e| config.level(&e));
    match level {
        Level::At(severity) => Some(Diagnostic {
            severity,
            ..d.clone()
        }),
        Level::Off => None,
    }
}

/// The severity a lint runs at under `config` (`None`: not selected), and whether the
/// configuration names its level, which then wins over a severity the lint picks per finding.
pub(crate) fn lint_level(
    config: &Config,
    info: &'static CodeInfo,
    category: Category,
) -> Option<(Severity, bool)> {
    let Level::At(severity) = config.level(&CodeEntry { info, category }) else {
        return None;
    };
    let overridden = config.lints.get(info.code).and_then(|s| s.level).is_some();
    Some((severity, overridden))
}

/// A paste cut off inside a table (its text ends before the table's COMMIT, `RL103`) may end
/// mid-word: `-j KUBE-SERVI`, `--comment "kubernetes`. What is on that last line is the cut,
/// not a finding of its own, so the findings on it are folded into the `RL103` finding. (Lints
/// that conclude from what is absent skip such a table: `LintContext::is_complete`.)
fn fold_cut_line(set: &Ruleset<'_>, out: &mut Vec<Diagnostic>) {
    let Some(table) = set
        .iter_tables()
        .filter(|t| !t.get().implicit)
        .max_by_key(|t| t.get().header.start)
        .filter(|t| t.get().commit.is_none())
    else {
        return;
    };
    // The end of the table's last line of content: its last rule or declaration.
    let mut last = table.get().header.end;
    for chain in table.chains() {
        let declared = chain.get().declaration.map_or(0, |d| d.end);
        let ruled = chain.rules().map(|r| r.get().span.end).max().unwrap_or(0);
        last = last.max(declared).max(ruled);
    }
    let last = last as usize;
    let text = set.source().as_bytes();
    let last = last.min(text.len());
    let start = text[..last]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1) as u32;
    let end = last as u32;
    out.retain(|d| d.code == MISSING_COMMIT || d.span.start < start || d.span.start > end);
    let header = table.get().header.start;
    for d in out
        .iter_mut()
        .filter(|d| d.code == MISSING_COMMIT && d.span.start == header)
    {
        let help = d.help.take().unwrap_or_default();
        d.help = Some(format!(
            "{help}; rulelint does not check the table's last line, which may be cut off, nor what the missing part would decide (jumps, endpoints, chains that look unused or empty)"
        ));
    }
}

/// Parses and checks a dump in one call.
///
/// ```
/// use rulelint_lint::{Config, check_text};
/// let dump = "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n\
///             -A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n";
/// let findings = check_text(dump, &Config::default());
/// assert_eq!(findings[0].code, "RL401");
/// assert_eq!(findings[0].name, "bare-drop");
/// ```
pub fn check_text(text: &str, config: &Config) -> Vec<Diagnostic> {
    check(&rulelint_parser::parse(text), config)
}

fn allowed(config: &Config, set: &Ruleset<'_>, d: &Diagnostic) -> bool {
    d.chain
        .is_some_and(|c| config.chain_allowed(d.code, set.chain(c).name()))
}

/// The output order: by position, then code.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (a.span.start, a.span.end, a.code).cmp(&(b.span.start, b.span.end, b.code))
    });
}
