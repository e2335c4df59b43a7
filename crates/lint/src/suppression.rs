//! Suppressions a rule carries in its own comment, so they survive a re-dump (a dump cannot
//! hold `#` comments of ours): `-m comment --comment "rulelint:allow=RL401"` in iptables-save,
//! `comment "rulelint:allow=RL401"` in nftables, alone or inside a longer comment, several
//! codes comma-separated. A suppression that suppresses nothing is reported (`RL902`), as
//! ShellCheck and ruff do, so stale ones do not pile up.

use crate::config::{Config, Level};
use crate::registry::{Category, CodeEntry, find_code};
use rulelint_parser::{CodeInfo, Diagnostic, Severity, Span};
use std::collections::{BTreeMap, HashSet};

/// The marker that starts a suppression inside a comment.
pub const MARKER: &str = "rulelint:allow=";

/// `RL902`: a suppression with no finding to suppress.
pub const UNUSED_SUPPRESSION: CodeInfo = CodeInfo {
    code: "RL902",
    name: "unused-suppression",
    severity: Severity::Info,
    summary: "a `rulelint:allow=` comment suppresses no finding on its rule",
    docs: "## What it flags
A rule whose comment holds `rulelint:allow=CODE` where that rule has no finding of `CODE`:
the problem was fixed, the code is misspelt, or the code is not enabled by the configuration.

## Why it matters
A stale suppression hides the next real finding of that code on the rule, and readers of the
dump take it as a known problem that no longer exists.

## Example
```text
-A INPUT -p tcp --dport 22 -m comment --comment \"ssh rulelint:allow=RL401\" -j ACCEPT
```

## Instead
Remove the code from the comment (or the comment), or correct the code:
```text
-A INPUT -p tcp --dport 22 -m comment --comment \"ssh\" -j ACCEPT
```

## Exceptions
A suppression of a code the configuration turns off (`ignore`, `select`) is reported too,
with that reason: the comment travels with the rule to nodes checked with other settings.",
};

/// The registry entry of [`UNUSED_SUPPRESSION`].
pub fn entry() -> CodeEntry {
    CodeEntry {
        info: &UNUSED_SUPPRESSION,
        category: Category::Unused,
    }
}

/// One `rulelint:allow=` directive: the line it is on and its codes.
struct Directive {
    line_end: usize,
    /// Each code as written (uppercased), its span, and whether it suppressed a finding.
    codes: Vec<(String, Span, bool)>,
}

/// Finds the directives in `text`, keyed by the start of their line. Only a marker after the
/// word `comment` on its line counts: it must be inside a rule's comment.
fn directives(text: &str) -> BTreeMap<usize, Directive> {
    let mut found: BTreeMap<usize, Directive> = BTreeMap::new();
    let bytes = text.as_bytes();
    // The line of the previous marker, and where its first `comment` ends: each line is
    // searched once however many markers it holds, so a long line costs linear time.
    let mut line = 0..0;
    let mut comment_end = None;
    // A code named twice on one line is one suppression (and at most one RL902).
    let mut seen: HashSet<(usize, String)> = HashSet::new();
    // memchr's SIMD search: this reads the whole dump (about 5x faster than `match_indices`).
    for at in memchr::memmem::find_iter(bytes, MARKER) {
        if at >= line.end {
            let start = bytes[..at]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let end = bytes[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(text.len(), |i| at + i);
            line = start..end;
            comment_end = text[line.clone()]
                .find("comment")
                .map(|i| start + i + "comment".len());
        }
        if comment_end.is_none_or(|end| end > at) {
            continue;
        }
        let list_start = at + MARKER.len();
        let list_len = bytes[list_start..line.end]
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b',' || *b == b'-'))
            .unwrap_or(line.end - list_start);
        let directive = found.entry(line.start).or_insert(Directive {
            line_end: line.end,
            codes: Vec::new(),
        });
        let mut start = list_start;
        for code in text[list_start..list_start + list_len].split(',') {
            let upper = code.to_ascii_uppercase();
            if !code.is_empty() && seen.insert((line.start, upper.clone())) {
                directive
                    .codes
                    .push((upper, Span::new(start, start + code.len()), false));
            }
            start += code.len() + 1;
        }
    }
    found
}

