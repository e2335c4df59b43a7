//! The catalogue: every lint, and every code a user can name (parser codes included).

use crate::context::{Findings, LintContext};
use crate::ipvs::{self, IpvsLint};
use crate::lints;
use crate::nft::{self, NftLint};
use rulelint_parser::{CodeInfo, codes};
use serde::Serialize;

/// What kind of problem a code reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Category {
    /// The text is not (entirely) a valid dump: parser diagnostics, `RL1xx`.
    Syntax,
    /// The ruleset is wrong: it would not restore, or it mishandles traffic.
    Correctness,
    /// Probably a mistake or a leftover; worth a look.
    Suspicious,
    /// Dead weight: chains or rules that do nothing.
    Unused,
    /// The ruleset is slow to sync or to match packets.
    Performance,
}

impl Category {
    /// The lowercase name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Syntax => "syntax",
            Category::Correctness => "correctness",
            Category::Suspicious => "suspicious",
            Category::Unused => "unused",
            Category::Performance => "performance",
        }
    }
}

/// A lint: its catalogue entry and the function that runs it.
pub struct Lint {
    /// Code, name, default severity, summary and docs.
    pub info: CodeInfo,
    /// What kind of problem it reports.
    pub category: Category,
    /// Reads the context and pushes findings. Never mutates anything else.
    pub(crate) check: fn(&LintContext<'_, '_>, &mut Findings<'_>),
}

impl Lint {
    /// Runs the lint alone over `cx`, its findings (unsorted, at the lint's own severities)
    /// into `out`; [`crate::check`] runs every enabled lint and applies the configuration.
    pub fn run(
        &'static self,
        cx: &LintContext<'_, '_>,
        out: &mut Vec<rulelint_parser::Diagnostic>,
    ) {
        (self.check)(cx, &mut Findings::new(self, out));
    }
}

impl std::fmt::Debug for Lint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lint")
            .field("code", &self.info.code)
            .field("name", &self.info.name)
            .finish()
    }
}

/// Every lint, in code order.
pub static LINTS: &[&Lint] = &[
    &lints::undefined_jump_target::LINT,
    &lints::chain_loop::LINT,
    &lints::unreferenced_chain::LINT,
    &lints::unreachable_rule::LINT,
    &lints::duplicate_rule::LINT,
    &lints::shadowed_rule::LINT,
    &lints::bare_drop::LINT,
    &lints::missing_hook_jump::LINT,
    &lints::shadowed_hook_jump::LINT,
    &lints::orphan_service_chain::LINT,
    &lints::orphan_endpoint_chain::LINT,
    &lints::service_without_endpoints::LINT,
    &lints::probability_ladder::LINT,
    &lints::invalid_endpoint::LINT,
    &lints::cluster_ip_conflict::LINT,
    &lints::masquerade_mark_mismatch::LINT,
    &lints::mixed_proxy_mode::LINT,
    &lints::forward_drop_policy::LINT,
    &lints::weakened_rule::LINT,
    &lints::stale_reject::LINT,
    &lints::missing_hairpin::LINT,
    &lints::empty_kube_chain::LINT,
    &lints::mixed_backend::LINT,
    &lints::unsupported_revision::LINT,
    &lints::ruleset_scale::LINT,
];

/// Every nftables-mode lint (run on `nft list ruleset` sections), in code order.
pub static NFT_LINTS: &[&NftLint] = &[
    &nft::lints::dangling_verdict_target::LINT,
    &nft::lints::numgen_index_gap::LINT,
    &nft::lints::rejected_service_key::LINT,
    &nft::lints::masquerade_chain_altered::LINT,
    &nft::lints::unsynced_kube_proxy_table::LINT,
    &nft::lints::kube_proxy_in_both_backends::LINT,
    &nft::lints::stale_service_chain::LINT,
    &nft::lints::endpoint_address_mismatch::LINT,
    &nft::lints::missing_endpoint_hairpin::LINT,
    &nft::lints::foreign_drop_base_chain::LINT,
    &nft::lints::unserved_cluster_ip::LINT,
    &nft::lints::nft_ruleset_scale::LINT,
];

/// Every IPVS-mode lint (run on `ipvsadm`, `ipset` and `ip addr` output), in code order.
pub static IPVS_LINTS: &[&IpvsLint] = &[
    &ipvs::lints::virtual_server_without_real_servers::LINT,
    &ipvs::lints::virtual_server_without_ipset_entry::LINT,
    &ipvs::lints::ipset_entry_without_virtual_server::LINT,
    &ipvs::lints::stale_ipvs_address::LINT,
    &ipvs::lints::unbound_service_address::LINT,
    &ipvs::lints::missing_loopback_entry::LINT,
    &ipvs::lints::ipvs_iptables_rules_altered::LINT,
    &ipvs::lints::ipvs_checks_skipped::LINT,
    &ipvs::lints::ipvs_state_beside_iptables_mode::LINT,
];

