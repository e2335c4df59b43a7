//! Baselines: the findings a fleet already has, recorded so that CI reports only new ones.
//!
//! A finding is keyed by its code, table, chain and the normalised text of the line it is on
//! (counters dropped, blanks collapsed), never by its line number: inserting or removing other
//! rules, or a re-dump with new counters, keeps every known finding known. The file is JSON,
//! `format_version` [`BASELINE_VERSION`]; see the README.

use crate::report::TOOL;
use rulelint_parser::{Diagnostic, Ruleset};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The version of the baseline file; bumped on any incompatible change.
pub const BASELINE_VERSION: u32 = 1;

/// One known finding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BaselineEntry {
    /// The code, e.g. `RL401`.
    pub code: String,
    /// The table the finding is about, empty when none applies (nftables findings, file-wide ones).
    #[serde(default)]
    pub table: String,
    /// The chain the finding is about, empty when none applies.
    #[serde(default)]
    pub chain: String,
    /// The line the finding starts on, counters removed and blanks collapsed.
    pub text: String,
}

/// A baseline file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baseline {
    /// [`BASELINE_VERSION`].
    pub format_version: u32,
    /// `rulelint VERSION`, for people reading the file.
    #[serde(default)]
    pub generated_by: String,
    /// The known findings, sorted, each once.
    pub findings: BTreeSet<BaselineEntry>,
}

impl Baseline {
    /// An empty baseline of the current version.
    pub fn new() -> Baseline {
        Baseline {
            format_version: BASELINE_VERSION,
            generated_by: format!("{} {}", TOOL.name, TOOL.version),
            findings: BTreeSet::new(),
        }
    }

    /// Records the findings of one checked file.
    pub fn record(&mut self, ruleset: &Ruleset<'_>, diagnostics: &[Diagnostic]) {
        self.findings
            .extend(diagnostics.iter().map(|d| entry(ruleset, d)));
    }

    /// Whether the finding is known.
    pub fn contains(&self, ruleset: &Ruleset<'_>, diagnostic: &Diagnostic) -> bool {
        self.findings.contains(&entry(ruleset, diagnostic))
    }

    /// Reads a baseline file's text.
    pub fn from_json(text: &str) -> Result<Baseline, String> {
        #[derive(Deserialize)]
        struct Version {
            format_version: u32,
        }
        let version: Version =
            serde_json::from_str(text).map_err(|e| format!("not a rulelint baseline: {e}"))?;
        if version.format_version != BASELINE_VERSION {
            return Err(format!(
                "baseline format version {} is not supported (this rulelint reads version {BASELINE_VERSION})",
                version.format_version
            ));
        }
        serde_json::from_str(text).map_err(|e| format!("not a rulelint baseline: {e}"))
    }
}

/// The key of a finding.
pub fn entry(ruleset: &Ruleset<'_>, d: &Diagnostic) -> BaselineEntry {
    // Ids of another parser's model (nftables findings) are not looked up in this ruleset.
    let table = d
        .table
        .filter(|t| t.index() < ruleset.tables.len())
        .map_or("", |t| ruleset.table(t).name());
    let chain = d
        .chain
        .filter(|c| c.index() < ruleset.chains.len())
        .map_or("", |c| ruleset.chain(c).name());
    BaselineEntry {
        code: d.code.to_string(),
        table: table.to_string(),
        chain: chain.to_string(),
        text: normalised_line(ruleset.source(), d.span.start as usize),
    }
}

/// The line holding byte `at`, without `[packets:bytes]` counters and with blanks collapsed.
fn normalised_line(source: &str, at: usize) -> String {
    let at = at.min(source.len());
    let bytes = source.as_bytes();
    let start = bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let end = bytes[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(source.len(), |i| at + i);
    // Spans are on character boundaries and `\n` is ASCII, so both ends are too.
    let line = source.get(start..end).unwrap_or("");
    let words: Vec<&str> = line.split_whitespace().filter(|w| !is_counter(w)).collect();
    words.join(" ")
}

/// `[0:0]`, `[12:3456]`: counters that change with every dump.
fn is_counter(word: &str) -> bool {
    word.strip_prefix('[')
        .and_then(|w| w.strip_suffix(']'))
        .and_then(|w| w.split_once(':'))
        .is_some_and(|(p, b)| {
            !p.is_empty()
                && !b.is_empty()
                && p.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    const NODE: &str = "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n";

    fn findings(text: &str) -> (rulelint_parser::Parsed<'_>, Vec<Diagnostic>) {
        let parsed = rulelint_parser::parse(text);
        let found = crate::check(&parsed, &Config::default());
        (parsed, found)
    }

    #[test]
    fn a_finding_moved_by_an_inserted_rule_stays_known_and_a_new_one_is_new() {
        let (parsed, found) = findings(NODE);
        assert!(found.iter().any(|d| d.code == "RL401"));
        let mut baseline = Baseline::new();
        baseline.record(&parsed.ruleset, &found);
        // Round trip through the file's text.
        let text = serde_json::to_string_pretty(&baseline).unwrap();
        let baseline = Baseline::from_json(&text).unwrap();

        // Other rules before it move the DROP down, with new counters and blanks; a duplicate
        // rule in another chain is new.
        let moved = "*filter\n:INPUT ACCEPT [5:300]\n:KUBE-FIREWALL - [0:0]\n:OTHER - [0:0]\n-A INPUT -p tcp --dport 22 -j ACCEPT\n-A INPUT -j KUBE-FIREWALL\n-A INPUT -j OTHER\n-A KUBE-FIREWALL   -j DROP\n-A OTHER -p tcp -j ACCEPT\n-A OTHER -p tcp -j ACCEPT\nCOMMIT\n";
        let (parsed, found) = findings(moved);
        let new: Vec<&Diagnostic> = found
            .iter()
            .filter(|d| !baseline.contains(&parsed.ruleset, d))
            .collect();
        let old_drop = found
            .iter()
            .find(|d| d.code == "RL401" && d.message.contains("KUBE-FIREWALL"))
            .expect("the old finding is still found");
        assert!(baseline.contains(&parsed.ruleset, old_drop));
        assert!(new.iter().any(|d| d.code == "RL302"), "{new:?}");
        assert!(
            !new.iter().any(|d| d.message.contains("KUBE-FIREWALL")),
            "{new:?}"
        );
    }

    #[test]
    fn counters_are_not_part_of_the_key_and_other_versions_are_refused() {
        assert_eq!(
            normalised_line("a\n[1:2] -A X  -j DROP\n", 3),
            "-A X -j DROP"
        );
        assert_eq!(normalised_line(":X - [0:0]", 0), ":X -");
        assert!(is_counter("[0:0]") && !is_counter("[0:]") && !is_counter("[a:1]"));
        assert!(Baseline::from_json(r#"{"format_version": 2, "findings": []}"#).is_err());
        assert!(Baseline::from_json("[]").is_err());
    }
}