/// Removes the findings that their rule's comment allows, and adds an `RL902` finding for each
/// code of a suppression that removed nothing (when `RL902` is enabled). The caller sorts.
pub fn apply(text: &str, diagnostics: &mut Vec<Diagnostic>, config: &Config) {
    let mut found = directives(text);
    if found.is_empty() {
        return;
    }
    diagnostics.retain(|d| {
        let at = d.span.start as usize;
        let Some((_, directive)) = found.range_mut(..=at).next_back() else {
            return true;
        };
        if at > directive.line_end {
            return true;
        }
        let mut suppressed = false;
        for (code, _, used) in &mut directive.codes {
            let names_it = *code == d.code || code.eq_ignore_ascii_case(d.name);
            if names_it {
                *used = true;
                suppressed = true;
            }
        }
        !suppressed
    });
    let Level::At(severity) = config.level(&entry()) else {
        return;
    };
    for directive in found.values() {
        for (code, span, used) in &directive.codes {
            if *used {
                continue;
            }
            let reason = match find_code(code) {
                None => format!("`{code}` is not a rulelint code"),
                Some(e) if config.level(&e) == Level::Off => {
                    format!("{} is not enabled by the configuration", e.info.code)
                }
                Some(e) => format!("this rule has no {} {} finding", e.info.code, e.info.name),
            };
            let mut d = Diagnostic::new(
                &UNUSED_SUPPRESSION,
                *span,
                format!("suppression of {code} is unused: {reason}"),
            )
            .with_label("suppressed here")
            .with_help(format!(
                "remove `{code}` from the rule's `{MARKER}` comment"
            ));
            d.severity = severity;
            diagnostics.push(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::check_source;

    fn codes(text: &str) -> Vec<&'static str> {
        check_source(text, &Config::default())
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect()
    }

    const DROP: &str =
        "*filter\n:INPUT ACCEPT [0:0]\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n";

    #[test]
    fn a_rules_comment_suppresses_its_codes_and_unused_ones_are_reported() {
        let plain = format!("{DROP}-A KUBE-FIREWALL -j DROP\nCOMMIT\n");
        assert!(codes(&plain).contains(&"RL401"));
        let allowed = format!(
            "{DROP}-A KUBE-FIREWALL -m comment --comment \"known, ticket 12 rulelint:allow=RL401,rl999\" -j DROP\nCOMMIT\n"
        );
        let found = check_source(&allowed, &Config::default()).diagnostics;
        assert!(!found.iter().any(|d| d.code == "RL401"), "{found:?}");
        let unused: Vec<_> = found.iter().filter(|d| d.code == "RL902").collect();
        assert_eq!(unused.len(), 1, "{found:?}");
        assert!(unused[0].message.contains("RL999"), "{}", unused[0].message);
        assert_eq!(&allowed[unused[0].span.range()], "rl999");
    }

    #[test]
    fn a_suppression_on_another_rule_or_outside_a_comment_does_nothing() {
        let other = format!(
            "{DROP}-A INPUT -m comment --comment \"rulelint:allow=RL401\" -j ACCEPT\n-A KUBE-FIREWALL -j DROP\nCOMMIT\n"
        );
        let found = codes(&other);
        assert!(
            found.contains(&"RL401") && found.contains(&"RL902"),
            "{found:?}"
        );
        let no_comment =
            format!("{DROP}-A KUBE-FIREWALL -j DROP\n# rulelint:allow=RL401\nCOMMIT\n");
        assert!(codes(&no_comment).contains(&"RL401"));
        let config = Config::from_toml("ignore = [\"RL902\"]").unwrap();
        let quiet = check_source(&other, &config).diagnostics;
        assert!(!quiet.iter().any(|d| d.code == "RL902"));
    }

    #[test]
    fn many_markers_on_one_long_line_take_linear_time() {
        // 200k markers on one line: a quadratic scan would not finish in a test's lifetime.
        let line = format!(
            "-A X -m comment --comment \"{}\" -j DROP\n",
            "rulelint:allow=RL401 ".repeat(200_000)
        );
        let found = directives(&line);
        assert_eq!(found.len(), 1);
        assert_eq!(found[&0].codes.len(), 1);
        let distinct = "-A X -m comment --comment \"rulelint:allow=RL401,rl401 rulelint:allow=RL302\" -j DROP\n";
        let found = directives(distinct);
        let codes: Vec<&str> = found[&0]
            .codes
            .iter()
            .map(|(code, _, _)| code.as_str())
            .collect();
        assert_eq!(codes, ["RL401", "RL302"]);
    }
}