/// A code a user can name in `--select`, `--ignore`, `explain` and the config file: a lint or a
/// parser diagnostic.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct CodeEntry {
    /// Code, name, default severity, summary and docs.
    #[serde(flatten)]
    pub info: &'static CodeInfo,
    /// What kind of problem it reports.
    pub category: Category,
}

/// Every code (iptables and nft parser diagnostics, lints of both modes, the tool's own), in
/// code order.
pub fn all_codes() -> impl Iterator<Item = CodeEntry> {
    let syntax = |info| CodeEntry {
        info,
        category: Category::Syntax,
    };
    let mut all: Vec<CodeEntry> = codes::ALL
        .iter()
        .map(syntax)
        .chain(rulelint_nft::codes::ALL.iter().map(syntax))
        .chain(rulelint_ipvs::codes::ALL.iter().map(syntax))
        .chain(LINTS.iter().map(|lint| CodeEntry {
            info: &lint.info,
            category: lint.category,
        }))
        .chain(NFT_LINTS.iter().map(|lint| CodeEntry {
            info: &lint.info,
            category: lint.category,
        }))
        .chain(IPVS_LINTS.iter().map(|lint| CodeEntry {
            info: &lint.info,
            category: lint.category,
        }))
        .chain(std::iter::once(crate::suppression::entry()))
        .collect();
    all.sort_by_key(|e| e.info.code);
    all.into_iter()
}

/// The entry for a code (`RL201`, any case) or a name (`undefined-jump-target`).
pub fn find_code(code_or_name: &str) -> Option<CodeEntry> {
    all_codes()
        .find(|e| e.info.code.eq_ignore_ascii_case(code_or_name) || e.info.name == code_or_name)
}

/// The documentation page of a code, in Markdown: what `rulelint explain` prints and what
/// `docs/lints/` holds.
pub fn docs_page(entry: &CodeEntry) -> String {
    format!(
        "# {} {}\n\nDefault severity: **{}**. Category: {}.\n\n{}.\n\n{}\n",
        entry.info.code,
        entry.info.name,
        entry.info.severity,
        entry.category.as_str(),
        capitalised(entry.info.summary),
        entry.info.docs.trim_end()
    )
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let mut codes = HashSet::new();
        let mut names = HashSet::new();
        for e in all_codes() {
            assert!(codes.insert(e.info.code), "code {} twice", e.info.code);
            assert!(names.insert(e.info.name), "name {} twice", e.info.name);
            assert!(
                e.info.code.len() == 5
                    && e.info.code.starts_with("RL")
                    && e.info.code[2..].bytes().all(|b| b.is_ascii_digit()),
                "{}",
                e.info.code
            );
            assert!(
                e.info
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                e.info.name
            );
            assert!(!e.info.name.starts_with("no-"), "{}", e.info.name);
        }
    }

    #[test]
    fn lints_are_in_code_order_and_documented() {
        for pair in LINTS.windows(2) {
            assert!(pair[0].info.code < pair[1].info.code);
        }
        for pair in NFT_LINTS.windows(2) {
            assert!(pair[0].info.code < pair[1].info.code);
        }
        for pair in IPVS_LINTS.windows(2) {
            assert!(pair[0].info.code < pair[1].info.code);
        }
        for info in LINTS
            .iter()
            .map(|l| &l.info)
            .chain(NFT_LINTS.iter().map(|l| &l.info))
            .chain(IPVS_LINTS.iter().map(|l| &l.info))
        {
            for heading in [
                "## What it flags",
                "## Why it matters",
                "## Example",
                "## Instead",
            ] {
                assert!(info.docs.contains(heading), "{} lacks {heading}", info.code);
            }
            let summary = info.summary;
            assert!(!summary.ends_with('.'), "{}", info.code);
            assert!(
                summary.starts_with(|c: char| c.is_lowercase()),
                "{}",
                info.code
            );
        }
    }

    #[test]
    fn lookup_by_code_or_name() {
        assert_eq!(
            find_code("rl201").unwrap().info.name,
            "undefined-jump-target"
        );
        assert_eq!(find_code("bare-drop").unwrap().info.code, "RL401");
        assert_eq!(
            find_code("missing-commit").unwrap().category,
            Category::Syntax
        );
        assert!(find_code("RL999").is_none());
    }
}
