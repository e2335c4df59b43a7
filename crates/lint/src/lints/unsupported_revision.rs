//! RL502 unsupported-revision: rules iptables could not print.

use crate::context::{Findings, LintContext};
use crate::registry::{Category, Lint};
use rulelint_parser::{CodeInfo, Severity, TokenKind};

/// The declaration.
pub static LINT: Lint = Lint {
    info: CodeInfo {
        code: "RL502",
        name: "unsupported-revision",
        severity: Severity::Error,
        summary: "a rule printed with `[unsupported revision]`: this iptables cannot read what the kernel holds",
        docs: "## What it flags
A rule in which `iptables-save` printed `[unsupported revision]` in place of a match or target.

## Why it matters
The rule was written by a newer iptables (typically a container's: kube-proxy's, a CNI's) than
the one that dumped it. This dump does not show what the rule does, and if this older iptables
ever rewrites the rules (a restore, a save-and-restore by a firewall service) the rule loses
the part it cannot read: a DROP without its match (kubernetes#95409, #112477).

## Example
```text
-A KUBE-FIREWALL -m comment --comment \"kubernetes firewall for dropping marked packets\" -m mark --mark 0x8000/0x8000 [unsupported revision] -j DROP
```

## Instead
Dump with the iptables that wrote the rules (`kubectl exec` into kube-proxy and run
`iptables-save` there), and make the host and the containers use the same iptables version and
backend.

## References
- https://github.com/kubernetes/kubernetes/issues/95409",
    },
    category: Category::Correctness,
    check,
};

fn check(cx: &LintContext<'_, '_>, out: &mut Findings<'_>) {
    // A text without rules has no marker to report: an nftables-only file (22 MB of `nft -j`)
    // reaches here with an empty iptables ruleset over the whole text.
    if cx.ruleset().rules.is_empty() {
        return;
    }
    // The parser makes the marker's token of the word `[unsupported` only: a text without that
    // word has none, and one search of the text costs less than reading every rule's words.
    if !cx.has_unsupported_marker() {
        return;
    }
    let version = cx
        .ruleset()
        .generator()
        .map(|g| cx.ruleset().text(g.version))
        .filter(|v| !v.is_empty());
    let who = version.map_or("this iptables".to_string(), |v| format!("iptables v{v}"));
    for chain in cx.chains() {
        for rule in chain.rules() {
            let Some(token) = rule
                .tokens()
                .iter()
                .find(|t| t.kind() == TokenKind::Unsupported)
                .copied()
            else {
                continue;
            };
            out.push(
                out.diagnostic(token.span(), format!("{who} cannot print this rule of chain `{}`: the kernel holds a revision it does not know", chain.name()))
                    .with_label("the part of the rule this iptables cannot read")
                    .with_help("a newer iptables wrote this rule; dump with that one (e.g. inside the kube-proxy container) and align the iptables versions of host and containers before anything rewrites the rules (kubernetes#95409)")
                    .in_chain(chain.get().table, chain.id),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lints::testing::{assert_cases, filter};

    #[test]
    fn cases() {
        assert_cases(
            &LINT,
            &[&filter(
                "-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n",
            )],
            &[(
                &filter(
                    "-A FORWARD -m conntrack [unsupported revision] -j ACCEPT\n-A INPUT -m mark --mark 0x8000/0x8000 [unsupported revision] -j DROP\n",
                ),
                2,
            )],
        );
    }

    /// The search for the marker's word never skips a rule the parser marked: over every
    /// corpus dump and the marker written with other blanks, the lint finds one finding per
    /// marked rule of the tables in effect.
    #[test]
    fn the_text_search_skips_no_marked_rule() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let mut texts: Vec<String> = ["lints", "syntax/ok", "kube"]
            .iter()
            .flat_map(|dir| std::fs::read_dir(root.join(dir)).into_iter().flatten())
            .flat_map(|entry| {
                let path = entry.expect("entry").path();
                let files: Vec<_> = if path.is_dir() {
                    std::fs::read_dir(&path)
                        .expect("folder")
                        .map(|f| f.expect("entry").path())
                        .collect()
                } else {
                    vec![path]
                };
                files
            })
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .map(|p| std::fs::read_to_string(p).expect("dump"))
            .collect();
        assert!(texts.len() > 100, "{}", texts.len());
        texts.push(filter(
            "-A INPUT -m mark --mark 0x8000/0x8000 [unsupported\trevision]  -j DROP\n",
        ));
        let mut marked = 0;
        for text in &texts {
            let parsed = rulelint_parser::parse(text);
            let graph = rulelint_parser::ChainGraph::build(&parsed.ruleset);
            let cx = LintContext::new(&parsed.ruleset, &graph);
            let reference: usize = cx
                .chains()
                .map(|c| c.rules().filter(|r| r.has_unsupported_revision()).count())
                .sum();
            marked += reference;
            let mut found = Vec::new();
            LINT.run(&cx, &mut found);
            assert_eq!(found.len(), reference, "{text}");
        }
        assert!(marked >= 2, "{marked}");
    }
}
